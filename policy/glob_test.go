package policy

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatchGlob(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		// literal
		{"README.md", "README.md", true},
		{"README.md", "readme.md", false},
		{"README.md", "docs/README.md", false},
		{"docs/README.md", "docs/README.md", true},
		{"docs/README.md", "docs/README.md/x", false},
		// a leading "/" is ignored; patterns are anchored anyway
		{"/README.md", "README.md", true},
		{"/deploy/**", "deploy/x", true},
		// `*` within one segment, dots included
		{"*.md", "README.md", true},
		{"*.md", ".hidden.md", true},
		{"*.md", "docs/README.md", false},
		{"docs/*.md", "docs/a.md", true},
		{"docs/*.md", "docs/a/b.md", false},
		{"docs/*", "docs/a", true},
		{"docs/*", "docs", false},
		{"*", "a", true},
		{"*", "a/b", false},
		{"a*b", "ab", true},
		{"a*b", "aXXb", true},
		{"a*b", "aX/b", false},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaab", true},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaa", false},
		// `?` is one rune, never "/"
		{"?.go", "a.go", true},
		{"?.go", "ab.go", false},
		{"?.go", "é.go", true},
		{"??.go", "é.go", false},
		{"a?b", "a/b", false},
		// `**`
		{"**", "a", true},
		{"**", "a/b/c", true},
		{"**/x", "x", true},
		{"**/x", "a/b/x", true},
		{"**/x", "a/b/xx", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**/b", "b", false},
		{"a/**", "a", true},
		{"a/**", "a/b/c", true},
		{"a/**", "ab", false},
		{"a/**", "b/a", false},
		{"**/*.pem", "x.pem", true},
		{"**/*.pem", "certs/dev/x.pem", true},
		{"**/*.pem", "certs/x.pem.txt", false},
		{"a/**/**/b", "a/b", true},
		{"**/a/**/b/**", "x/a/y/b", true},
		{"**/a/**/b/**", "x/a/y/c", false},
		{"a**", "abc", true},
		{"a**", "a/bc", false},
		// a trailing "/" covers a directory
		{"deploy/", "deploy", true},
		{"deploy/", "deploy/a/b", true},
		{"deploy/", "deployment/a", false},
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/workflows", true},
		{".github/workflows/**", ".github/workflows/sub/x.yml", true},
		{".github/workflows/**", ".github/workflowsx/ci.yml", false},
		{".github/workflows/**", ".github/ci.yml", false},
		{".github/workflows/**", ".GITHUB/workflows/ci.yml", false}, // MatchGlob is case-sensitive
		// no classes, braces, negation or escapes
		{"pages/[id].tsx", "pages/[id].tsx", true},
		{"pages/[id].tsx", "pages/i.tsx", false},
		{"*.{js,ts}", "a.js", false},
		{"*.{js,ts}", "a.{js,ts}", true},
		{"!a", "!a", true},
		{"!a", "b", false},
		// empty inputs
		{"", "", false},
		{"", "a", false},
		{"/", "a", false},
		{"**", "", false},
		{"a", "", false},
		// literal matching of unclean paths
		{"a/*/b", "a//b", true},
		{"a/b", "a/./b", false},
	}
	for _, c := range cases {
		if got := MatchGlob(c.pattern, c.path); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
		if ok := globRegexp(c.pattern); ok != nil && utf8.ValidString(c.path) {
			if want := c.path != "" && ok.MatchString(c.path); want != c.want {
				t.Errorf("reference for (%q, %q) = %v; the table is wrong or the reference is", c.pattern, c.path, want)
			}
		}
	}
}

