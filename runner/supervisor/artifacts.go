package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"

	"github.com/inspecthq/inspect/contract"
)

// artifactFile is one artifact to upload, with its evidence entry.
type artifactFile struct {
	info    contract.Artifact
	content []byte
}

// findArtifacts lists the workspace's files that the spec's artifact globs
// or a verify command's screenshots globs name, in path order, without
// reading any: each gets its evidence entry (a screenshot's names its
// command), refused when it is not a regular file or is over a cap
// (checked by size before anything is read), or when there are more than
// contract.MaxArtifacts. Nothing under .git or .inspect is ever an
// artifact.
func findArtifacts(work string, spec *contract.ArtifactSpec, verify []contract.Command) ([]contract.Artifact, error) {
	var found []contract.Artifact
	var total int64
	err := filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(work, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == inspectDir {
				return filepath.SkipDir
			}
			return nil
		}
		shot := contract.ScreenshotOf(verify, rel)
		if (shot == "" && !contract.MatchArtifact(spec.Patterns, rel)) || contract.ValidatePath(rel) != nil {
			return nil
		}
		a := contract.Artifact{Name: rel, Screenshot: shot}
		fi, err := d.Info()
		switch {
		case err != nil:
			return err
		case len(found) == contract.MaxArtifacts:
			return fs.SkipAll // the evidence says how many were kept
		case !fi.Mode().IsRegular():
			a.Refused = "not a regular file"
		case fi.Size() > spec.MaxFileBytes:
			a.Size, a.Refused = fi.Size(), fmt.Sprintf("over the %d-byte limit per file", spec.MaxFileBytes)
		case total+fi.Size() > spec.MaxSessionBytes:
			a.Size, a.Refused = fi.Size(), fmt.Sprintf("over the %d-byte limit per session", spec.MaxSessionBytes)
		default:
			a.Size = fi.Size()
			total += fi.Size()
		}
		found = append(found, a)
		return nil
	})
	return found, err
}

// readArtifact reads one listed artifact through an os.Root at work (no
// symlink followed out of it), no more than the size it was listed with,
// and types it by its bytes. A file that changed type or grew since it was
// listed is refused.
func readArtifact(work string, a contract.Artifact) (artifactFile, error) {
	root, err := os.OpenRoot(work)
	if err != nil {
		return artifactFile{}, err
	}
	defer func() { _ = root.Close() }() // read-only
	f, err := root.OpenFile(filepath.FromSlash(a.Name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return artifactFile{}, err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return artifactFile{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != a.Size {
		return artifactFile{}, errors.New("it changed after it was listed")
	}
	content, err := io.ReadAll(io.LimitReader(f, a.Size+1))
	if err != nil {
		return artifactFile{}, err
	}
	if int64(len(content)) != a.Size {
		return artifactFile{}, errors.New("it changed while it was read")
	}
	sum := sha256.Sum256(content)
	a.SHA256 = hex.EncodeToString(sum[:])
	a.ContentType = http.DetectContentType(content)
	return artifactFile{info: a, content: content}, nil
}

// collectArtifacts finds, reads and uploads the session's artifacts after
// verify, in the verify workspace, and records them in the evidence. A
// file that cannot be read or uploaded is listed refused, with why; the
// session's outcome is not changed by its artifacts. They are never part
// of the change, which was fixed before verify (decision 0023).
func (s *session) collectArtifacts(ctx context.Context) {
	spec := s.spec.Artifacts
	if spec == nil || s.verifyStart.IsZero() || s.verifyDir == "" {
		return
	}
	found, err := findArtifacts(s.verifyDir, spec, s.spec.Verify)
	if err != nil {
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("looking for artifacts")
	}
	for i, a := range found {
		if a.Refused != "" {
			continue
		}
		file, err := readArtifact(s.verifyDir, a)
		if err == nil {
			file.info, err = screenshotImage(file.info, spec.Patterns)
		}
		if err == nil {
			err = s.ch.putArtifact(ctx, file.info.Name, file.content)
		}
		if err != nil {
			found[i].Refused = cleanText(s.red.Redact("not collected: "+err.Error()), contract.MaxReasonBytes)
			s.log.Warn().Str("artifact", a.Name).Str("error", found[i].Refused).Msg("artifact not collected")
			continue
		}
		found[i] = file.info
	}
	s.ev.Artifacts = found
}

// screenshotImage keeps a screenshot that is an image by its bytes
// (contract.IsScreenshotImage; decision 0083). One that is not stays an
// artifact when the artifacts' own globs name it, unmarked; otherwise it
// is not collected.
func screenshotImage(a contract.Artifact, patterns []string) (contract.Artifact, error) {
	if a.Screenshot == "" || contract.IsScreenshotImage(a.ContentType) {
		return a, nil
	}
	if contract.MatchArtifact(patterns, a.Name) {
		a.Screenshot = ""
		return a, nil
	}
	return a, fmt.Errorf("a screenshot must be a PNG, JPEG, GIF or WebP image, and this is %s", a.ContentType)
}
