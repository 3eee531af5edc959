package policy

import "unicode/utf8"

// TruncateUTF8 returns at most max bytes of s, cut at a rune boundary, so
// that a byte limit on text never splits a character. A max of zero or
// less gives "".
func TruncateUTF8(s string, max int) string {
	if max <= 0 {
		return ""
	}
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}
