package policy

import (
	"strings"
	"unicode"
)

// IsHidden reports whether r is a character a reader does not see, or a
// control character other than newline and tab. It is the one definition
// of hidden characters: the command parser strips them from instructions,
// CleanText from other untrusted text, the supervisor from everything it
// gathers for the agent and everything it reports, and IsHiddenInLine
// builds on it for single-line values. Hidden are:
//   - control characters (Cc: C0, DEL and C1), except "\n" and "\t";
//   - format characters (Cf): zero-width characters, bidi embeddings,
//     overrides, isolates and marks, the soft hyphen, U+FEFF, tag
//     characters and the like;
//   - all of U+2060 to U+206F (word joiner, invisible operators, bidi
//     isolates and deprecated format characters), U+2065 too, which is
//     unassigned and renders as nothing;
//   - variation selectors (U+FE00 to U+FE0F, U+E0100 to U+E01EF) and the
//     Mongolian free variation selectors (U+180B to U+180F);
//   - the combining grapheme joiner (U+034F) and the Hangul fillers that
//     render as nothing (U+115F, U+1160, U+3164, U+FFA0).
//
// Emoji joined with U+200D lose the joiner, and emoji with a variation
// selector lose the selector; that is accepted.
func IsHidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || (r >= 0x7F && r <= 0x9F): // C0 and C1 controls, DEL
		return true
	case r >= 0x2060 && r <= 0x206F: // word joiner, invisible operators, isolates
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r >= 0x180B && r <= 0x180F: // Mongolian free variation selectors
		return true
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0: // grapheme joiner, Hangul fillers
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// IsHiddenInLine reports whether r may not appear in a single-line value
// (a name, a label, a branch, a path, a URL): a hidden character
// (IsHidden), or a newline or tab. That is every control character and
// every invisible one, so the value cannot be disguised wherever it is
// shown.
func IsHiddenInLine(r rune) bool {
	return r == '\n' || r == '\t' || IsHidden(r)
}

// IsPresentationSelector reports whether r is U+FE0E or U+FE0F, the
// variation selectors that ask for the text or the emoji form of the
// character before them. IsHidden counts them (every variation selector
// can carry hidden data), but they belong to most emoji ("⚙️"), so a name
// chosen by a repository's writers, a label, may keep them: config allows
// them there and nowhere else.
func IsPresentationSelector(r rune) bool { return r == 0xFE0E || r == 0xFE0F }

// CleanText removes the hidden characters (IsHidden) from untrusted text
// that reaches an agent, a commit message or a comment: instructions, an
// issue's title, comments, check output.
func CleanText(s string) string {
	if strings.IndexFunc(s, IsHidden) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if IsHidden(r) {
			return -1
		}
		return r
	}, s)
}
