package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// opaqueWhiteout, as an entry's base name, hides every lower-layer entry of
// its directory (the OCI image spec's opaque whiteout).
const opaqueWhiteout = whiteoutPrefix + whiteoutPrefix + ".opq"

// setIDBits are the mode bits flattening drops (and counts).
const setIDBits = 0o6000

// flatStatsFile sits beside the flattened root (not in it), so a later
// session reports the same counts without reading a layer.
const flatStatsFile = "stats.json"

// Flattened is an image root made from several layers.
type Flattened struct {
	// Root is the merged root directory.
	Root string
	// Stats says what flattening left out.
	Stats FlattenStats
}

// FlattenStats counts what the layers held that the root does not, for
// the evidence.
type FlattenStats struct {
	// Layers is how many layers were applied.
	Layers int `json:"layers"`
	// SetIDBitsDropped counts entries that lost a setuid or setgid bit.
	SetIDBitsDropped int `json:"setid_bits_dropped"`
	// DeviceNodesSkipped counts character and block devices (and fifos)
	// not created.
	DeviceNodesSkipped int `json:"device_nodes_skipped"`
}

// FlattenKey names the root of these layers, in order, in a cache: from
// their digests (the manifest's), so finding a cached root reads no layer
// and no config.
func FlattenKey(layers []v1.Layer) (string, error) {
	h := sha256.New()
	for i, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return "", fmt.Errorf("images: layer %d's digest: %w", i, err)
		}
		fmt.Fprintf(h, "%s\n", d)
	}
	return "flat-sha256-" + hex.EncodeToString(h.Sum(nil)), nil
}

