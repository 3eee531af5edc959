package supervisor

import (
	"strings"
	"unicode/utf8"

	"github.com/inspecthq/inspect/policy"
)

// sanitizeUntrusted removes from gathered text what a person reading it on
// GitHub does not see but an agent reading the raw text would: hidden
// characters, HTML comments, and the alt text of images. Everything else is
// kept byte for byte. It does not parse Markdown, on purpose: it works the
// same inside code blocks and code spans, because a wrong guess about what
// is code would let hidden text through. Erring the other way only drops
// some visible text.
//
// The steps, in an order where no step can create what an earlier one
// removes, which makes the result a fixed point
// (sanitizeUntrusted(sanitizeUntrusted(s)) == sanitizeUntrusted(s)):
//
//  1. Invalid UTF-8 becomes U+FFFD, so removing a character can never
//     join stray bytes into a new one.
//  2. Hidden characters go (policy.IsHidden): control characters other than
//     newline and tab, all format characters (Cf: zero-width characters,
//     bidi embeddings, overrides and isolates, the soft hyphen, U+FEFF, tag
//     characters), variation selectors and the other invisible fillers.
//  3. HTML comments go, from "<!--" to the first "-->" ("<!-->" and
//     "<!--->" are whole, empty comments); one that is never closed runs to
//     the end of the text. A "<!--" that appears only once a comment is
//     removed ("<!<!-- -->--") starts a comment too.
//  4. Each HTML <img> tag becomes "[image]", its attributes (alt, title)
//     with it; one that is never closed runs to the end.
//  5. Each Markdown image loses its alt text: "![alt](url)" becomes
//     "[image](url)" and "![alt][ref]" becomes "[image][ref]"; see
//     dropImageAlt for how the end of the alt text is found.
func sanitizeUntrusted(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = policy.CleanText(s)
	s = stripHTMLComments(s)
	s = replaceHTMLImages(s)
	return dropImageAlt(s)
}

// stripHTMLComments removes HTML comments. It copies byte by byte and looks
// for "<!--" at the end of what it has kept, so an opener put together by a
// removal counts too and the result never holds one.
func stripHTMLComments(s string) string {
	if !strings.Contains(s, "<!--") {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		out = append(out, s[i])
		i++
		if n := len(out); n < 4 || string(out[n-4:]) != "<!--" {
			continue
		}
		out = out[:len(out)-4]
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, ">"):
			i++
		case strings.HasPrefix(rest, "->"):
			i += 2
		default:
			if end := strings.Index(rest, "-->"); end >= 0 {
				i += end + 3
			} else {
				i = len(s)
			}
		}
	}
	return string(out)
}

// replaceHTMLImages replaces each <img ...> tag (any case) with "[image]".
// The tag ends at the first '>' outside a quoted attribute value; one that
// never ends runs to the end of s, which is what an HTML parser hides.
func replaceHTMLImages(s string) string {
	var b strings.Builder
	last := 0
	for i := strings.IndexByte(s, '<'); i >= 0; {
		if !isImgTag(s[i:]) {
			next := strings.IndexByte(s[i+1:], '<')
			if next < 0 {
				break
			}
			i += 1 + next
			continue
		}
		if last == 0 {
			b.Grow(len(s))
		}
		end := htmlTagEnd(s, i+len("<img"))
		b.WriteString(s[last:i])
		b.WriteString("[image]")
		last = end
		next := strings.IndexByte(s[end:], '<')
		if next < 0 {
			break
		}
		i = end + next
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// isImgTag reports whether s starts with an img start tag: "<img" in any
// case, then whitespace, '/' or '>', as an HTML tag name ends.
func isImgTag(s string) bool {
	if len(s) < 5 || s[0] != '<' || !strings.EqualFold(s[1:4], "img") {
		return false
	}
	switch s[4] {
	case ' ', '\t', '\n', '\f', '/', '>':
		return true
	}
	return false
}

// htmlTagEnd returns the index just past the '>' that ends the tag whose
// attributes start at i, or len(s). A quote opens a quoted value only right
// after '=' (and optional whitespace), as in HTML; a value quoted where
// HTML would not quote it only makes the tag end later, never earlier.
func htmlTagEnd(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '>':
			return i + 1
		case '=':
			i++
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\f') {
				i++
			}
			if i < len(s) && (s[i] == '"' || s[i] == '\'') {
				end := strings.IndexByte(s[i+1:], s[i])
				if end < 0 {
					return len(s)
				}
				i += 1 + end + 1
			}
		default:
			i++
		}
	}
	return len(s)
}

