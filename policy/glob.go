package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Globs name repository paths, as in a repository's `protected_paths`.
// A pattern and a path are both repository-relative and use "/" between
// directories. The pattern is split into segments at "/", and:
//
//   - a segment that is exactly `**` matches any number of path segments,
//     none included: `a/**/b` matches `a/b` and `a/x/y/b`, `**/x` matches
//     `x` and `d/x`, and `**` matches every path;
//   - `*` matches any run of characters within one segment, `?` exactly one
//     character (a rune) other than "/". Both match a leading ".", unlike a
//     shell, so `**/*.yml` matches `.github/x.yml` and `a/.b.yml`. A `**`
//     that is not a whole segment (`a**`) is simply two `*`;
//   - every other character matches itself, case-sensitively. There are no
//     character classes, braces, negation or escapes: `[`, `{`, `!` and `\`
//     are ordinary characters (so `pages/[id].tsx` names that file);
//   - a pattern ending in "/" covers a directory: `deploy/` is `deploy/**`.
//     A pattern ending in `/**` matches the directory's own path too
//     (`deploy/**` matches `deploy`), because writing a file there replaces
//     the whole directory;
//   - patterns are anchored at the repository root: `*.pem` matches only
//     `x.pem` at the top, and `**/*.pem` matches at any depth. One leading
//     "/" is allowed and ignored (`/deploy/**` is `deploy/**`).
//
// An empty pattern (or "/") matches nothing, and nothing matches an empty
// path.

// MatchGlob reports whether path matches pattern, as described above. It
// matches the strings as given: it does not clean either of them, so a
// path such as `a/../b` is only ever matched literally (ValidateChange
// refuses such paths before it matches anything).
func MatchGlob(pattern, path string) bool {
	segs, ok := globSegs(pattern)
	if !ok || path == "" {
		return false
	}
	return matchSegs(segs, strings.Split(path, "/"))
}

// ValidGlob checks a configured pattern (a `protected_paths` entry): one
// that could never match a clean repository path, or that uses syntax this
// matcher does not have and so would silently match less than its author
// meant, is an error. A protection that quietly protects nothing is worse
// than a config error.
func ValidGlob(pattern string) error {
	p := strings.TrimPrefix(pattern, "/")
	switch {
	case p == "":
		return errors.New("glob is empty")
	case !utf8.ValidString(p):
		return fmt.Errorf("glob %q is not valid UTF-8", pattern)
	case strings.IndexFunc(p, IsHiddenInLine) >= 0:
		return fmt.Errorf("glob %q has control or invisible characters", pattern)
	case strings.Contains(p, `\`):
		return fmt.Errorf("glob %q has a backslash: separate directories with \"/\" (there are no escapes)", pattern)
	case strings.HasPrefix(p, "!"):
		return fmt.Errorf("glob %q starts with \"!\": negation is not supported", pattern)
	}
	segs := strings.Split(strings.TrimSuffix(p, "/"), "/")
	for _, s := range segs {
		switch {
		case s == "":
			return fmt.Errorf("glob %q has an empty segment (\"//\")", pattern)
		case s == "." || s == "..":
			return fmt.Errorf("glob %q has a %q segment; write the path from the repository root", pattern, s)
		case strings.Contains(s, "{") && strings.Contains(s, ",") && strings.Contains(s, "}"):
			return fmt.Errorf("glob %q looks like brace expansion, which is not supported: list each pattern", pattern)
		}
	}
	return nil
}

// globSegs splits a pattern into segments: one leading "/" dropped, a
// trailing "/" read as "/**", and runs of `**` segments collapsed (they
// match the same paths, and collapsing keeps matching quadratic at worst).
func globSegs(pattern string) ([]string, bool) {
	p := strings.TrimPrefix(pattern, "/")
	if p == "" {
		return nil, false
	}
	if strings.HasSuffix(p, "/") {
		p += "**"
	}
	raw := strings.Split(p, "/")
	segs := raw[:0]
	for _, s := range raw {
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue
		}
		segs = append(segs, s)
	}
	return segs, true
}

// matchSegs matches path segments against pattern segments. `**` is to
// segments what `*` is to characters, so this is the classic wildcard
// match with one backtracking point: when a later `**` is reached, the
// earlier ones never need revisiting, because each run of segments between
// two `**` is placed at its leftmost match, which leaves the most room for
// the rest. Time is O(len(p)·len(s)) segment comparisons at worst.
func matchSegs(p, s []string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		if pi < len(p) && p[pi] == "**" {
			star, mark = pi, si
			pi++
			continue
		}
		if pi < len(p) && matchSeg(p[pi], s[si]) {
			pi++
			si++
			continue
		}
		if star >= 0 {
			mark++
			pi, si = star+1, mark
			continue
		}
		return false
	}
	for pi < len(p) && p[pi] == "**" {
		pi++
	}
	return pi == len(p)
}

// matchSeg matches one segment with `*` and `?`, by the same method as
// matchSegs over runes. Literal characters compare byte by byte, and the
// backtracking point always moves by a whole rune, so `?` consumes exactly
// one rune (an invalid byte counts as one, as in package regexp).
func matchSeg(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		if pi < len(p) {
			switch c := p[pi]; c {
			case '*':
				star, mark = pi, si
				pi++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(s[si:])
				pi++
				si += n
				continue
			default:
				if c == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		if star >= 0 {
			_, n := utf8.DecodeRuneInString(s[mark:])
			mark += n
			pi, si = star+1, mark
			continue
		}
		return false
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// globDirOnPath reports whether the path segments s name a directory that
// the pattern goes through before its first `**`: `.github` and
// `.github/workflows` for `.github/workflows/**`, `deploy` and
// `deploy/prod` for `deploy/*/secrets/**`. A change that writes a file at
// such a path, or deletes it, replaces or removes everything the pattern
// protects below it. No segments at all (the repository root) is on the
// way to every pattern.
func globDirOnPath(p, s []string) bool {
	if len(s) >= len(p) {
		return false
	}
	for i, seg := range s {
		if p[i] == "**" || !matchSeg(p[i], seg) {
			return false
		}
	}
	return true
}

// asciiLower lowers ASCII letters only, allocating only when it must.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
