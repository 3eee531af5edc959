package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// overlay is a writable view of an extracted layer mounted for one attempt:
// the layer stays read-only (the lower directory), the attempt's writes go
// to its own upper directory. It replaces copying the layer, which costs
// seconds for a large workspace or cache; only a root supervisor can mount
// it, and anything else falls back to the copy.
type overlay struct {
	target string // the merged view
	upper  string
}

// layerView gives target a writable view of the extracted directory lower,
// for the sandbox uid: an overlay when this process may mount one, else a
// copy. scratch holds the overlay's own directories.
//
// layerDir is the extracted layer lower lies in: the marker that records
// its hand-over to the sandbox uid is kept beside it, outside anything the
// image controls.
//
// above are more read-only directories stacked over lower, topmost first,
// in the overlay only (each already the sandbox uid's): the copy leaves
// them out, and true says they are in the view.
func (s *session) layerView(lower, target, scratch, layerDir string, above ...string) (bool, error) {
	if os.Geteuid() == 0 && !strings.ContainsAny(lower+scratch+target+strings.Join(above, ""), ",:\\") {
		ov, err := mountOverlay(lower, target, scratch, layerDir, int(s.cfg.SandboxUID), int(s.cfg.SandboxGID), above...)
		if err == nil {
			s.overlays = append(s.overlays, ov)
			return true, nil
		}
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("overlay mount failed; copying the layer instead")
	}
	return false, copyTree(lower, target)
}

func mountOverlay(lower, target, scratch, layerDir string, uid, gid int, above ...string) (overlay, error) {
	if fi, err := os.Lstat(lower); err != nil || !fi.IsDir() {
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(lower, 0o755); err != nil { // an empty cache
				return overlay{}, err
			}
		} else {
			return overlay{}, fmt.Errorf("%s is not a directory", lower)
		}
	}
	// The layer's files must belong to the sandbox uid, or it could not
	// change them through the overlay (a copy-up keeps the owner). The
	// layer cache's private half is the supervisor's alone (0700), so no
	// one else reaches them; done once per layer and uid.
	if err := ownTreeOnce(lower, layerDir, uid, gid); err != nil {
		return overlay{}, err
	}
	upper, work := filepath.Join(scratch, "upper"), filepath.Join(scratch, "work")
	for _, d := range []string{upper, work, target} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return overlay{}, err
		}
	}
	// The view's root stays the supervisor's until the workspace is
	// ready (its git refuses a repository another user owns);
	// chownWritten hands it over with the rest.
	opts := "lowerdir=" + strings.Join(append(slices.Clone(above), lower), ":") + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
		return overlay{}, fmt.Errorf("mounting an overlay on %s: %w", target, err)
	}
	return overlay{target: target, upper: upper}, nil
}

// ownTreeOnce gives the tree at dir (inside the extracted layer layerDir)
// to uid:gid, unless the marker says that was done. The marker sits beside
// layerDir, in the layer cache's root-only half, where no image can put
// one.
func ownTreeOnce(dir, layerDir string, uid, gid int) error {
	sum := sha256.Sum256([]byte(dir))
	marker := layerDir + ".owner-" + hex.EncodeToString(sum[:8])
	want := strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		return nil
	}
	if err := chownTree(dir, uid, gid); err != nil {
		return err
	}
	return os.WriteFile(marker, []byte(want), 0o600)
}

// overlaid says whether dir is one of the attempt's overlays.
func (s *session) overlaid(dir string) (overlay, bool) {
	for _, ov := range s.overlays {
		if ov.target == dir {
			return ov, true
		}
	}
	return overlay{}, false
}

// chownWritten gives the sandbox uid what this process wrote into an
// overlay (the catch-up checkout, the prompt): exactly what is in its
// upper directory, found by reading the upper directory and changed through
// the merged view. Chowning the whole view would copy every file up.
func chownWritten(ov overlay, uid, gid int) error {
	return filepath.WalkDir(ov.upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeCharDevice != 0 {
			return nil // a whiteout: a file deleted from the view
		}
		rel, err := filepath.Rel(ov.upper, p)
		if err != nil {
			return err
		}
		return os.Lchown(filepath.Join(ov.target, rel), uid, gid)
	})
}

// unmountOverlays detaches the attempt's overlays, before its directory is
// removed: a removal through a mounted view would only write whiteouts.
func (s *session) unmountOverlays() {
	for i := len(s.overlays) - 1; i >= 0; i-- {
		if err := unix.Unmount(s.overlays[i].target, unix.MNT_DETACH); err != nil {
			s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("unmounting an overlay")
		}
	}
	s.overlays = nil
}
