package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// restored is what a snapshot restore gives the session's sandbox.
type restored struct {
	snap images.Snapshot
	// rootFS is the image's root, extracted ("" when the base image has no
	// toolchain: the sandbox then binds the host's, read-only).
	rootFS string
	// mounts are the writable copies of the cache layers outside
	// /workspace, bound at the paths the snapshot was built at.
	mounts []sandbox.Mount
	// env is the base image's Env (only with rootFS): the repo's env
	// wins over it.
	env []string
	// imageRoot is rootFS's evidence (only with rootFS).
	imageRoot *contract.ImageRoot
	// workspaceCaches are the cache layers inside /workspace, extracted
	// (read-only, in the layer cache): verify's workspace is filled from
	// them too (verifyws.go).
	workspaceCaches []workspaceCacheLayer
	// setupRan says setup ran commands; beforeSetup are then the stamps
	// of every entry under workspaceCaches just before (setupoutputs.go).
	setupRan    bool
	beforeSetup map[string]fileStamp
}

// workspaceCacheLayer is a cache layer inside /workspace, extracted.
type workspaceCacheLayer struct {
	rel      string // workspace-relative, slash separated: node_modules
	src      string // the cache's directory in the extracted layer
	layerDir string // the extracted layer src lies in
}

// restore fills the workspace from the pinned snapshot (s.spec.Snapshot):
// the image is pulled by digest, each layer is extracted once into the
// host's layer cache (keyed by digest, shared by sessions), the workspace
// layer is copied into the session's own workspace, and each cache layer
// gets a writable copy at the path it was built at. The caller catches
// the workspace up to the pinned commit.
func (s *session) restore(ctx context.Context) (*restored, error) {
	sn := s.spec.Snapshot
	cache, err := openLayerCache(s.cfg.layerCache())
	if err != nil {
		return nil, err
	}
	store, err := images.OpenStore(sn.Store)
	if err != nil {
		return nil, err
	}
	if rs, ok := store.(*images.RegistryStore); ok {
		// The config (labels, Env) is read every session: once per host.
		rs.CacheConfigsIn(cache.configs)
	}
	digest, err := v1.NewHash(sn.Digest)
	if err != nil {
		return nil, fmt.Errorf("snapshot digest: %w", err)
	}
	img, err := store.Image(ctx, s.spec.Repo.Owner+"/"+s.spec.Repo.Name, digest)
	if err != nil {
		return nil, fmt.Errorf("pulling the snapshot: %w", err)
	}
	snap, err := images.Describe(img)
	if err != nil {
		return nil, err
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading the snapshot's manifest: %w", err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != len(manifest.Layers) {
		return nil, fmt.Errorf("reading the snapshot's layers: %v", err)
	}
	out := &restored{snap: snap}
	var base []v1.Layer
	var wsLayerDir string // the extracted workspace layer, once seen
	drifts := 0
	// The caches inside the workspace (node_modules), extracted, by their
	// workspace-relative paths: copied in once the workspace is in place.
	// Their layers come before the workspace's, and a root supervisor
	// mounts the workspace layer as an overlay at the workspace, which
	// would hide what was copied there before.
	var wsCaches []struct {
		path, src, rel, layerDir string
		inView                   bool // stacked in the workspace's overlay
	}
	for i, desc := range manifest.Layers {
		if desc.Annotations[images.AnnotationLayer] == images.LayerKindWorkspaceDrift {
			// What changed since the layers below: applied onto the
			// session's workspace (never extracted into the shared cache).
			if wsLayerDir == "" {
				return nil, fmt.Errorf("layer %s: a workspace drift before the workspace layer", desc.Digest)
			}
			if _, err := images.ApplyDrift(ctx, layers[i], s.ws.work, images.WorkspacePath); err != nil {
				return nil, fmt.Errorf("restoring the workspace: %w", err)
			}
			drifts++
			continue
		}
		if desc.Annotations[images.AnnotationLayer] == "" {
			base = append(base, layers[i]) // flattened below, once per host
			continue
		}
		dir, err := images.ExtractLayer(ctx, layers[i], cache.private)
		if err != nil {
			return nil, fmt.Errorf("extracting layer %s: %w", desc.Digest, err)
		}
		switch desc.Annotations[images.AnnotationLayer] {
		case images.LayerKindWorkspace:
			// Nothing the image holds may lead out of the layer: every
			// component down to what is used must be a real directory.
			if err := realDirsWithin(dir, "workspace/.git/objects", "/"); err != nil {
				return nil, fmt.Errorf("the snapshot's workspace layer has %w", err)
			}
			// The caches inside the workspace whose layers hold nothing
			// else there join the workspace's view as lower layers above
			// the workspace layer's (as their copies would overwrite it),
			// instead of being copied: a directory of thousands of files
			// costs seconds to copy. Stacked, not mounted at their paths,
			// so a setup or an agent may still remove the directory.
			var above []string
			for _, c := range wsCaches {
				if onlyCacheUnder(c.layerDir, c.rel) {
					if err := ownTreeOnce(c.src, c.layerDir, int(s.cfg.SandboxUID), int(s.cfg.SandboxGID)); err != nil {
						return nil, fmt.Errorf("restoring cache %s: %w", c.path, err)
					}
					// The directories above it show in the view too.
					for d := path.Dir(c.rel); d != "."; d = path.Dir(d) {
						if err := os.Lchown(filepath.Join(c.layerDir, "workspace", filepath.FromSlash(d)), int(s.cfg.SandboxUID), int(s.cfg.SandboxGID)); err != nil {
							return nil, fmt.Errorf("restoring cache %s: %w", c.path, err)
						}
					}
					above = append([]string{filepath.Join(c.layerDir, "workspace")}, above...)
				}
			}
			stacked, err := s.layerView(filepath.Join(dir, "workspace"), s.ws.work, filepath.Join(s.ws.dir, "overlay", "workspace"), dir, above...)
			if err != nil {
				return nil, fmt.Errorf("restoring the workspace: %w", err)
			}
			for i := range wsCaches {
				wsCaches[i].inView = stacked && onlyCacheUnder(wsCaches[i].layerDir, wsCaches[i].rel)
			}
			s.ws.snapshotGit = filepath.Join(dir, "workspace", ".git")
			wsLayerDir = dir
		case images.LayerKindCache:
			p := desc.Annotations[images.AnnotationCachePath]
			if contract.ValidateCachePath(p) != nil || !s.declaresCache(p) {
				return nil, fmt.Errorf("layer %s: cache path %q is not one of the repo's caches", desc.Digest, p)
			}
			if err := realDirsWithin(dir, strings.TrimPrefix(p, "/"), "/"); err != nil {
				return nil, fmt.Errorf("the snapshot's layer for cache %s has %w", p, err)
			}
			src := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
			if rel, ok := inWorkspace(p); ok {
				wsCaches = append(wsCaches, struct {
					path, src, rel, layerDir string
					inView                   bool
				}{p, src, rel, dir, false})
				continue
			}
			// A writable view (an overlay, or a copy): the sandbox writes
			// to its caches and the layer cache is shared.
			parent := filepath.Join(s.ws.dir, "caches")
			if err := traversableDir(parent); err != nil {
				return nil, err
			}
			host := filepath.Join(parent, fmt.Sprintf("%d", len(out.mounts)))
			if _, err := s.layerView(src, host, filepath.Join(s.ws.dir, "overlay", fmt.Sprintf("cache-%d", len(out.mounts))), dir); err != nil {
				return nil, fmt.Errorf("restoring cache %s: %w", p, err)
			}
			out.mounts = append(out.mounts, sandbox.Mount{Source: host, Target: p})
		default:
			return nil, fmt.Errorf("layer %s: unknown kind %q", desc.Digest, desc.Annotations[images.AnnotationLayer])
		}
	}
	for _, c := range wsCaches {
		// A cache inside the workspace is simply part of the session's
		// workspace copy; never through a symlink the image's workspace
		// holds there.
		if err := snapshotRealDirs(s.ws.work, c.rel); err != nil {
			return nil, fmt.Errorf("restoring cache %s: the snapshot's workspace has %w", c.path, err)
		}
		if !c.inView {
			if err := copyTree(c.src, filepath.Join(s.ws.work, filepath.FromSlash(c.rel))); err != nil {
				return nil, fmt.Errorf("restoring cache %s: %w", c.path, err)
			}
		}
		out.workspaceCaches = append(out.workspaceCaches, workspaceCacheLayer{rel: c.rel, src: c.src, layerDir: c.layerDir})
	}
	if drifts > 0 {
		if err := s.ws.keepDriftObjects(); err != nil {
			return nil, fmt.Errorf("restoring the workspace's objects: %w", err)
		}
	}
	root, err := baseRoot(ctx, cache, base)
	if err != nil {
		return nil, err
	}
	if root.dir != "" {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("reading the snapshot's config: %w", err)
		}
		out.rootFS, out.env, out.imageRoot = root.dir, cfg.Config.Env, &root.evidence
	}
	return out, nil
}