func TestGlobDirOnPath(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{".github/workflows/**", ".github", true},
		{".github/workflows/**", ".github/workflows", true}, // also a match
		{".github/workflows/**", ".github/workflows/x", false},
		{".github/workflows/**", ".githubx", false},
		{".github/workflows/**", "", true}, // the root is on the way to everything
		{"deploy/*/secrets/**", "deploy", true},
		{"deploy/*/secrets/**", "deploy/prod", true},
		{"deploy/*/secrets/**", "deploy/prod/other", false},
		{"**/*.pem", "certs", false}, // nothing before the first `**`
		{"a/**/b", "a", true},
		{"a/**/b", "a/x", false},
		{"CODEOWNERS", "CODEOWNERS", false},
		{"docs/CODEOWNERS", "docs", true},
	}
	for _, c := range cases {
		segs, _ := globSegs(c.pattern)
		var s []string
		if c.path != "" {
			s = strings.Split(c.path, "/")
		}
		if got := globDirOnPath(segs, s); got != c.want {
			t.Errorf("globDirOnPath(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

func TestValidGlob(t *testing.T) {
	good := []string{"deploy/**", "/deploy/**", "deploy/", "*.pem", "**/*.pem", "a/**/b", "pages/[id].tsx", "CODEOWNERS", "a?c", "x{y}"}
	for _, g := range good {
		if err := ValidGlob(g); err != nil {
			t.Errorf("ValidGlob(%q) = %v, want nil", g, err)
		}
	}
	bad := map[string]string{
		"":            "empty",
		"/":           "empty",
		"a//b":        "empty segment",
		"./a":         `"." segment`,
		"a/../b":      `".." segment`,
		`a\b`:         "backslash",
		"!a":          "negation",
		"*.{js,ts}":   "brace expansion",
		"a\x00b":      "control",
		"a\u200bb":    "invisible",
		"\xff":        "UTF-8",
		"deploy/**//": "empty segment",
	}
	for g, want := range bad {
		err := ValidGlob(g)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidGlob(%q) = %v, want an error about %q", g, err, want)
		}
	}
}

// Hostile patterns stay fast: matching is polynomial, not exponential.
func TestMatchGlobHostile(t *testing.T) {
	long := strings.Repeat("a/", 2000) + "b"
	pattern := strings.Repeat("**/a/", 50) + "c"
	if MatchGlob(pattern, long) {
		t.Fatalf("matched")
	}
	seg := strings.Repeat("a", 5000)
	if MatchGlob(strings.Repeat("*a", 100)+"b", seg) {
		t.Fatalf("matched")
	}
}

// globRegexp is an independent reference: the pattern translated to a
// regular expression. It returns nil for patterns regexp cannot take
// (invalid UTF-8).
func globRegexp(pattern string) *regexp.Regexp {
	segs, ok := globSegs(pattern)
	if !ok {
		return regexp.MustCompile(`^\z.`) // matches nothing
	}
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for i, s := range segs {
		last := i == len(segs)-1
		if s == "**" {
			switch {
			case len(segs) == 1:
				b.WriteString(`.*`)
			case i == 0:
				b.WriteString(`(?:.*/)?`)
			case last:
				b.WriteString(`(?:/.*)?`)
			default:
				b.WriteString(`/(?:.*/)?`)
			}
			continue
		}
		if i > 0 && segs[i-1] != "**" {
			b.WriteString("/")
		}
		for _, r := range s {
			switch r {
			case '*':
				b.WriteString(`[^/]*`)
			case '?':
				b.WriteString(`[^/]`)
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
	}
	b.WriteString(`$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return re
}

func FuzzMatchGlob(f *testing.F) {
	seeds := [][2]string{
		{"**", "a/b"}, {"a/**/b", "a/b"}, {"*.go", "x.go"}, {"?", "é"}, {"a/", "a/b"},
		{"/a", "a"}, {"**/**", ""}, {"a**b", "ab"}, {"*a*a*b", "aaab"}, {"x/*/y", "x//y"},
		{".github/workflows/**", ".github/workflows"}, {"\xff*", "\xff\xfe"}, {"**/", "/"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		got := MatchGlob(pattern, path)
		if got != MatchGlob(pattern, path) {
			t.Fatalf("not deterministic")
		}
		if path == "" && got {
			t.Fatalf("matched an empty path")
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(path) {
			return
		}
		if re := globRegexp(pattern); re != nil {
			if want := path != "" && re.MatchString(path); got != want {
				t.Fatalf("MatchGlob(%q, %q) = %v, reference %s says %v", pattern, path, got, re, want)
			}
		}
		// A pattern ending in "/" is the same as one ending in "/**".
		if strings.HasSuffix(pattern, "/") && strings.TrimPrefix(pattern, "/") != "" {
			if MatchGlob(pattern+"**", path) != got {
				t.Fatalf("%q and %q disagree on %q", pattern, pattern+"**", path)
			}
		}
	})
}

// Every pattern and path of up to three characters from a small alphabet,
// against the regular-expression reference.
func TestMatchGlobAgainstReference(t *testing.T) {
	alphabet := []string{"a", "*", "?", "/", "é"}
	all := []string{""}
	for n, prev := 0, []string{""}; n < 3; n++ {
		var next []string
		for _, s := range prev {
			for _, a := range alphabet {
				next = append(next, s+a)
			}
		}
		all = append(all, next...)
		prev = next
	}
	for _, p := range all {
		re := globRegexp(p)
		for _, s := range all {
			want := s != "" && re.MatchString(s)
			if got := MatchGlob(p, s); got != want {
				t.Errorf("MatchGlob(%q, %q) = %v, reference %s says %v", p, s, got, re, want)
			}
		}
	}
}