// Flatten applies layers in order into one root under cacheDir, once per
// list of layer digests (FlattenKey), and returns it; a root already there
// is returned without reading a layer.
//
// Layers apply as the OCI image spec says: an upper entry replaces a lower
// one (a file or link over a directory removes the directory), a
// ".wh.<name>" entry deletes <name> from the layers below, and a
// ".wh..wh..opq" entry empties its directory of everything the layers
// below put there. Setuid and setgid bits are dropped and device nodes and
// fifos skipped, both counted in Stats. An entry whose name climbs out of
// the root ("..", an absolute name) or that reaches outside through a
// symlink is an error naming the layer's digest and the entry: everything
// is written through os.Root, which refuses to leave the directory. Each
// layer's content is checked against its diff ID.
//
// The root is built in a temp directory beside the final one, synced and
// renamed into place with its stats, so a crash never leaves a half root
// under the final name; concurrent callers are safe (the first rename
// wins).
//
// /etc/passwd and /etc/group are created empty when the layers have none:
// a session binds its own over them (see the supervisor), and a bind
// needs a file to cover in a read-only root.
func Flatten(ctx context.Context, layers []v1.Layer, cacheDir string) (Flattened, error) {
	key, err := FlattenKey(layers)
	if err != nil {
		return Flattened{}, err
	}
	final := filepath.Join(cacheDir, key)
	if st, err := readFlatStats(final); err == nil {
		return Flattened{Root: filepath.Join(final, "root"), Stats: st}, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return Flattened{}, fmt.Errorf("images: layer cache dir: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".flatten-"+key[len("flat-sha256-"):][:12]+"-*")
	if err != nil {
		return Flattened{}, fmt.Errorf("images: layer cache dir: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			// Best effort: the failure is the error to report, and a
			// leftover ".flatten-*" is never taken for a finished root.
			_ = removeTree(tmp)
		}
	}()
	rootDir := filepath.Join(tmp, "root")
	if err := os.Mkdir(rootDir, 0o700); err != nil {
		return Flattened{}, err
	}
	st, err := flattenInto(ctx, layers, rootDir)
	if err != nil {
		return Flattened{}, err
	}
	// An image's "/" is world-readable; its parent only traversable, so
	// the sandbox's uid reaches the root and nothing else.
	if err := os.Chmod(rootDir, 0o755); err != nil {
		return Flattened{}, err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return Flattened{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, flatStatsFile), b, 0o600); err != nil {
		return Flattened{}, err
	}
	if err := os.Chmod(tmp, 0o711); err != nil {
		return Flattened{}, err
	}
	if err := syncFilesystem(tmp); err != nil {
		return Flattened{}, fmt.Errorf("images: sync flattened root: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if st, statErr := readFlatStats(final); statErr == nil {
			return Flattened{Root: filepath.Join(final, "root"), Stats: st}, nil // another caller finished first
		}
		return Flattened{}, fmt.Errorf("images: move flattened root into place: %w", err)
	}
	renamed = true
	// The rename made it visible; a failed sync leaves a valid root.
	_ = syncDir(cacheDir)
	return Flattened{Root: filepath.Join(final, "root"), Stats: st}, nil
}

// readFlatStats reads a finished root's stats: written before the rename,
// so their presence means the root is whole.
func readFlatStats(dir string) (FlattenStats, error) {
	b, err := os.ReadFile(filepath.Join(dir, flatStatsFile))
	if err != nil {
		return FlattenStats{}, err
	}
	var st FlattenStats
	if err := json.Unmarshal(b, &st); err != nil {
		return FlattenStats{}, fmt.Errorf("images: %s: %w", filepath.Join(dir, flatStatsFile), err)
	}
	return st, nil
}

// flattenInto applies each layer to dir, an empty directory, then sets the
// directories' modes (last, so read-only ones stay writable meanwhile).
func flattenInto(ctx context.Context, layers []v1.Layer, dir string) (FlattenStats, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return FlattenStats{}, err
	}
	// Only used to create entries; every write was already checked.
	defer closeQuietly(root)
	f := &flattener{root: root, dirModes: map[string]fs.FileMode{}}
	for _, l := range layers {
		digest, err := l.Digest()
		if err != nil {
			return FlattenStats{}, fmt.Errorf("images: layer digest: %w", err)
		}
		if err := f.apply(ctx, l); err != nil {
			return FlattenStats{}, fmt.Errorf("images: layer %s: %w", digest, err)
		}
		f.stats.Layers++
	}
	for _, name := range []string{"etc/passwd", "etc/group"} {
		if err := f.placeholder(name); err != nil {
			return FlattenStats{}, fmt.Errorf("images: %s: %w", name, err)
		}
	}
	names := slices.Collect(maps.Keys(f.dirModes))
	// Deepest first; a directory a later layer removed is simply gone.
	slices.SortFunc(names, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, n := range names {
		fi, err := root.Lstat(n)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
			continue
		}
		if err != nil {
			return FlattenStats{}, err
		}
		if err := root.Chmod(n, f.dirModes[n]); err != nil {
			return FlattenStats{}, err
		}
	}
	return f.stats, nil
}

// flattener is one Flatten's state across layers.
type flattener struct {
	root     *os.Root
	dirModes map[string]fs.FileMode
	stats    FlattenStats
	// layerPaths are the names the current layer made (and their
	// parents): an opaque whiteout keeps them.
	layerPaths map[string]bool
}

// apply unpacks one layer over what is there.
func (f *flattener) apply(ctx context.Context, l v1.Layer) error {
	tr, err := openLayerTar(l)
	if err != nil {
		return err
	}
	defer tr.Close()
	f.layerPaths = map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := f.entry(tr, hdr); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	if err := tr.verify(); err != nil {
		return err
	}
	return nil
}

// entry applies one tar entry.
func (f *flattener) entry(tr io.Reader, hdr *tar.Header) error {
	name, err := entryName(hdr.Name)
	if err != nil {
		return fmt.Errorf("climbs out of the root: %w", err)
	}
	if name == "." {
		return nil // the image's root itself
	}
	if hdr.Typeflag == tar.TypeLink {
		if _, err := entryName(hdr.Linkname); err != nil {
			return fmt.Errorf("hard link climbs out of the root: %w", err)
		}
	}
	dir, base := path.Split(name)
	dir = path.Clean(dir)
	switch {
	case base == opaqueWhiteout:
		return f.opaque(dir)
	case strings.HasPrefix(base, whiteoutPrefix):
		target := path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix))
		if err := f.root.RemoveAll(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("whiteout: %w", err)
		}
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		f.stats.DeviceNodesSkipped++
		return nil
	case tar.TypeXGlobalHeader:
		return nil // PAX defaults for later entries; the reader applies them
	}
	if hdr.Mode&setIDBits != 0 && (hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeDir) {
		f.stats.SetIDBitsDropped++
	}
	f.mark(name)
	if hdr.Typeflag != tar.TypeDir {
		// An upper file, link or symlink replaces whatever was there,
		// a lower directory included.
		if fi, err := f.root.Lstat(name); err == nil && fi.IsDir() {
			if err := f.root.RemoveAll(name); err != nil {
				return err
			}
		}
	}
	d, err := extractEntry(f.root, tr, hdr)
	if err != nil {
		return err
	}
	if d != nil {
		f.dirModes[d.name] = d.mode
	}
	return nil
}

// mark records name and its parents as the current layer's.
func (f *flattener) mark(name string) {
	for p := name; p != "." && p != "/"; p = path.Dir(p) {
		f.layerPaths[p] = true
	}
}

// opaque removes from dir every entry the current layer did not make,
// at any depth: a lower directory this layer only writes into (opq/sub
// for opq/sub/new) keeps this layer's entries and loses the lower ones.
func (f *flattener) opaque(dir string) error {
	if dir != "." {
		f.mark(dir)
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return f.prune(dir)
}

// prune is opaque's walk of one directory.
func (f *flattener) prune(dir string) error {
	d, err := f.root.Open(dir)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	closeQuietly(d) // read-only
	if err != nil {
		return err
	}
	for _, n := range names {
		p := path.Join(dir, n)
		if !f.layerPaths[p] {
			if err := f.root.RemoveAll(p); err != nil {
				return fmt.Errorf("opaque whiteout: %w", err)
			}
			continue
		}
		if fi, err := f.root.Lstat(p); err == nil && fi.IsDir() {
			if err := f.prune(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// placeholder makes an empty file at name when nothing is there.
func (f *flattener) placeholder(name string) error {
	if _, err := f.root.Lstat(name); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := f.root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	return f.root.WriteFile(name, nil, 0o644)
}