// onlyCacheUnder says whether the extracted cache layer layerDir holds,
// under its workspace directory, nothing but the directories down to the
// cache at rel and the cache itself (a real directory): then the layer's
// workspace directory can be stacked under the session's workspace as it
// is, bringing nothing but the cache.
func onlyCacheUnder(layerDir, rel string) bool {
	p := filepath.Join(layerDir, "workspace")
	for _, part := range strings.Split(rel, "/") {
		entries, err := os.ReadDir(p)
		if err != nil || len(entries) != 1 || entries[0].Name() != part || !entries[0].IsDir() {
			return false
		}
		p = filepath.Join(p, part)
	}
	return true
}

// imageBase is a base image's flattened root, as a sandbox uses it.
type imageBase struct {
	// dir is the root, or "" when the base brings no toolchain.
	dir      string
	evidence contract.ImageRoot
}

// baseRoot flattens the base image's layers (in order, once per host, by
// their digests) into the layer cache. Its root is the sandbox's when it
// brings a toolchain (/usr/bin); otherwise the host's toolchain is bound,
// read-only, as for a cold clone. Builds and restores follow the same
// rule, so both see the same toolchain. The image's config sets its Env;
// its WorkingDir is ignored (commands run in /workspace) and its User too
// (they run as the sandbox uid).
func baseRoot(ctx context.Context, cache layerCache, layers []v1.Layer) (imageBase, error) {
	if len(layers) == 0 {
		return imageBase{}, nil
	}
	flat, err := images.Flatten(ctx, layers, cache.base)
	if err != nil {
		return imageBase{}, fmt.Errorf("flattening the base image: %w", err)
	}
	dir := imageRoot(flat.Root)
	if dir == "" {
		return imageBase{}, nil
	}
	return imageBase{dir: dir, evidence: contract.ImageRoot{
		Layers: flat.Stats.Layers, SetIDBitsDropped: flat.Stats.SetIDBitsDropped, DeviceNodesSkipped: flat.Stats.DeviceNodesSkipped,
	}}, nil
}

