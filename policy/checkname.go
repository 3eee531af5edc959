package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxCheckPatternBytes caps one configured check-name pattern.
const MaxCheckPatternBytes = 200

// Check patterns name check runs and commit-status contexts, as in a
// repository's `repair.checks`. Such names are free text ("CI / test
// (ubuntu, 1.22)", "ci/circleci: build"), not paths, so the rules are
// simpler than for path globs:
//
//   - `*` matches any run of characters, none included, and that run may
//     hold "/" and spaces: `ci/*` matches `ci/build` and `ci/a/b c`, and
//     `*test*` matches `CI / unit tests`;
//   - `?` matches exactly one character (a rune; an invalid byte counts as
//     one, as in package regexp);
//   - every other character matches itself, ignoring ASCII case only:
//     `Test` matches `test` and `TEST`, but "K" does not match the Kelvin
//     sign. There are no character classes or escapes, so `[`, `]`, `{`
//     and `\` are ordinary characters (`build [linux]` names that check);
//   - the whole name must match: `test` does not match `unit test`.
//
// An empty pattern matches nothing, and nothing matches an empty name
// (GitHub never reports a check without a name).

// MatchCheckName reports whether a check-run name or commit-status context
// matches pattern, as described above. Time is O(len(pattern)·len(name))
// at worst.
func MatchCheckName(pattern, name string) bool {
	if pattern == "" || name == "" {
		return false
	}
	// The classic wildcard match with one backtracking point, as in
	// matchSeg: on a mismatch after a `*`, that star takes one more rune
	// and the rest of the pattern is tried again from there. Earlier stars
	// never need revisiting, since each literal run is placed at its
	// leftmost match, which leaves the most room for what follows.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(name) {
		if pi < len(pattern) {
			switch c := pattern[pi]; c {
			case '*':
				star, mark = pi, si
				pi++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(name[si:])
				pi++
				si += n
				continue
			default:
				if foldASCII(c) == foldASCII(name[si]) {
					pi++
					si++
					continue
				}
			}
		}
		if star >= 0 {
			_, n := utf8.DecodeRuneInString(name[mark:])
			mark += n
			pi, si = star+1, mark
			continue
		}
		return false
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// MatchAnyCheck reports whether name matches at least one of patterns.
func MatchAnyCheck(patterns []string, name string) bool {
	for _, p := range patterns {
		if MatchCheckName(p, name) {
			return true
		}
	}
	return false
}

// ValidCheckPattern checks a configured check-name pattern: it must not be
// empty, must be at most MaxCheckPatternBytes bytes of valid UTF-8, and
// must hold no control or invisible characters (no check name has them,
// so such a pattern could never match what its author sees on GitHub).
func ValidCheckPattern(p string) error {
	switch {
	case p == "":
		return errors.New("check pattern is empty")
	case len(p) > MaxCheckPatternBytes:
		return fmt.Errorf("check pattern is %d bytes long; at most %d", len(p), MaxCheckPatternBytes)
	case !utf8.ValidString(p):
		return fmt.Errorf("check pattern %q is not valid UTF-8", p)
	case strings.IndexFunc(p, IsHiddenInLine) >= 0:
		return fmt.Errorf("check pattern %q has control or invisible characters", p)
	}
	return nil
}

// foldASCII lowers an ASCII upper-case letter and leaves every other byte
// alone, so multi-byte runes compare exactly.
func foldASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
