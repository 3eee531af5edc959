package policy

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestIsHidden is markdown_test.go's former TestIsHiddenRune, with the
// characters the supervisor's copy named on top.
func TestIsHidden(t *testing.T) {
	hidden := []rune{0, 7, '\r', 0x1b, 0x7f, 0x85, 0x9f, 0xad, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f,
		0x202a, 0x202e, 0x2060, 0x2065, 0x2066, 0x2069, 0x206f, 0xfeff, 0xfe00, 0xfe0f, 0xe0001, 0xe0041, 0xe0100, 0xe01ef,
		0x180b, 0x180e, 0x180f, 0x034f, 0x115f, 0x1160, 0x3164, 0xffa0, 0x061c, 0xfff9}
	shown := []rune{'\n', '\t', ' ', 'a', 'é', 0xa0, 0x3000, 0x2028, 0xfffd, 0x1f600, '`', '<', 0x2070, 0x205f}
	for _, r := range hidden {
		if !IsHidden(r) {
			t.Errorf("IsHidden(%U) = false", r)
		}
	}
	for _, r := range shown {
		if IsHidden(r) {
			t.Errorf("IsHidden(%U) = true", r)
		}
	}
}

func TestIsHiddenInLine(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want bool
	}{
		{'\n', true},
		{'\t', true},
		{'\r', true},
		{0, true},
		{0x7f, true},
		{0x85, true},
		{0x200b, true},
		{0x202e, true},
		{0xfe0f, true},
		{' ', false},
		{'a', false},
		{'é', false},
		{0x1f600, false},
		{0x2028, false}, // a line separator, but neither hidden nor a control character
	} {
		if got := IsHiddenInLine(tc.r); got != tc.want {
			t.Errorf("IsHiddenInLine(%U) = %v, want %v", tc.r, got, tc.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain text\n\twith a tab", "plain text\n\twith a tab"},
		{"ig\u200bnore \u202eprevious\u202c", "ignore previous"},
		{"a\x00b\x1b[31mc\rd", "ab[31mcd"},
		{"x\ufe0fy\U000e0100z\u2065", "xyz"},
		{"hi\U000E0049\U000E0047", "hi"},
	} {
		if got := CleanText(tc.in); got != tc.want {
			t.Errorf("CleanText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The definitions IsHidden replaced. Each stripped or refused a set of
// characters; the one definition must cover the union, so that nothing
// that was kept out before gets through now.
var formerHidden = map[string]func(rune) bool{
	// policy/command.go's isHiddenRune.
	"command parser": func(r rune) bool {
		switch {
		case r == '\n' || r == '\t':
			return false
		case r < 0x20 || (r >= 0x7F && r <= 0x9F):
			return true
		case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
			return true
		case r >= 0x180B && r <= 0x180F:
			return true
		case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0:
			return true
		}
		return unicode.Is(unicode.Cf, r)
	},
	// runner/supervisor/sanitize.go's hiddenRune.
	"prompt sanitizer": func(r rune) bool {
		switch {
		case r == '\n' || r == '\t':
			return false
		case r < 0x20 || r >= 0x7F && r <= 0x9F:
			return true
		case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F, r == 0xFEFF, r == 0x00AD:
			return true
		case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
			return true
		case r >= 0x180B && r <= 0x180F:
			return true
		case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0:
			return true
		}
		return unicode.Is(unicode.Cf, r)
	},
	// runner/supervisor/output.go's cleanText.
	"supervisor's text fields": func(r rune) bool { return r == 0 || unicode.Is(unicode.Cf, r) },
}

// formerHiddenInLine are the single-line checks IsHiddenInLine replaced.
var formerHiddenInLine = map[string]func(rune) bool{
	// contract/text.go's hiddenRune and config/repo.go's label check.
	"contract and labels": func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) },
	// policy/change.go's pathHiddenRune.
	"paths and patterns": func(r rune) bool { return r < 0x20 || r == 0x7F || formerHidden["command parser"](r) },
}

func TestIsHiddenCoversFormerDefinitions(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		for name, former := range formerHidden {
			if former(r) && !IsHidden(r) {
				t.Errorf("%U was hidden for the %s and is not for IsHidden", r, name)
			}
		}
		for name, former := range formerHiddenInLine {
			if former(r) && !IsHiddenInLine(r) {
				t.Errorf("%U was refused in %s and is not by IsHiddenInLine", r, name)
			}
		}
		if IsHidden(r) && !IsHiddenInLine(r) {
			t.Errorf("%U is hidden but allowed in a line", r)
		}
	}
}