// declaresCache says whether p is one of the spec's caches: a layer for any
// other path is not the repo's to restore.
func (s *session) declaresCache(p string) bool {
	for _, c := range s.spec.Snapshot.Caches {
		if c.Path == p {
			return true
		}
	}
	return false
}

// realDirsWithin checks that each existing component of rel (slash
// separated) under root is a real directory, never a symlink or a file:
// then nothing below root's path leads out of it. Missing components are
// fine. The error completes "... has ..." and names the path as shownAs
// joined with rel's components so far.
func realDirsWithin(root, rel, shownAs string) error {
	p, shown := root, shownAs
	for _, part := range strings.Split(rel, "/") {
		p, shown = filepath.Join(p, part), path.Join(shown, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("a %s at %s, where only a directory may be", snapshotFileKind(fi.Mode()), shown)
		}
	}
	return nil
}

// emptyCaches gives every declared cache the restore did not supply an
// empty directory at its path (under /workspace, a directory of the
// workspace; elsewhere a writable bind), so commands whose env points into
// a cache work on a cold clone too.
func (s *session) emptyCaches() error {
	if s.spec.Snapshot == nil {
		return nil
	}
	have := map[string]bool{}
	for _, m := range s.mounts {
		have[m.Target] = true
	}
	for i, c := range s.spec.Snapshot.Caches {
		if have[c.Path] {
			continue
		}
		if rel, ok := inWorkspace(c.Path); ok {
			// The checkout is the repository's: never follow a symlink
			// it holds where the cache goes.
			if err := snapshotRealDirs(s.ws.work, rel); err != nil {
				return fmt.Errorf("cache %s: the checkout has %w", c.Path, err)
			}
			if err := os.MkdirAll(filepath.Join(s.ws.work, filepath.FromSlash(rel)), 0o755); err != nil {
				return err
			}
			continue
		}
		// caches/ may only be traversed by others, as the attempt's
		// directory: each cache in it is the sandbox uid's alone.
		parent := filepath.Join(s.ws.dir, "caches")
		if err := traversableDir(parent); err != nil {
			return err
		}
		host := filepath.Join(parent, fmt.Sprintf("empty-%d", i))
		if err := os.Mkdir(host, 0o700); err != nil {
			return err
		}
		s.mounts = append(s.mounts, sandbox.Mount{Source: host, Target: c.Path})
	}
	return nil
}

