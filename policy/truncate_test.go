package policy

import (
	"testing"
	"unicode/utf8"
)

func TestTruncateUTF8(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"", 5, ""},
		{"hello", 5, "hello"},
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"héllo", 2, "h"},  // é is two bytes: not split
		{"héllo", 3, "hé"}, // ... and kept whole when it fits
		{"😀x", 3, ""},      // a four-byte rune that does not fit
		{"😀x", 4, "😀"},
		{"a\xffb", 2, "a\xff"}, // a stray byte counts as its own rune
	} {
		got := TruncateUTF8(tc.s, tc.max)
		if got != tc.want {
			t.Errorf("TruncateUTF8(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
		if utf8.ValidString(tc.s) && !utf8.ValidString(got) {
			t.Errorf("TruncateUTF8(%q, %d) = %q split a rune", tc.s, tc.max, got)
		}
	}
}
