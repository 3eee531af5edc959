package policy

import (
	"math/rand"
	"strings"
	"testing"
)

// The construct is the whole of in (whole=true), or is not one (-1).
func TestStrictConstruct(t *testing.T) {
	cases := []struct {
		in    string
		whole bool
	}{
		{"<a>", true},
		{"<a/>", true},
		{"<a />", true},
		{"<ab-1>", true},
		{"<a b>", true},
		{"<a b c>", true},
		{"<a :b _c>", true},
		{"<a b.c-d:e>", true},
		{"<a b=c>", true},
		{"<a b = c>", true},
		{"<a b='c'>", true},
		{"<a b=\"c\">", true},
		{"<a b='c>d'>", true},
		{"<a\nb='c\nd'\n>", true},
		{"</a>", true},
		{"</a \n>", true},
		{"<!-- x -->", true},
		{"<!---->", true},
		{"<!-- a\nb -->", true},
		{"<?php x ?>", true},
		{"<!DOCTYPE html>", true},
		{"<![CDATA[ x ]]>", true},
		{"</a b>", false},
		{"</1>", false},
		{"</>", false},
		{"<1>", false},
		{"< a>", false},
		{"<a_b>", false},
		{"<ab=c>", false},
		{"<a b=>", false},
		{"<a b='c>", false},
		{"<a b=\"c>", false},
		{"<a b=`c`>", false},
		{"<a b=c=d>", false},
		{"<a 1b>", false},
		{"<a b", false},
		{"<a\n/inspect x\n>", false},
		{"<!-->", false},
		{"<!--", false},
		{"<?", false},
		{"<!x", false},
		{"<!1>", false},
		{"<![CDATA[", false},
		// Paragraph interrupts invalidate the construct.
		{"<a b='\n\n'>", false},
		{"<!-- a\n\n-->", false},
		{"<!-- a\n \t\n-->", false},
		{"<!-- a\n```\n-->", false},
		{"<!-- a\n~~~\n-->", false},
		{"<!-- a\n# h\n-->", false},
		{"<!-- a\n###### h\n-->", false},
		{"<!-- a\n#\n-->", false},
		{"<!-- a\n- b\n-->", false},
		{"<!-- a\n* b\n-->", false},
		{"<!-- a\n+ b\n-->", false},
		{"<!-- a\n1. b\n-->", false},
		{"<!-- a\n1) b\n-->", false},
		{"<!-- a\n***\n-->", false},
		{"<!-- a\n_ _ _\n-->", false},
		{"<!-- a\n---\n-->", false},
		{"<!-- a\n<div>\n-->", false},
		{"<!-- a\n</div>\n-->", false},
		{"<!-- a\n<pre>\n-->", false},
		{"<!-- a\n<!-- b\n-->", false},
		{"<!-- a\n<?\n-->", false},
		{"<!-- a\n<!X\n-->", false},
		{"<!-- a\n   # h\n-->", false},
		// Lines that may continue a paragraph do not.
		{"<!-- a\n#h\n-->", true},
		{"<!-- a\n####### h\n-->", true},
		{"<!-- a\n-b\n-->", true},
		{"<!-- a\n- \n-->", true},
		{"<!-- a\n2. b\n-->", true},
		{"<!-- a\n> b\n-->", true},
		{"<!-- a\n===\n-->", true},
		{"<!-- a\n--\n-->", true},
		{"<!-- a\n<span>\n-->", true},
		{"<!-- a\n<divx>\n-->", true},
		{"<!-- a\n<search>\n-->", true},
		{"<!-- a\n<textarea>\n-->", true},
		{"<!-- a\n    # h\n-->", true},
		{"<!-- a\n\t# h\n-->", true},
		{"<!-- a\n``\n-->", true},
		{"<!-- a\n``` x`\n-->", true},
		{"<!-- a\n__*\n-->", true},
	}
	for _, c := range cases {
		body := c.in + " tail"
		s := newScanner(body, word)
		end, _ := s.strictConstruct(0)
		want := -1
		if c.whole {
			want = len(c.in)
		}
		if end != want {
			t.Errorf("strictConstruct(%q) = %d, want %d", c.in, end, want)
		}
	}
}