// workspaceCaches are the caches inside /workspace, relative to it: setup
// fills them, so they are never part of the agent's change.
func (s *session) workspaceCaches() []string {
	if s.spec.Snapshot == nil {
		return nil
	}
	var out []string
	for _, c := range s.spec.Snapshot.Caches {
		if rel, ok := inWorkspace(c.Path); ok {
			out = append(out, rel)
		}
	}
	return out
}

// cacheKey keys a cache layer: its lockfiles at the checked-out commit
// (images.LockfileKey), salted with what else decides its content, the
// setup's argv and the repo's env. A changed setup command or GOFLAGS then
// rebuilds the cache like a changed lockfile does. (The base image is not
// in it: a build on a new base reuses nothing anyway.) The builder and the
// session compute it the same way.
func cacheKey(dir string, c contract.Cache, setup []contract.Command, env map[string]string) (string, error) {
	key, err := images.LockfileKey(dir, c.Path, c.Lockfiles)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", key)
	for _, cmd := range setup {
		fmt.Fprintf(h, "argv %d", len(cmd.Argv))
		for _, a := range cmd.Argv {
			fmt.Fprintf(h, " %d:%s", len(a), a)
		}
		h.Write([]byte{'\n'})
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(h, "env %d:%s=%d:%s\n", len(k), k, len(env[k]), env[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// snapshotSetupNeeded reports whether a lockfile at the pinned commit
// differs from what the snapshot's caches were built from: then the caches
// are stale and the repo's snapshot setup runs again in the session.
func (s *session) snapshotSetupNeeded(r *restored) (bool, error) {
	built := map[string]string{}
	for _, c := range r.snap.Caches {
		built[c.Path] = c.Key
	}
	for _, c := range s.spec.Snapshot.Caches {
		key, err := cacheKey(s.ws.work, c, s.spec.Snapshot.Setup, s.spec.Env)
		if err != nil {
			return false, err
		}
		if built[c.Path] != key {
			return true, nil
		}
	}
	return false, nil
}

// inWorkspace says whether a cache path lies inside /workspace, and where
// relative to it (node_modules): such a cache is a directory of the
// workspace, not a bind of its own.
func inWorkspace(p string) (rel string, ok bool) {
	return strings.CutPrefix(p, images.WorkspacePath+"/")
}

// imageRoot is dir, a flattened base image, when it brings a toolchain
// (/usr/bin) and so can be a sandbox's root; "" otherwise, for the host's
// toolchain, bound read-only. Builds and restores follow the same rule, so
// both see the same toolchain.
func imageRoot(dir string) string {
	if fi, err := os.Stat(filepath.Join(dir, "usr", "bin")); err == nil && fi.IsDir() {
		return dir
	}
	return ""
}

// layerCache holds extracted layers, by digest, in three parts: base
// images flattened into roots, which a sandbox binds as its root, so its
// uid must be able to reach them (base/, 0711); the rest, which hold
// private source and caches and are copied, never bound (private/, 0700);
// and images' config blobs, by digest (configs/, 0700).
type layerCache struct{ base, private, configs string }

// openLayerCache makes the layer cache at root, or checks the one there.
// It is trusted (what is in it becomes a sandbox's root and sessions'
// files), and its default place is under a shared temp dir, so each of its
// directories must be a real directory owned by this process's user and
// writable by no one else: one planted by another user is refused.
func openLayerCache(root string) (layerCache, error) {
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return layerCache{}, err
	}
	c := layerCache{base: filepath.Join(root, "base"), private: filepath.Join(root, "private"), configs: filepath.Join(root, "configs")}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{root, 0o711}, {c.base, 0o711}, {c.private, 0o700}, {c.configs, 0o700}} {
		if err := ownDir(d.path, d.mode); err != nil {
			return layerCache{}, fmt.Errorf("layer cache: %w", err)
		}
	}
	return c, nil
}

// ownDir makes dir with mode, or checks that an existing dir is a real
// directory of ours that no one else can write, and sets its mode.
func ownDir(dir string, mode os.FileMode) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, err = os.Lstat(dir) // made now, or by a concurrent attempt
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to another user", dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by others", dir)
	}
	return os.Chmod(dir, mode)
}

// layerCache is where extracted layers are kept, by digest.
func (c Config) layerCache() string {
	if c.LayerCache != "" {
		return c.LayerCache
	}
	root := c.WorkDir
	if root == "" {
		root = os.TempDir()
	}
	return filepath.Join(root, "inspect-layers")
}
