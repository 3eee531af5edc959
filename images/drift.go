package images

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// A snapshot's workspace is one base layer (LayerKindWorkspace, the whole
// checkout) and then up to MaxWorkspaceDrifts drift layers
// (LayerKindWorkspaceDrift), each holding only what changed since the layers
// below it: changed and new files whole, and an OCI whiteout for each
// deleted path. A refresh after a small change pushes one small drift layer;
// every layer below it is reused by digest. Decision 0028.
const (
	// LayerKindWorkspaceDrift is AnnotationLayer's value on a drift layer.
	LayerKindWorkspaceDrift = "workspace-drift"
	// MaxWorkspaceDrifts is how many drift layers a snapshot may stack on
	// its workspace layer before a build makes a new base instead.
	MaxWorkspaceDrifts = 8
)

// DriftStats is what a drift layer holds.
type DriftStats struct {
	// Files are the regular files and symlinks written whole.
	Files int
	// Bytes are those files' sizes.
	Bytes int64
	// Deleted are the whiteouts (a deleted directory is one).
	Deleted int
}

// DriftLayer makes a deterministic gzip layer, placed at imagePath like
// DirLayer's, of what hostDir holds that prevDir (the same place as the
// layers below left it) does not: every regular file or symlink that is new
// or differs in content, mode or type, the directories above each (so an
// extractor knows their modes), and a whiteout (".wh.<name>") for each
// topmost path prevDir has and hostDir lacks. exclude applies to both trees,
// as in DirLayer. A file whose type changed gets a whiteout and its new
// entry, as the OCI image spec allows within one layer.
func DriftLayer(hostDir, prevDir, imagePath string, exclude func(rel string) bool) (v1.Layer, DriftStats, error) {
	var stats DriftStats
	if !path.IsAbs(imagePath) || path.Clean(imagePath) != imagePath || imagePath == "/" {
		return nil, stats, fmt.Errorf("images: drift layer path %q must be absolute, clean and not the root", imagePath)
	}
	file, err := unlinkedTemp()
	if err != nil {
		return nil, stats, err
	}
	layer, err := writeDriftLayer(file, hostDir, prevDir, imagePath, exclude, &stats)
	if err != nil {
		closeQuietly(file)
		return nil, stats, err
	}
	return layer, stats, nil
}