// end is the length of the construct within in+tail; eof means it hides
// everything.
func TestLenientConstruct(t *testing.T) {
	const tail = " tail"
	cases := []struct {
		in  string
		eof bool
		not bool
	}{
		{in: "<a>"},
		{in: "<a b='>'>"},
		{in: "<a b = \"x>\" c>"},
		{in: "<a\n/inspect x\n>"},
		{in: "<a b=c\"d>"},
		{in: "<!-- x -->"},
		{in: "<!-->\n-->"},
		{in: "<? x > ?>"},
		{in: "<!x>"},
		{in: "<!>"},
		{in: "<![CDATA[ > ]]>"},
		{in: "</ x>"},
		{in: "</>"},
		{in: "</a\n/b>"},
		{in: "<script>x</script>"},
		{in: "<SCRIPT>x</Script\n>"},
		{in: "<style>\n<a>\n</style >"},
		{in: "<template><b>x</b></template>"},
		{in: "<a", eof: true},
		{in: "<a b='", eof: true},
		{in: "<!--", eof: true},
		{in: "<?", eof: true},
		{in: "<![CDATA[", eof: true},
		{in: "<!x", eof: true},
		{in: "</ x", eof: true},
		{in: "<script>", eof: true},
		{in: "<script></scrip>", eof: true},
		{in: "<plaintext>", eof: true},
		{in: "< a>", not: true},
		{in: "<1>", not: true},
		{in: "<", not: true},
	}
	for _, c := range cases {
		body := c.in + tail
		s := newScanner(body, word)
		end, _ := s.lenientConstruct(0)
		want := len(c.in)
		switch {
		case c.eof:
			want = len(body)
		case c.not:
			want = -1
		}
		if end != want {
			t.Errorf("lenientConstruct(%q) = %d, want %d", c.in, end, want)
		}
	}
}

func TestOpenFence(t *testing.T) {
	cases := []struct {
		in         string
		ok         bool
		ch         byte
		n, content int
	}{
		{"```", true, '`', 3, 0},
		{"````go", true, '`', 4, 0},
		{"~~~ a`b", true, '~', 3, 0},
		{"   ```", true, '`', 3, 0},
		{"    ```", false, 0, 0, 0},
		{"\t```", false, 0, 0, 0},
		{"``", false, 0, 0, 0},
		{"``` a`b", false, 0, 0, 0},
		{"- ```", true, '`', 3, 2},
		{"-  ~~~", true, '~', 3, 3},
		{"1. ```", true, '`', 3, 3},
		{"10) ```", true, '`', 3, 4},
		{"- - ```", true, '`', 3, 4},
		{"-\t```", true, '`', 3, 4},
		{"-      ```", false, 0, 0, 0},
		{"-```", false, 0, 0, 0},
		{"-", false, 0, 0, 0},
		{"- ", false, 0, 0, 0},
		{"> ```", false, 0, 0, 0},
		{"a```", false, 0, 0, 0},
		{"", false, 0, 0, 0},
	}
	for _, c := range cases {
		f, ok := openFence(c.in)
		if ok != c.ok || (ok && (f.ch != c.ch || f.n != c.n || f.contentCol != c.content)) {
			t.Errorf("openFence(%q) = %+v, %v; want ch=%q n=%d content=%d ok=%v", c.in, f, ok, c.ch, c.n, c.content, c.ok)
		}
	}
}

