package contract

import (
	"fmt"
	"path"
	"strings"
)

// Artifacts are files a session's verify writes that a person looks at
// (screenshots, reports), named by the repository's `artifacts:` globs
// (issue 16). The supervisor collects them after verify, uploads each to
// the app over the session channel (PathArtifact), and lists them in the
// evidence. They are never part of the change.

// Limits on artifacts, whatever the server's config says.
const (
	// MaxArtifactPatterns caps a repository's artifacts: globs.
	MaxArtifactPatterns = 20
	// MaxArtifacts caps the files one session collects.
	MaxArtifacts = 50
	// HardMaxArtifactBytes caps one artifact, so one upload's body is
	// bounded even under a server config that asks for more.
	HardMaxArtifactBytes = 64 << 20
)

// ArtifactSpec is what the spec tells the supervisor to collect (v5).
type ArtifactSpec struct {
	// Patterns are globs relative to /workspace, matched against a
	// file's whole path with path.Match ('*' does not cross '/'), or
	// "dir/**" for every file under dir.
	Patterns []string `json:"patterns"`
	// MaxFileBytes and MaxSessionBytes are the server's caps: a file over
	// either (counting those collected before it) is listed, refused, and
	// not uploaded.
	MaxFileBytes    int64 `json:"max_file_bytes"`
	MaxSessionBytes int64 `json:"max_session_bytes"`
}

// Artifact is one collected (or refused) file in the evidence (v4).
type Artifact struct {
	// Name is the file's path relative to /workspace.
	Name string `json:"name"`
	Size int64  `json:"size"`
	// ContentType is sniffed from the file's bytes (net/http's
	// DetectContentType), never taken from its name.
	ContentType string `json:"content_type,omitempty"`
	// SHA256 is the hex digest of the bytes uploaded.
	SHA256 string `json:"sha256,omitempty"`
	// Refused says why the file was not collected (over a cap, not a
	// regular file); empty when it was.
	Refused string `json:"refused,omitempty"`
	// Screenshot names the verify command whose Screenshots glob matched
	// the file (v12); empty for an artifacts: file.
	Screenshot string `json:"screenshot,omitempty"`
}

// ValidateArtifactPattern checks one artifacts: glob: a path as
// ValidatePath allows (relative, clean, not in .git) whose '*', '?' and
// '[...]' parts are well-formed, or such a directory followed by "/**".
func ValidateArtifactPattern(p string) error {
	dir, all := strings.CutSuffix(p, "/**")
	if all {
		p = dir
	}
	if err := ValidatePath(strings.NewReplacer("*", "x", "?", "x", "[", "x", "]", "x").Replace(p)); err != nil {
		return err
	}
	if strings.Contains(p, "**") {
		return fmt.Errorf("may use ** only as a whole last component (%q)", "dir/**")
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("is not a valid glob: %v", err)
	}
	return nil
}

// HasScreenshots says a command of verify names screenshots.
func HasScreenshots(verify []Command) bool {
	for _, c := range verify {
		if len(c.Screenshots) > 0 {
			return true
		}
	}
	return false
}

// ScreenshotOf is the name of the first verify command whose screenshots
// globs match the workspace path name, "" when none does.
func ScreenshotOf(verify []Command, name string) string {
	for _, c := range verify {
		if MatchArtifact(c.Screenshots, name) {
			return c.Name
		}
	}
	return ""
}

// IsScreenshotImage says a sniffed content type is one a screenshot may
// be: a raster image a browser shows (never SVG, which can carry script).
func IsScreenshotImage(contentType string) bool {
	switch contentType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// MatchArtifact reports whether the workspace path name matches one of
// the patterns (ValidateArtifactPattern's).
func MatchArtifact(patterns []string, name string) bool {
	for _, p := range patterns {
		if dir, ok := strings.CutSuffix(p, "/**"); ok {
			if strings.HasPrefix(name, dir+"/") {
				return true
			}
			continue
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// validate checks the caps and globs; screenshots says a verify command
// names screenshots, whose caps these are too, so the artifacts' own
// globs may then be none.
func (a *ArtifactSpec) validate(f *faults, prefix string, screenshots bool) {
	if (len(a.Patterns) == 0 && !screenshots) || len(a.Patterns) > MaxArtifactPatterns {
		f.add(at(prefix, "patterns"), "must list 1 to %d globs, not %d", MaxArtifactPatterns, len(a.Patterns))
	}
	for i, p := range a.Patterns {
		if err := ValidateArtifactPattern(p); err != nil {
			f.add(index(at(prefix, "patterns"), i), "%v", err)
		}
	}
	if a.MaxFileBytes <= 0 || a.MaxFileBytes > HardMaxArtifactBytes {
		f.add(at(prefix, "max_file_bytes"), "must be 1 to %d", HardMaxArtifactBytes)
	}
	if a.MaxSessionBytes < a.MaxFileBytes {
		f.add(at(prefix, "max_session_bytes"), "must be at least max_file_bytes")
	}
}

func validateArtifacts(f *faults, prefix string, list []Artifact) {
	if len(list) > MaxArtifacts {
		f.add(prefix, "has %d artifacts, more than the %d allowed", len(list), MaxArtifacts)
	}
	seen := map[string]bool{}
	for i, a := range list {
		p := index(prefix, i)
		if err := ValidatePath(a.Name); err != nil {
			f.add(at(p, "name"), "%v", err)
		}
		if seen[a.Name] {
			f.add(at(p, "name"), "is listed twice")
		}
		seen[a.Name] = true
		if a.Size < 0 {
			f.add(at(p, "size"), "is negative")
		}
		checkLine(f, at(p, "content_type"), a.ContentType, MaxNameBytes, false)
		checkLine(f, at(p, "refused"), a.Refused, MaxReasonBytes, false)
		checkLine(f, at(p, "screenshot"), a.Screenshot, MaxNameBytes, false)
		if a.Refused == "" && (len(a.SHA256) != 64 || !isLowerHex(a.SHA256)) {
			f.add(at(p, "sha256"), "must be 64 lowercase hex digits for a collected artifact")
		}
	}
}
