package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/inspecthq/inspect/images"
)

// A refresh moves only what changed (issue 16, decision 0028): the new
// snapshot keeps the previous one's workspace layers and adds one drift
// layer holding what differs from them. Two things make the drift small:
//
//   - the working files are compared with the previous workspace, file by
//     file, so an unchanged file (vendored code) is not carried again;
//   - the workspace's .git keeps the previous snapshot's pack files as they
//     are and adds one pack of only the objects the new commit brought. A
//     fresh shallow clone's pack would be new bytes every time, the whole
//     repository, which is what a refresh used to push.
//
// A new base (one workspace layer, no drift) is made instead when there is
// no previous workspace to build on, when it already has MaxWorkspaceDrifts
// drift layers, or when the drift would be more than a quarter of the
// workspace layer: then a restore would apply more drift than it saves.

// driftRebaseFraction is the share of the workspace layer's size past which
// a drift is not worth stacking: a new base is made.
const driftRebaseFraction = 4

// workspaceLayers returns the new snapshot's workspace layers when a drift
// on the previous snapshot's is worth making, or nil for a new base (the
// checkout in sb.ws.work, as Assemble tars it). A drift that cannot be
// made for any reason is logged and falls back to a new base: a refresh
// never fails for it. It may rearrange sb.ws.work's .git/objects (the same
// objects, in the previous packs and one new one) and puts it back when it
// returns nil.
func (sb *snapshotBuilder) workspaceLayers(ctx context.Context, caches []images.Cache) []images.WorkspaceLayer {
	if sb.previous == nil {
		return nil
	}
	layers, err := sb.driftLayers(ctx, caches)
	if err != nil {
		if ctx.Err() == nil {
			sb.log.Info().Str("reason", sb.red.Redact(err.Error())).Msg("snapshot build: a new workspace base, not a drift")
		}
		return nil
	}
	return layers
}

// errRebase says a new base is due; its text says why.
type errRebase string

func (e errRebase) Error() string { return string(e) }

func (sb *snapshotBuilder) driftLayers(ctx context.Context, caches []images.Cache) ([]images.WorkspaceLayer, error) {
	prevWS, err := images.WorkspaceLayers(sb.previous)
	if err != nil {
		return nil, err
	}
	if len(prevWS)-1 >= images.MaxWorkspaceDrifts {
		return nil, errRebase(fmt.Sprintf("the previous snapshot has %d drift layers, the most", len(prevWS)-1))
	}
	prevSnap, err := images.Describe(sb.previous)
	if err != nil {
		return nil, err
	}
	prevTree, err := sb.previousWorkspace(ctx, prevWS)
	if err != nil {
		return nil, fmt.Errorf("restoring the previous workspace: %w", err)
	}
	restorePacks, err := sb.reusePacks(ctx, prevTree, prevSnap.SHA)
	if err != nil {
		return nil, fmt.Errorf("reusing the previous packs: %w", err)
	}
	layers, err := sb.stackDrift(prevWS, prevTree, caches)
	if err != nil {
		if rerr := restorePacks(); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		return nil, err
	}
	return layers, nil
}

func (sb *snapshotBuilder) stackDrift(prevWS []images.WorkspaceLayer, prevTree string, caches []images.Cache) ([]images.WorkspaceLayer, error) {
	drift, stats, err := images.DriftLayer(sb.ws.work, prevTree, images.WorkspacePath, images.WorkspaceExcludeFor(caches))
	if err != nil {
		return nil, err
	}
	if stats.Files == 0 && stats.Deleted == 0 {
		// Nothing moved (the same commit, new caches): the workspace is
		// the previous one's, layer for layer.
		return prevWS, nil
	}
	driftSize, err := drift.Size()
	if err != nil {
		return nil, err
	}
	baseSize, err := prevWS[0].Layer.Size()
	if err != nil {
		return nil, err
	}
	if driftSize*driftRebaseFraction > baseSize {
		return nil, errRebase(fmt.Sprintf("the drift would be %d bytes against a workspace layer of %d", driftSize, baseSize))
	}
	sb.log.Info().Int("files", stats.Files).Int64("bytes", stats.Bytes).Int("deleted", stats.Deleted).Int64("layer_bytes", driftSize).
		Int("drift_layers", len(prevWS)).Msg("snapshot build: workspace drift")
	return append(append([]images.WorkspaceLayer(nil), prevWS...), images.WorkspaceLayer{Layer: drift, Kind: images.LayerKindWorkspaceDrift}), nil
}

// previousWorkspace materialises the previous snapshot's /workspace in the
// build directory: its workspace layer (extracted once per host into the
// layer cache, as a restore does) copied, then each drift applied.
func (sb *snapshotBuilder) previousWorkspace(ctx context.Context, prevWS []images.WorkspaceLayer) (string, error) {
	cache, err := openLayerCache(sb.b.LayerCache)
	if err != nil {
		return "", err
	}
	dir, err := images.ExtractLayer(ctx, prevWS[0].Layer, cache.private)
	if err != nil {
		return "", err
	}
	if err := realDirsWithin(dir, "workspace/.git/objects/pack", "/"); err != nil {
		return "", fmt.Errorf("the workspace layer has %w", err)
	}
	tree := filepath.Join(sb.ws.dir, "previous")
	if err := copyTree(filepath.Join(dir, "workspace"), tree); err != nil {
		return "", err
	}
	for _, d := range prevWS[1:] {
		if _, err := images.ApplyDrift(ctx, d.Layer, tree, images.WorkspacePath); err != nil {
			return "", err
		}
	}
	if err := realDirsWithin(tree, ".git/objects/pack", "/workspace"); err != nil {
		return "", fmt.Errorf("the previous workspace has %w", err)
	}
	return tree, nil
}