func writeDriftLayer(file *os.File, hostDir, prevDir, imagePath string, exclude func(string) bool, stats *DriftStats) (*fileLayer, error) {
	w, prefix, err := newLayerWriter(file, imagePath)
	if err != nil {
		return nil, err
	}
	tw := w.tw

	// Directories are written only when something below them is, just
	// before it: written records the ones already in the tar.
	written := map[string]bool{}
	var writeParents func(rel string) error
	writeParents = func(rel string) error {
		dir := path.Dir(rel)
		if dir == "." || written[dir] {
			return nil
		}
		if err := writeParents(dir); err != nil {
			return err
		}
		fi, err := os.Lstat(filepath.Join(hostDir, filepath.FromSlash(dir)))
		if err != nil {
			return err
		}
		written[dir] = true
		return tw.WriteHeader(dirHeader(prefix+dir+"/", int64(fi.Mode().Perm())))
	}
	// replace writes rel's parents, and a whiteout first when the entry
	// replaces one of another type.
	replace := func(rel string, typeChanged bool) error {
		if err := writeParents(rel); err != nil {
			return err
		}
		if !typeChanged {
			return nil
		}
		stats.Deleted++
		return writeWhiteout(tw, prefix, rel)
	}

	err = walkRel(hostDir, exclude, func(hostPath, rel string, d fs.DirEntry) error {
		info, err := d.Info()
		if err != nil {
			return err
		}
		prev, err := os.Lstat(filepath.Join(prevDir, filepath.FromSlash(rel)))
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR): // under what was a file
			prev = nil
		case err != nil:
			return err
		}
		typeChanged := prev != nil && prev.Mode().Type() != info.Mode().Type()
		if info.IsDir() {
			if prev != nil && !typeChanged && prev.Mode().Perm() == info.Mode().Perm() {
				return nil
			}
			if err := replace(rel, typeChanged); err != nil {
				return err
			}
			written[rel] = true
			return tw.WriteHeader(dirHeader(prefix+rel+"/", int64(info.Mode().Perm())))
		}
		if !info.Mode().IsRegular() && info.Mode()&fs.ModeSymlink == 0 {
			return nil // as DirLayer: sockets, devices and fifos are not carried
		}
		if prev != nil && !typeChanged {
			same, err := sameEntry(hostPath, info, filepath.Join(prevDir, filepath.FromSlash(rel)), prev)
			if err != nil || same {
				return err
			}
		}
		if err := replace(rel, typeChanged); err != nil {
			return err
		}
		stats.Files++
		stats.Bytes += info.Size()
		return writeEntry(tw, hostPath, prefix+rel, d)
	})
	if err != nil {
		return nil, fmt.Errorf("images: drift of %s: %w", hostDir, err)
	}

	// Whiteouts for what is gone: the topmost missing path of each deleted
	// subtree; its parent exists in hostDir, so it is in the tar or below.
	err = walkRel(prevDir, exclude, func(_, rel string, d fs.DirEntry) error {
		now, err := os.Lstat(filepath.Join(hostDir, filepath.FromSlash(rel)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := replace(rel, true); err != nil {
				return err
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case err != nil:
			return err
		}
		if d.IsDir() && !now.IsDir() {
			return filepath.SkipDir // replaced by a file: whited out above
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("images: drift of %s: %w", prevDir, err)
	}
	return w.finish()
}

func writeWhiteout(tw *tar.Writer, prefix, rel string) error {
	dir, base := path.Split(rel)
	hdr := baseHeader(prefix+dir+whiteoutPrefix+base, 0o644)
	hdr.Typeflag = tar.TypeReg
	return tw.WriteHeader(hdr)
}

// sameEntry reports whether two regular files (or two symlinks) are the
// same as a layer would carry them: permission bits, and content or target.
func sameEntry(aPath string, a fs.FileInfo, bPath string, b fs.FileInfo) (bool, error) {
	if a.Mode().Perm() != b.Mode().Perm() {
		return false, nil
	}
	if a.Mode()&fs.ModeSymlink != 0 {
		at, err := os.Readlink(aPath)
		if err != nil {
			return false, err
		}
		bt, err := os.Readlink(bPath)
		return err == nil && at == bt, err
	}
	if a.Size() != b.Size() {
		return false, nil
	}
	return sameContent(aPath, bPath)
}

func sameContent(aPath, bPath string) (bool, error) {
	fa, err := os.Open(aPath)
	if err != nil {
		return false, err
	}
	defer closeQuietly(fa) // read-only
	fb, err := os.Open(bPath)
	if err != nil {
		return false, err
	}
	defer closeQuietly(fb) // read-only
	bufA, bufB := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, errA := io.ReadFull(fa, bufA)
		nb, errB := io.ReadFull(fb, bufB)
		if na != nb || !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		endA := errors.Is(errA, io.EOF) || errors.Is(errA, io.ErrUnexpectedEOF)
		endB := errors.Is(errB, io.EOF) || errors.Is(errB, io.ErrUnexpectedEOF)
		switch {
		case errA != nil && !endA:
			return false, errA
		case errB != nil && !endB:
			return false, errB
		case endA || endB:
			return endA && endB, nil
		}
	}
}

// WorkspaceLayers are a snapshot's workspace layers, in order: its
// workspace layer and the drift layers on it. A snapshot with none, or
// with layers out of that order, is an error.
func WorkspaceLayers(img v1.Image) ([]WorkspaceLayer, error) {
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("images: snapshot manifest: %w", err)
	}
	var out []WorkspaceLayer
	for _, desc := range manifest.Layers {
		kind := desc.Annotations[AnnotationLayer]
		switch {
		case kind == LayerKindWorkspace && len(out) == 0, kind == LayerKindWorkspaceDrift && len(out) > 0:
		case kind == LayerKindWorkspace, kind == LayerKindWorkspaceDrift:
			return nil, fmt.Errorf("images: snapshot layer %s: a %s layer out of order", desc.Digest, kind)
		default:
			if len(out) > 0 {
				return nil, fmt.Errorf("images: snapshot layer %s: a %q layer after the workspace", desc.Digest, kind)
			}
			continue
		}
		layer, err := img.LayerByDigest(desc.Digest)
		if err != nil {
			return nil, fmt.Errorf("images: snapshot layer %s: %w", desc.Digest, err)
		}
		out = append(out, WorkspaceLayer{Layer: layer, Kind: kind})
	}
	if len(out) == 0 {
		return nil, errors.New("images: the snapshot has no workspace layer")
	}
	return out, nil
}
