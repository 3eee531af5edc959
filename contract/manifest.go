package contract

import (
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/inspecthq/inspect/policy"
)

// ManifestVersion is the version of the change manifest this build writes
// and reads. Bump it with any change to Manifest's fields or their meaning.
const ManifestVersion = "inspect.change-manifest/v1"

// ManifestFileName is the manifest's file name beside evidence.json, and
// among a Buildkite build's artifacts.
const ManifestFileName = "manifest.json"

// Caps on a change. The session's limits (Limits.MaxChangedFiles,
// MaxChangeBytes) may only be lower than the hard ones.
const (
	// HardMaxChangedFiles caps the entries of any manifest.
	HardMaxChangedFiles = 10000
	// HardMaxChangeBytes caps the total content of any manifest.
	HardMaxChangeBytes = 32 << 20
	// MaxManifestBytes caps an encoded manifest: base64 content plus room
	// for paths.
	MaxManifestBytes = HardMaxChangeBytes/3*4 + 8<<20
	// MaxPathBytes caps a path, and MaxPathComponentBytes one component
	// of it, as file systems do.
	MaxPathBytes          = 4096
	MaxPathComponentBytes = 255
	// MaxSymlinkTargetBytes caps a symbolic link's target.
	MaxSymlinkTargetBytes = 4096
)

// FileMode is a git tree entry mode. Only the three a change may write are
// allowed: no submodules (160000), no trees (they follow from paths).
type FileMode string

// File modes.
const (
	ModeFile       FileMode = "100644"
	ModeExecutable FileMode = "100755"
	ModeSymlink    FileMode = "120000"
)

// Manifest is the agent's change, as the supervisor found it in
// /workspace against BaseSHA: every file written or deleted, with its whole
// content. The app validates it (here, then against policy) and turns it
// into one tree and one commit through the Git Data API, so nothing from the
// sandbox is ever pushed as git objects.
type Manifest struct {
	// Version is ManifestVersion.
	Version string `json:"version"`
	// BaseSHA is the commit the change applies to: the spec's pinned SHA.
	BaseSHA string `json:"base_sha"`
	// Files are the changed files, sorted by path (see Normalize).
	Files []FileChange `json:"files,omitempty"`
}

// FileChange is one file of a change: its new content and mode, or its
// deletion.
type FileChange struct {
	// Path is clean, relative, slash-separated (see ValidatePath).
	Path string `json:"path"`
	// Mode is required for a written file and empty for a deleted one.
	Mode FileMode `json:"mode,omitempty"`
	// Content is the whole new content (base64 in JSON); for a symbolic
	// link, its target. Empty for a deleted file.
	Content []byte `json:"content,omitempty"`
	// Added marks a file that did not exist at BaseSHA; the supervisor
	// knows it from git. It only feeds Summary: the app builds the tree
	// from the base either way.
	Added bool `json:"added,omitempty"`
	// Deleted marks a deletion.
	Deleted bool `json:"deleted,omitempty"`
}

// ManifestLimits bound a change. A zero field means the hard cap
// (HardMaxChangedFiles, HardMaxChangeBytes), which applies in any case.
type ManifestLimits struct {
	// MaxFiles caps the entries, deletions included.
	MaxFiles int
	// MaxBytes caps the total content of written files.
	MaxBytes int64
}

// ManifestSummary counts a change, for the PR body and for limits.
type ManifestSummary struct {
	Added    int
	Modified int
	Deleted  int
	// Bytes is the total content of the written files.
	Bytes int64
}

// Files is the number of files the change touches.
func (s ManifestSummary) Files() int { return s.Added + s.Modified + s.Deleted }