// reusePacks gives the checkout's .git the previous workspace's objects
// as they are plus one new pack with the objects reachable from the pinned
// commit and not from prevSHA, in place of the fresh clone's objects. The
// returned func puts the fresh clone's objects back.
func (sb *snapshotBuilder) reusePacks(ctx context.Context, prevTree, prevSHA string) (restore func() error, err error) {
	objects := filepath.Join(sb.ws.work, ".git", "objects")
	fresh := filepath.Join(sb.ws.dir, "fresh-objects")
	staged := filepath.Join(sb.ws.dir, "drift-objects")
	// All of them, loose ones too (a small repository's clone has no
	// pack), byte for byte.
	if err := copyTree(filepath.Join(prevTree, ".git", "objects"), staged); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(staged, "pack"), 0o755); err != nil {
		return nil, err
	}
	if prevSHA != sb.b.SHA {
		if err := sb.packNewObjects(ctx, filepath.Join(prevTree, ".git", "objects"), prevSHA, filepath.Join(staged, "pack", "pack")); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(objects, fresh); err != nil {
		return nil, err
	}
	if err := os.Rename(staged, objects); err != nil {
		return nil, errors.Join(err, os.Rename(fresh, objects))
	}
	restore = func() error {
		if err := os.RemoveAll(objects); err != nil {
			return err
		}
		return os.Rename(fresh, objects)
	}
	// The checkout's commit must be whole in what it now holds.
	if _, err := sb.git.run(ctx, sb.ws.work, nil, nil, "fsck", "--connectivity-only", "--no-dangling", "--no-progress", sb.b.SHA); err != nil {
		return nil, errors.Join(fmt.Errorf("the reused packs do not hold the commit: %w", err), restore())
	}
	return restore, nil
}

// packNewObjects writes, from the private repository (which borrows the
// previous workspace's objects for the walk), one pack of the objects the
// pinned commit has and prevSHA's does not, at base-<hash>.pack/.idx.
func (sb *snapshotBuilder) packNewObjects(ctx context.Context, prevObjects, prevSHA, base string) error {
	alternates := filepath.Join(sb.ws.gitDir, "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(alternates), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(alternates, []byte(prevObjects+"\n"), 0o600); err != nil {
		return err
	}
	// The borrowing lasts only for this walk.
	defer func() {
		if err := os.Remove(alternates); err != nil && !errors.Is(err, fs.ErrNotExist) {
			sb.log.Warn().Str("error", err.Error()).Msg("snapshot build: removing the borrowed objects")
		}
	}()
	// The pinned commit is shallow (no parents here), so a walk from it
	// never meets prevSHA: only --objects-edge-aggressive marks all of
	// prevSHA's trees as had. Its "-<sha>" edge lines are not objects to
	// pack.
	list, err := sb.ws.private(ctx, sb.git, nil, nil, "rev-list", "--objects", "--objects-edge-aggressive", sb.b.SHA, "^"+prevSHA)
	if err != nil {
		return err
	}
	var objects strings.Builder
	for line := range strings.Lines(string(list)) {
		if !strings.HasPrefix(line, "-") {
			objects.WriteString(line)
		}
	}
	_, err = sb.ws.private(ctx, sb.git, nil, strings.NewReader(objects.String()), "pack-objects", "--quiet", base)
	return err
}

// keepDriftObjects copies, right after a restore applied drift layers and
// before anything of the session's runs, the pack files the drifts added to
// the workspace's .git (those the workspace layer's own .git lacks) into
// the supervisor's own directory, with the shallow boundary they set: the
// private repository borrows objects only from places the sandbox can never
// write.
func (w *workspace) keepDriftObjects() error {
	packs := filepath.Join(w.work, ".git", "objects", "pack")
	if err := realDirsWithin(w.work, ".git/objects/pack", "/workspace"); err != nil {
		return fmt.Errorf("the workspace has %w", err)
	}
	entries, err := os.ReadDir(packs)
	if err != nil {
		return err
	}
	w.driftObjects = filepath.Join(w.dir, "drift-objects")
	if err := os.MkdirAll(filepath.Join(w.driftObjects, "pack"), 0o700); err != nil {
		return err
	}
	into, err := os.OpenRoot(filepath.Join(w.driftObjects, "pack"))
	if err != nil {
		return err
	}
	defer func() { _ = into.Close() }() // every write was checked already
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(w.snapshotGit, "objects", "pack", e.Name())); err == nil {
			continue // the workspace layer's own, borrowed from the layer cache
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("the workspace's .git/objects/pack/%s is not a file", e.Name())
		}
		if err := copyFileIn(into, filepath.Join(packs, e.Name()), e.Name(), 0o400); err != nil {
			return err
		}
	}
	shallow := filepath.Join(w.work, ".git", "shallow")
	fi, err := os.Lstat(shallow)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		w.driftShallow = nil // a full history: no boundary
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("the workspace's .git/shallow is not a file")
	}
	w.driftShallow, err = os.ReadFile(shallow)
	return err
}