// dropImageAlt replaces the "![alt]" of each Markdown image with "[image]".
//
// An image starts at a "![" whose '!' is not backslash-escaped. Its alt
// text ends, in the simple case, at the ']' that balances the '[' (counting
// unescaped brackets). That is where a renderer ends it too, unless the alt
// holds something inside which brackets do not count: a code span ('`'),
// raw HTML or an autolink ('<'), math ('$'), or a link or image of its own
// ("](", whose destination and title may hold brackets). When it holds any
// of those (or, when the brackets never balance, the rest of the paragraph
// does), the end is taken as late as a renderer could put it: the last
// unescaped "](" or "][" (or "]![", which becomes "][" once that image is
// replaced) before the next blank line, since an image never spans a
// paragraph. A "![" with no possible end is left alone: no renderer shows
// it as an image.
//
// An unescaped '!' just before a replacement would make "![image]", an
// image again; a space goes between them.
func dropImageAlt(s string) string {
	if !strings.Contains(s, "![") {
		return s
	}
	n := len(s)
	// One pass over s, minding backslash escapes, for: the ']' balancing
	// each '[' (closeOf), a running count of the characters that make an
	// alt text uncertain (uncertain), and, per paragraph, the last ']' an
	// image could end at (lastEnd, indexed by the paragraph's end).
	closeOf := make([]int32, n)
	uncertain := make([]int32, n+1)
	paraEnd := make([]int32, 0, 8) // the ends of the paragraphs, in order
	lastEnd := make([]int32, 0, 8) // the last possible end in each, or -1
	var stack []int32
	last := int32(-1)
	lineStart, lineBlank := 0, true
	for i := 0; i < n; i++ {
		uncertain[i+1] = uncertain[i]
		c := s[i]
		switch c {
		case '\\':
			if i+1 < n && s[i+1] != '\n' {
				uncertain[i+2] = uncertain[i+1]
				i++
				lineBlank = false
				continue
			}
		case '[':
			closeOf[i] = -1
			stack = append(stack, int32(i))
		case ']':
			if k := len(stack); k > 0 {
				closeOf[stack[k-1]] = int32(i)
				stack = stack[:k-1]
			}
			// A ']' just before "![" counts too: when that image is
			// replaced, the ']' is followed by '['.
			if i+1 < n && (s[i+1] == '(' || s[i+1] == '[' || s[i+1] == '!' && i+2 < n && s[i+2] == '[') {
				last = int32(i)
				uncertain[i+1]++
			}
		case '`', '<', '$':
			uncertain[i+1]++
		case '\n':
			if lineBlank && lineStart > 0 {
				paraEnd = append(paraEnd, int32(lineStart))
				lastEnd = append(lastEnd, last)
				last = -1
			}
			lineStart, lineBlank = i+1, true
			continue
		}
		if c != ' ' && c != '\t' {
			lineBlank = false
		}
	}
	paraEnd = append(paraEnd, int32(n))
	lastEnd = append(lastEnd, last)

	var b strings.Builder
	b.Grow(n)
	para := 0
	for i := 0; i < n; i++ {
		c := s[i]
		if c == '\\' && i+1 < n && s[i+1] != '\n' {
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
			continue
		}
		if c != '!' || i+1 == n || s[i+1] != '[' {
			b.WriteByte(c)
			continue
		}
		for int(paraEnd[para]) <= i {
			para++
		}
		end := imageAltEnd(i, int(closeOf[i+1]), int(paraEnd[para]), int(lastEnd[para]), uncertain)
		if end < 0 {
			b.WriteByte(c)
			continue
		}
		if out := b.String(); strings.HasSuffix(out, "!") && !escapedAt(out, len(out)-1) {
			b.WriteByte(' ')
		}
		b.WriteString("[image]")
		i = end
	}
	return b.String()
}

// imageAltEnd returns the index of the ']' that ends the alt text of the
// image whose "![" is at start, or -1 when it cannot be an image. balanced is
// the ']' balancing its '[' (or -1), paraEnd the end of its paragraph,
// lastEnd the paragraph's last unescaped "](" or "][" (or -1).
func imageAltEnd(start, balanced, paraEnd, lastEnd int, uncertain []int32) int {
	if balanced >= paraEnd {
		balanced = -1
	}
	if lastEnd <= start {
		lastEnd = -1
	}
	if balanced >= 0 && uncertain[balanced] == uncertain[start+2] {
		return balanced
	}
	if balanced < 0 && uncertain[paraEnd] == uncertain[start+2] {
		return -1
	}
	return max(balanced, lastEnd)
}

// escapedAt reports whether s[i] follows an odd run of backslashes.
func escapedAt(s string, i int) bool {
	n := 0
	for i > 0 && s[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}