// DecodeManifest reads a manifest strictly (size cap, version, no unknown
// fields) and validates it against limits.
func DecodeManifest(r io.Reader, limits ManifestLimits) (Manifest, error) {
	var m Manifest
	if err := decodeDocument(r, "change manifest", MaxManifestBytes, ManifestVersion, &m); err != nil {
		return Manifest{}, err
	}
	if err := m.Validate(limits); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Normalize sorts the files by path (bytewise), so that equal changes encode
// to equal bytes and trees are built in git's order.
func (m *Manifest) Normalize() {
	slices.SortStableFunc(m.Files, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
}

// Summary counts the files added, modified and deleted, and the bytes
// written.
func (m *Manifest) Summary() ManifestSummary {
	var s ManifestSummary
	for _, fc := range m.Files {
		switch {
		case fc.Deleted:
			s.Deleted++
		case fc.Added:
			s.Added++
		default:
			s.Modified++
		}
		if !fc.Deleted {
			s.Bytes += int64(len(fc.Content))
		}
	}
	return s
}

// Validate reports every fault in the manifest, each naming its field, as a
// *ValidationError; nil when it is sound and within limits.
func (m *Manifest) Validate(limits ManifestLimits) error {
	var f faults
	m.validate(&f, "", limits)
	return f.err("change manifest")
}

func (m *Manifest) validate(f *faults, prefix string, limits ManifestLimits) {
	maxFiles, maxBytes := limits.MaxFiles, limits.MaxBytes
	if maxFiles <= 0 || maxFiles > HardMaxChangedFiles {
		maxFiles = HardMaxChangedFiles
	}
	if maxBytes <= 0 || maxBytes > HardMaxChangeBytes {
		maxBytes = HardMaxChangeBytes
	}
	if m.Version != ManifestVersion {
		f.add(at(prefix, "version"), "must be %q, not %s", ManifestVersion, safeQuote(m.Version))
	}
	checkSHA(f, at(prefix, "base_sha"), m.BaseSHA)
	filesField := at(prefix, "files")
	if len(m.Files) > maxFiles {
		f.add(filesField, "changes %d files, more than the %d allowed", len(m.Files), maxFiles)
		return // do not spend time on an oversized change
	}
	written := make(map[string]bool, len(m.Files))
	seen := make(map[string]bool, len(m.Files))
	var total int64
	for i, fc := range m.Files {
		p := index(filesField, i)
		pathOK := true
		if err := ValidatePath(fc.Path); err != nil {
			f.add(at(p, "path"), "%v", err)
			pathOK = false
		} else if seen[fc.Path] {
			f.add(at(p, "path"), "is listed twice")
		}
		seen[fc.Path] = true
		if fc.Deleted {
			if fc.Mode != "" {
				f.add(at(p, "mode"), "must be empty for a deleted file")
			}
			if len(fc.Content) > 0 {
				f.add(at(p, "content"), "must be empty for a deleted file")
			}
			if fc.Added {
				f.add(at(p, "added"), "a file cannot be both added and deleted")
			}
			continue
		}
		if pathOK {
			written[fc.Path] = true
		}
		total += int64(len(fc.Content))
		switch fc.Mode {
		case ModeFile, ModeExecutable:
		case ModeSymlink:
			switch t := string(fc.Content); {
			case t == "":
				f.add(at(p, "content"), "a symbolic link needs a target")
			case len(t) > MaxSymlinkTargetBytes || strings.IndexByte(t, 0) >= 0 || !utf8.ValidString(t):
				f.add(at(p, "content"), "a symbolic link's target must be UTF-8 without NUL, at most %d bytes", MaxSymlinkTargetBytes)
			}
		case "":
			f.add(at(p, "mode"), "is required for a written file (100644, 100755 or 120000)")
		default:
			f.add(at(p, "mode"), "must be 100644, 100755 or 120000, not %s", safeQuote(string(fc.Mode)))
		}
	}
	if total > maxBytes {
		f.add(filesField, "write %d bytes, more than the %d allowed", total, maxBytes)
	}
	// A path cannot be both a file and a directory of the same tree.
	for i, fc := range m.Files {
		if fc.Deleted || !written[fc.Path] {
			continue
		}
		for dir := path.Dir(fc.Path); dir != "."; dir = path.Dir(dir) {
			if written[dir] {
				f.add(at(index(filesField, i), "path"), "lies under %s, which this change writes as a file", safeQuote(dir))
				break
			}
		}
	}
}

// ValidatePath checks a path in a change: non-empty, valid UTF-8, no NUL,
// control or invisible characters, no backslash, relative (no leading '/'),
// clean (no '.', '..' or empty components, no trailing '/'), nothing inside
// or named .git (compared as case-insensitive file systems and NTFS would:
// ".GIT", ".git.", "git~1"), and within MaxPathBytes and
// MaxPathComponentBytes. The error names the fault and echoes no more than
// is safe.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return errors.New("is empty")
	case len(p) > MaxPathBytes:
		return fmt.Errorf("is %d bytes, more than the %d allowed", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return errors.New("is not valid UTF-8")
	case strings.IndexByte(p, 0) >= 0:
		return errors.New("contains a NUL byte")
	case strings.ContainsFunc(p, policy.IsHiddenInLine):
		return errors.New("contains a control or invisible character")
	case strings.IndexByte(p, '\\') >= 0:
		return errors.New(`contains a backslash`)
	case p[0] == '/':
		return errors.New("must be relative (no leading '/')")
	}
	for c := range strings.SplitSeq(p, "/") {
		switch {
		case c == "..":
			return errors.New("must not contain a '..' component")
		case c == "." || c == "":
			return errors.New("must be clean: no '.' or empty components, no trailing '/'")
		case isDotGit(c):
			return errors.New("must not name or enter a .git directory")
		case len(c) > MaxPathComponentBytes:
			return fmt.Errorf("has a component of %d bytes, more than the %d allowed", len(c), MaxPathComponentBytes)
		}
	}
	return nil
}

// isDotGit reports whether a path component would be git's own directory on
// some file system: ".git" in any case, with trailing dots or spaces (which
// NTFS drops), or its 8.3 short name.
func isDotGit(c string) bool {
	return strings.EqualFold(strings.TrimRight(c, ". "), ".git") || strings.EqualFold(c, "git~1")
}
