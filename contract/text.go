package contract

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/inspecthq/inspect/policy"
)

// Caps on single values. They exist so that no field can carry an unbounded
// amount of text (and so memory and rendered comments stay bounded), and so
// that an identifier is never a paragraph.
const (
	// MaxIDBytes caps session and attempt ids.
	MaxIDBytes = 128
	// MaxNameBytes caps short single-line names: logins, command names,
	// branch names, models, presets.
	MaxNameBytes = 255
	// MaxArgBytes caps one argv element.
	MaxArgBytes = 64 << 10
	// MaxArgs caps the number of argv elements of one command.
	MaxArgs = 256
)

// checkText checks a free-form text field: valid UTF-8, no NUL, at most max
// bytes, and present when required.
func checkText(f *faults, field, s string, max int, required bool) {
	switch {
	case s == "":
		if required {
			f.add(field, "is required")
		}
	case len(s) > max:
		f.add(field, "is %d bytes, more than the %d allowed", len(s), max)
	case !utf8.ValidString(s):
		f.add(field, "is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		f.add(field, "contains a NUL byte")
	}
}

// checkLine checks a single-line value (a name, a login, a branch): what
// checkText checks, plus no control or invisible formatting characters
// (newlines, bidi overrides, zero-width characters), which could disguise
// the value wherever it is shown.
func checkLine(f *faults, field, s string, max int, required bool) {
	n := f.count()
	checkText(f, field, s, max, required)
	if f.count() > n || s == "" {
		return
	}
	if i := strings.IndexFunc(s, policy.IsHiddenInLine); i >= 0 {
		f.add(field, "contains a control or invisible character (%U) at byte %d", []rune(s[i:])[0], i)
	}
}

// checkID checks an opaque identifier (session id, attempt id). Ids travel
// in URL paths, file names and Buildkite meta-data, so they are limited to
// characters that need no escaping anywhere.
func checkID(f *faults, field, s string) {
	switch {
	case s == "":
		f.add(field, "is required")
	case len(s) > MaxIDBytes:
		f.add(field, "is %d bytes, more than the %d allowed", len(s), MaxIDBytes)
	case !validID(s):
		f.add(field, "must be letters, digits, '.', '_' or '-', not starting with '.' or '-'")
	}
}

func validID(s string) bool {
	if s == "" || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkSHA checks a git commit id: 40 lowercase hex digits, as git prints
// them. Pinning by full SHA is what makes a session reproducible.
func checkSHA(f *faults, field, s string) {
	switch {
	case s == "":
		f.add(field, "is required")
	case !IsCommitSHA(s):
		f.add(field, "must be a full commit SHA: 40 lowercase hex digits")
	}
}

// IsCommitSHA reports whether s is a full git commit id (40 lowercase hex).
func IsCommitSHA(s string) bool { return len(s) == 40 && isLowerHex(s) }

// IsObjectName reports whether s is a full git object name in lowercase
// hex: SHA-1's 40 digits or SHA-256's 64 (a repository's object format).
func IsObjectName(s string) bool { return (len(s) == 40 || len(s) == 64) && isLowerHex(s) }

// IsImageDigest reports whether s is an OCI content digest of the form
// "sha256:" followed by 64 lowercase hex digits.
func IsImageDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	return ok && len(h) == 64 && isLowerHex(h)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// checkArgv checks a command line given as an argv: at least one element, a
// non-empty program, no NUL (exec cannot carry one), bounded sizes.
func checkArgv(f *faults, field string, argv []string) {
	if len(argv) == 0 {
		f.add(field, "must be a non-empty argv list")
		return
	}
	if len(argv) > MaxArgs {
		f.add(field, "has %d elements, more than the %d allowed", len(argv), MaxArgs)
		return
	}
	if argv[0] == "" {
		f.add(index(field, 0), "the program must not be empty")
	}
	for i, a := range argv {
		checkText(f, index(field, i), a, MaxArgBytes, false)
	}
}

// safeQuote quotes a value for an error message: shortened, and never a
// value that looks like a secret.
func safeQuote(s string) string {
	if SecretKind(s) != "" {
		return "(a value that looks like a secret)"
	}
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q…", policy.TruncateUTF8(s, max))
	}
	return fmt.Sprintf("%q", s)
}