func TestFenceClosedBy(t *testing.T) {
	top := fenceState{active: true, ch: '`', n: 3}
	item := fenceState{active: true, ch: '~', n: 4, contentCol: 2}
	cases := []struct {
		f    fenceState
		line string
		want bool
	}{
		{top, "```", true},
		{top, "`````", true},
		{top, "```  \t", true},
		{top, "   ```", true},
		{top, "    ```", false},
		{top, "``", false},
		{top, "``` x", false},
		{top, "~~~", false},
		{top, "", false},
		{item, "  ~~~~", true},
		{item, "     ~~~~", true},
		{item, "      ~~~~", false},
		{item, "  ~~~", false},
	}
	for _, c := range cases {
		if got := c.f.closedBy(c.line); got != c.want {
			t.Errorf("%+v.closedBy(%q) = %v, want %v", c.f, c.line, got, c.want)
		}
	}
}

func TestFinderMatchesIndex(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for iter := 0; iter < 200; iter++ {
		var b strings.Builder
		for b.Len() < 200 {
			b.WriteString([]string{"a", "-->", "-", ">", "'", "\n"}[r.Intn(6)])
		}
		body := b.String()
		s := newScanner(body, word)
		for q := 0; q < 50; q++ {
			needle := []string{"-->", ">", "'"}[r.Intn(3)]
			from := r.Intn(len(body) + 1)
			want := strings.Index(body[from:], needle)
			if want >= 0 {
				want += from
			}
			if got := s.find(needle, from); got != want {
				t.Fatalf("find(%q, %d) in %q = %d, want %d", needle, from, body, got, want)
			}
		}
	}
}

func TestVisible(t *testing.T) {
	body := "ab<!--x-->cd<!--y\nz-->ef"
	s := newScanner(body, word)
	s.run()
	cases := []struct {
		a, b int
		want string
	}{
		{0, len(body), "abcdef"},
		{0, 2, "ab"},
		{0, 5, "ab"},
		{4, len(body), "cdef"},
		{10, 12, "cd"},
		{12, 14, ""},
		{len(body), len(body), ""},
	}
	for _, c := range cases {
		if got := s.visible(c.a, c.b); got != c.want {
			t.Errorf("visible(%d, %d) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

func TestStringHelpers(t *testing.T) {
	fold := []struct {
		a, b string
		want bool
	}{
		{"abc", "ABC", true},
		{"a-[b]", "A-[B]", true},
		{"abc", "abd", false},
		{"ab", "abc", false},
		{"\u212a", "k", false},
		{"\u212a", "K", false},
		{"é", "É", false},
		{"é", "é", true},
		{"@", "`", false},
		{"[", "{", false},
	}
	for _, c := range fold {
		if got := asciiEqualFold(c.a, c.b); got != c.want {
			t.Errorf("asciiEqualFold(%q, %q) = %v", c.a, c.b, got)
		}
	}
	idx := []struct {
		s, needle  string
		from, want int
	}{
		{"xx</SCRIPT>", "</script", 0, 2},
		{"xx</SCRIPT>", "</script", 3, -1},
		{"</scrip", "</script", 0, -1},
		{"a", "", 0, 0},
		{"<\x1c/script", "</script", 0, -1},
	}
	for _, c := range idx {
		if got := indexFold(c.s, c.from, c.needle); got != c.want {
			t.Errorf("indexFold(%q, %d, %q) = %d, want %d", c.s, c.from, c.needle, got, c.want)
		}
	}
	prefix := []struct {
		in       string
		at       int
		prefixed bool
	}{
		{"<a>", 0, false},
		{"  <a>", 2, false},
		{"> <a>", 2, true},
		{"- <a>", 2, true},
		{"12. <a>", 4, true},
		{"-<a>", 0, false},
		{"1.<a>", 0, false},
		{"> - 1) x", 7, true},
		{">", 1, true},
	}
	for _, c := range prefix {
		at, p := containerPrefix(c.in)
		if at != c.at || p != c.prefixed {
			t.Errorf("containerPrefix(%q) = %d, %v; want %d, %v", c.in, at, p, c.at, c.prefixed)
		}
	}
}
