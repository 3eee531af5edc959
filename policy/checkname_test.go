package policy

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatchCheckName(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		// literal, whole name, ASCII case ignored
		{"test", "test", true},
		{"test", "TEST", true},
		{"Unit Tests", "unit tests", true},
		{"test", "unit test", false},
		{"test", "tests", false},
		{"test", "tes", false},
		// `*` crosses "/" and spaces, and may match nothing
		{"ci/*", "ci/build", true},
		{"ci/*", "ci/a/b c", true},
		{"ci/*", "ci/", true},
		{"ci/*", "ci", false},
		{"ci/*", "CI/Build", true},
		{"*test*", "CI / unit tests (ubuntu, 1.22)", true},
		{"*", "anything at all / here", true},
		{"**", "x", true},
		{"build (*)", "build (linux, amd64)", true},
		{"build (*)", "build linux", false},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaab", true},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaa", false},
		{"a*b*c", "abXbc", true},
		{"a*b*c", "acb", false},
		// `?` is one rune, "/" and space included
		{"ci?build", "ci/build", true},
		{"ci?build", "ci build", true},
		{"ci?build", "cibuild", false},
		{"?", "é", true},
		{"??", "é", false},
		{"t?st", "tést", true},
		{"?", "\xff", true},
		// no character classes, braces or escapes
		{"build [linux]", "build [linux]", true},
		{"build [linux]", "build l", false},
		{"test{,s}", "tests", false},
		{`a\*`, `a\xyz`, true},
		{`a\*`, `a*`, false},
		// only ASCII folds
		{"k", "\u212a", false},
		{"s", "ſ", false},
		{"É", "é", false},
		{"é", "é", true},
		// empty
		{"", "", false},
		{"", "test", false},
		{"*", "", false},
	}
	for _, c := range cases {
		if got := MatchCheckName(c.pattern, c.name); got != c.want {
			t.Errorf("MatchCheckName(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestMatchAnyCheck(t *testing.T) {
	pats := []string{"ci/*", "test"}
	for name, want := range map[string]bool{
		"ci/lint": true, "Test": true, "lint": false, "unit test": false, "": false,
	} {
		if got := MatchAnyCheck(pats, name); got != want {
			t.Errorf("MatchAnyCheck(%q, %q) = %v, want %v", pats, name, got, want)
		}
	}
	if MatchAnyCheck(nil, "test") || MatchAnyCheck([]string{""}, "test") {
		t.Error("no patterns, or an empty one, matched")
	}
}

func TestValidCheckPattern(t *testing.T) {
	for _, ok := range []string{"test", "ci/*", "CI / test (ubuntu, 1.22)", "build [linux]", "*", "é?", strings.Repeat("x", MaxCheckPatternBytes)} {
		if err := ValidCheckPattern(ok); err != nil {
			t.Errorf("ValidCheckPattern(%q) = %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"": "empty",
		strings.Repeat("x", MaxCheckPatternBytes+1): "at most 200",
		strings.Repeat("é", 101):                    "202 bytes",
		"ci\n*":                                     "control",
		"ci\t*":                                     "control",
		"ci\x00":                                    "control",
		"ci\x7f":                                    "control",
		"ci\u0085":                                  "control",
		"t\u200best":                                "invisible",
		"\xff":                                      "UTF-8",
	} {
		err := ValidCheckPattern(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidCheckPattern(%q) = %v, want an error containing %q", bad, err, want)
		}
	}
}

// checkRegexp is a reference matcher for ASCII patterns and names.
func checkRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
				b.WriteString("[" + strings.ToLower(string(r)) + strings.ToUpper(string(r)) + "]")
			} else {
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// Every pattern of up to four and name of up to four characters from a
// small alphabet agrees with the reference.
func TestMatchCheckNameExhaustive(t *testing.T) {
	var all func(alpha string, n int) []string
	all = func(alpha string, n int) []string {
		if n == 0 {
			return []string{""}
		}
		var out []string
		for _, s := range all(alpha, n-1) {
			out = append(out, s)
			if len(s) == n-1 {
				for _, c := range alpha {
					out = append(out, s+string(c))
				}
			}
		}
		return out
	}
	dedupe := func(in []string) []string {
		seen, out := map[string]bool{}, []string(nil)
		for _, s := range in {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		return out
	}
	patterns := dedupe(all("aB*?/", 4))
	names := dedupe(all("Ab/ ", 4))
	for _, p := range patterns {
		re := checkRegexp(p)
		for _, s := range names {
			want := p != "" && s != "" && re.MatchString(s)
			if got := MatchCheckName(p, s); got != want {
				t.Fatalf("MatchCheckName(%q, %q) = %v, reference %s says %v", p, s, got, re, want)
			}
		}
	}
}

func FuzzMatchCheckName(f *testing.F) {
	for _, s := range [][2]string{
		{"ci/*", "ci/build"}, {"*test*", "CI / unit tests"}, {"?", "é"}, {"\xff*", "\xff\xfe"},
		{"*a*a*b", "aaab"}, {"", ""}, {"**?", "x"}, {"K", "\u212a"}, {"[a]", "a"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := MatchCheckName(pattern, name)
		if (pattern == "" || name == "") && got {
			t.Fatalf("matched with an empty pattern or name")
		}
		if got != MatchCheckName(asciiOnlyUpper(pattern), name) || got != MatchCheckName(pattern, asciiOnlyUpper(name)) {
			t.Fatalf("ASCII case mattered: %q %q", pattern, name)
		}
		if name != "" && !MatchCheckName("*", name) {
			t.Fatalf("* did not match %q", name)
		}
		if pattern != "" && !strings.ContainsAny(pattern, "*?") && got != asciiEqualFold(pattern, name) {
			t.Fatalf("literal %q vs %q: %v", pattern, name, got)
		}
		_ = ValidCheckPattern(pattern)
		if !isASCII(pattern) || !isASCII(name) || !utf8.ValidString(pattern) {
			return
		}
		if want := pattern != "" && name != "" && checkRegexp(pattern).MatchString(name); got != want {
			t.Fatalf("MatchCheckName(%q, %q) = %v, reference says %v", pattern, name, got, want)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func asciiOnlyUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
