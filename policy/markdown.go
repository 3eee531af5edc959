package policy

import (
	"sort"
	"strings"
)

// This file holds the small Markdown model behind Parse: which lines of a
// comment GitHub shows as ordinary text at the start of a line, and which
// spans are HTML comments. It is not a Markdown renderer. Where it cannot
// tell what GitHub does, it errs towards "hidden", so a command that a
// reader cannot see never counts; the price is that a command after some
// unusual HTML-like text may be missed.
//
// What it models:
//   - fenced code blocks (``` and ~~~, indented up to 3 spaces, also
//     directly inside list items), closed by a fence of the same character
//     that is at least as long;
//   - raw HTML that GitHub does not display: comments <!-- -->, processing
//     instructions <? ?>, declarations <!X >, CDATA <![CDATA[ ]]>, tags
//     (a tag can span lines, and text inside its attributes is not shown),
//     and inside HTML blocks the contents of <script>, <style> and the other
//     raw-text elements;
//   - HTML blocks (a line starting with "<"), inside which HTML is parsed
//     the browser's lenient way rather than CommonMark's strict way;
//   - a link reference definition whose destination is on the next line
//     ("[x]:" then "/inspect"), which GitHub does not show either.
//
// Two parsing modes decide where HTML constructs end:
//   - strict (inside Markdown paragraphs): CommonMark's inline raw HTML. A
//     construct that is malformed, unclosed, or would cross a line that always
//     ends a paragraph is plain, visible text.
//   - lenient (inside HTML blocks): roughly the browser's tokenizer. An
//     unclosed construct hides everything to the end of the comment, and so
//     does one that runs past the end of its HTML block (Markdown resumes
//     there and may escape the ">" that would have closed it).
//
// Known limits, all failing towards "hidden": inline code spans are not
// modelled (`<!--` in backticks is treated as HTML), nor are lazy
// continuation lines of block quotes or nested containers.

type span struct{ start, end int }

type fenceState struct {
	active     bool
	ch         byte // '`' or '~'
	n          int  // length of the opening run
	contentCol int  // column of the list item's content; 0 at top level
}

type htmlBlock struct {
	active  bool
	raw     bool // ends at a closing marker (kinds 1-5), not a blank line
	endLine int  // index of the last line of the block
	endOff  int  // offset just past the block's last line
}

// scanner walks a normalised body (LF line endings, valid UTF-8) once.
type scanner struct {
	body string
	word string

	starts    []int   // byte offset of each line's start
	interrupt []bool  // the line always ends an open paragraph
	nInterr   []int32 // nInterr[k] = number of interrupt lines among lines[0:k]

	skipUntil int // offsets below this are inside a hidden HTML construct
	fence     fenceState
	block     htmlBlock
	prevLabel bool

	comments []span // HTML comments outside code, in order

	finders map[string]*finder
}

// cmdLine is a line that counts as a command: rest is the offset just past
// the command word.
type cmdLine struct {
	line int
	rest int
}

func newScanner(body, word string) *scanner {
	s := &scanner{body: body, word: word, finders: map[string]*finder{}}
	n := strings.Count(body, "\n") + 1
	s.starts = make([]int, 0, n)
	s.interrupt = make([]bool, 0, n)
	s.nInterr = make([]int32, 1, n+1)
	var count int32
	for start := 0; ; {
		i := strings.IndexByte(body[start:], '\n')
		end := len(body)
		if i >= 0 {
			end = start + i
		}
		in := alwaysInterrupts(body[start:end])
		if in {
			count++
		}
		s.starts = append(s.starts, start)
		s.interrupt = append(s.interrupt, in)
		s.nInterr = append(s.nInterr, count)
		if i < 0 {
			break
		}
		start = end + 1
	}
	return s
}

func (s *scanner) lineEnd(k int) int {
	if k+1 < len(s.starts) {
		return s.starts[k+1] - 1
	}
	return len(s.body)
}

func (s *scanner) lineText(k int) string { return s.body[s.starts[k]:s.lineEnd(k)] }

// lineOf returns the index of the line holding offset off.
func (s *scanner) lineOf(off int) int {
	return sort.Search(len(s.starts), func(k int) bool { return s.starts[k] > off }) - 1
}

// crossesInterrupt reports whether a construct occupying body[a:b] would
// run into a line that always ends a paragraph.
func (s *scanner) crossesInterrupt(a, b int) bool {
	if b <= a {
		return false
	}
	la, lb := s.lineOf(a), s.lineOf(b-1)
	return s.nInterr[lb+1]-s.nInterr[la+1] > 0
}

// run scans every line and returns the command lines in order.
func (s *scanner) run() []cmdLine {
	var cmds []cmdLine
	for k := range s.starts {
		if rest, ok := s.line(k); ok {
			cmds = append(cmds, cmdLine{line: k, rest: rest})
		}
	}
	return cmds
}

// line processes line k and reports whether it is a command line.
func (s *scanner) line(k int) (rest int, isCmd bool) {
	rest, isCmd = s.classify(k)
	if s.block.active && k >= s.block.endLine {
		s.block.active = false
	}
	return rest, isCmd
}

func (s *scanner) classify(k int) (rest int, isCmd bool) {
	start, end := s.starts[k], s.lineEnd(k)
	text := s.body[start:end]
	prevLabel := s.prevLabel
	s.prevLabel = false

	// Inside a hidden construct that began on an earlier line: the start of
	// this line is hidden, so it can never be a command line.
	if start < s.skipUntil {
		if s.skipUntil < end {
			s.scanInline(s.skipUntil, end)
		}
		return 0, false
	}
	if s.fence.active {
		if isBlank(text) || indentCols(text) >= s.fence.contentCol {
			if s.fence.closedBy(text) {
				s.fence.active = false
			}
			return 0, false
		}
		// A less indented line ends the list item, and the code block in it.
		s.fence.active = false
	}
	if isBlank(text) {
		return 0, false
	}
	if !s.block.active {
		if f, ok := openFence(text); ok {
			s.fence = f
			return 0, false
		}
	}
	rest, isCmd = s.startsWithWord(text)
	if prevLabel || (s.block.active && s.block.raw) {
		// After "[x]:" the line is a hidden link destination; inside <pre>
		// or <textarea> it is shown as preformatted text, like code.
		isCmd = false
	}
	if !isCmd && !s.block.active {
		s.startBlock(k, text)
	}
	s.scanInline(start, end)
	s.prevLabel = endsWithLabel(text)
	return start + rest, isCmd
}

// startsWithWord reports whether text is a command line: up to three spaces,
// the exact command word, then a space, a tab or the end of the line.
// Nothing is normalised: a zero-width or look-alike character anywhere in
// or before the word means the line is not a command. Matching is
// case-sensitive so that no Unicode case folding (which maps, for example,
// the Kelvin sign to "k") can turn a look-alike into the command word.
func (s *scanner) startsWithWord(text string) (int, bool) {
	i := 0
	for i < len(text) && i < 3 && text[i] == ' ' {
		i++
	}
	if !strings.HasPrefix(text[i:], s.word) {
		return 0, false
	}
	j := i + len(s.word)
	if j == len(text) || text[j] == ' ' || text[j] == '\t' {
		return j, true
	}
	return 0, false
}

// startBlock starts an HTML block when the line's first non-container
// character is "<". Any tag counts (over-approximating CommonMark's block
// kinds 6 and 7 only makes more text lenient, which hides more).
func (s *scanner) startBlock(k int, text string) {
	p, prefixed := containerPrefix(text)
	if p >= len(text) || text[p] != '<' {
		return
	}
	r := text[p:]
	endTag := ""
	switch {
	case strings.HasPrefix(r, "<!--"):
		endTag = "-->"
	case strings.HasPrefix(r, "<?"):
		endTag = "?>"
	case strings.HasPrefix(r, "<![CDATA["):
		endTag = "]]>"
	case len(r) > 2 && r[1] == '!' && isASCIILetter(r[2]):
		endTag = ">"
	default:
		name, closing := tagNameAt(r)
		if name == "" {
			return
		}
		if !closing {
			switch strings.ToLower(name) {
			case "script", "style", "pre", "textarea":
				endTag = "</" + strings.ToLower(name) + ">"
			}
		}
	}
	b := htmlBlock{active: true, raw: endTag != ""}
	switch {
	case prefixed:
		// Inside a block quote or list item the block also ends where the
		// container does, which this model does not track: let anything
		// lenient that runs past this line hide the rest.
		b.endLine = k
	case endTag != "":
		b.endLine = len(s.starts) - 1
		for m := k; m < len(s.starts); m++ {
			if containsFold(s.lineText(m), endTag) {
				b.endLine = m
				break
			}
		}
	default:
		b.endLine = len(s.starts) - 1
		for m := k + 1; m < len(s.starts); m++ {
			if isBlank(s.lineText(m)) {
				b.endLine = m - 1
				break
			}
		}
	}
	b.endOff = s.lineEnd(b.endLine)
	s.block = b
}

// scanInline looks for HTML constructs in body[from:to] (one line, or the
// rest of it). A construct that runs past the line sets skipUntil.
func (s *scanner) scanInline(from, to int) {
	b := s.body
	lenient := s.block.active
	for i := from; i < to; {
		j := strings.IndexAny(b[i:to], `<\`)
		if j < 0 {
			return
		}
		i += j
		if b[i] == '\\' {
			// A backslash escape makes "<" literal, in Markdown text only.
			if !lenient && i+1 < to && isASCIIPunct(b[i+1]) {
				i += 2
			} else {
				i++
			}
			continue
		}
		var end int
		var comment bool
		if lenient {
			end, comment = s.lenientConstruct(i)
			if end > s.block.endOff {
				end = len(b)
			}
		} else {
			end, comment = s.strictConstruct(i)
		}
		if end < 0 {
			i++
			continue
		}
		if comment {
			s.comments = append(s.comments, span{i, end})
		}
		if end > to {
			s.skipUntil = end
			return
		}
		i = end
	}
}

// strictConstruct matches CommonMark inline raw HTML at body[i] == '<' and
// returns its end, or -1 when the text is shown literally.
func (s *scanner) strictConstruct(i int) (end int, comment bool) {
	r := s.body[i:]
	switch {
	case strings.HasPrefix(r, "<!--"):
		// Searching from after "<!--" closes as late as possible: "<!-->"
		// is closed by a later "-->". Later means more hidden.
		end, comment = s.after("-->", i+4), true
	case strings.HasPrefix(r, "<?"):
		end = s.after("?>", i+2)
	case strings.HasPrefix(r, "<![CDATA["):
		end = s.after("]]>", i+9)
	case len(r) > 2 && r[1] == '!' && isASCIILetter(r[2]):
		end = s.after(">", i+2)
	default:
		end = s.strictTag(i)
	}
	if end < 0 || s.crossesInterrupt(i, end) {
		return -1, false
	}
	return end, comment
}

// strictTag matches a CommonMark open or closing tag at body[i] == '<'.
func (s *scanner) strictTag(i int) int {
	b := s.body
	n := len(b)
	j := i + 1
	if j < n && b[j] == '/' {
		j++
		if j >= n || !isASCIILetter(b[j]) {
			return -1
		}
		for j < n && isTagNameByte(b[j]) {
			j++
		}
		j = skipSpace(b, j)
		if j < n && b[j] == '>' {
			return j + 1
		}
		return -1
	}
	if j >= n || !isASCIILetter(b[j]) {
		return -1
	}
	for j < n && isTagNameByte(b[j]) {
		j++
	}
	for {
		k := skipSpace(b, j)
		if k < n && b[k] == '>' {
			return k + 1
		}
		if k+1 < n && b[k] == '/' && b[k+1] == '>' {
			return k + 2
		}
		if k == j || k >= n || !isAttrNameStart(b[k]) {
			return -1
		}
		j = k
		for j < n && isAttrNameByte(b[j]) {
			j++
		}
		k = skipSpace(b, j)
		if k >= n || b[k] != '=' {
			continue // an attribute without a value
		}
		k = skipSpace(b, k+1)
		if k >= n {
			return -1
		}
		switch b[k] {
		case '"', '\'':
			q := s.find(b[k:k+1], k+1)
			if q < 0 {
				return -1
			}
			j = q + 1
		default:
			st := k
			for k < n && isUnquotedValueByte(b[k]) {
				k++
			}
			if k == st {
				return -1
			}
			j = k
		}
	}
}

// lenientConstruct matches HTML the way a browser's tokenizer would at
// body[i] == '<'. Unclosed constructs hide everything to the end. Where two
// ends are possible (Markdown's and the browser's), it takes the later.
func (s *scanner) lenientConstruct(i int) (end int, comment bool) {
	b := s.body
	r := b[i:]
	orEOF := func(e int) int {
		if e < 0 {
			return len(b)
		}
		return e
	}
	switch {
	case strings.HasPrefix(r, "<!--"):
		return orEOF(s.after("-->", i+4)), true
	case strings.HasPrefix(r, "<![CDATA["):
		return orEOF(s.after("]]>", i+9)), false
	case strings.HasPrefix(r, "<?"):
		return orEOF(s.after("?>", i+2)), false
	case strings.HasPrefix(r, "<!"):
		// A declaration or a "bogus comment": hidden up to the next ">".
		return orEOF(s.after(">", i+2)), false
	case strings.HasPrefix(r, "</>"):
		return i + 3, false
	case len(r) > 2 && r[1] == '/' && !isASCIILetter(r[2]):
		return orEOF(s.after(">", i+2)), false
	}
	name, closing := tagNameAt(r)
	if name == "" {
		return -1, false
	}
	end = s.lenientTagEnd(i)
	if closing || end >= len(b) {
		return end, false
	}
	lname := strings.ToLower(name)
	switch lname {
	case "plaintext":
		return len(b), false
	case "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "template":
		c := indexFold(b, end, "</"+lname)
		if c < 0 {
			return len(b), false
		}
		return orEOF(s.after(">", c)), false
	}
	return end, false
}

// lenientTagEnd finds the ">" that ends a tag, skipping quoted attribute
// values (a quote opens a value only after "=").
func (s *scanner) lenientTagEnd(i int) int {
	b := s.body
	n := len(b)
	for j := i + 1; j < n; {
		k := strings.IndexAny(b[j:], ">=")
		if k < 0 {
			return n
		}
		j += k
		if b[j] == '>' {
			return j + 1
		}
		j = skipSpace(b, j+1)
		if j < n && (b[j] == '"' || b[j] == '\'') {
			q := s.find(b[j:j+1], j+1)
			if q < 0 {
				return n
			}
			j = q + 1
		}
	}
	return n
}

// finder remembers the last search for a needle, so that searching again
// from a later offset costs nothing; this keeps scanning linear even when a
// comment is full of "<!--" with no "-->".
type finder struct {
	from, at int // the search from `from` found the needle at `at` (-1: none)
}

// find returns the offset of the first needle at or after from, or -1.
func (s *scanner) find(needle string, from int) int {
	f := s.finders[needle]
	if f == nil {
		f = &finder{from: -1}
		s.finders[needle] = f
	}
	if f.from >= 0 && from >= f.from && (f.at < 0 || from <= f.at) {
		return f.at
	}
	if from > len(s.body) {
		return -1
	}
	at := strings.Index(s.body[from:], needle)
	if at >= 0 {
		at += from
	}
	f.from, f.at = from, at
	return at
}

// after returns the offset just past the first needle at or after from.
func (s *scanner) after(needle string, from int) int {
	at := s.find(needle, from)
	if at < 0 {
		return -1
	}
	return at + len(needle)
}

// visible returns body[a:b] without the HTML comments in it.
func (s *scanner) visible(a, b int) string {
	k := sort.Search(len(s.comments), func(i int) bool { return s.comments[i].end > a })
	if k == len(s.comments) || s.comments[k].start >= b {
		return s.body[a:b]
	}
	var out strings.Builder
	pos := a
	for ; k < len(s.comments) && s.comments[k].start < b; k++ {
		c := s.comments[k]
		if c.start > pos {
			out.WriteString(s.body[pos:c.start])
		}
		if c.end > pos {
			pos = c.end
		}
	}
	if pos < b {
		out.WriteString(s.body[pos:b])
	}
	return out.String()
}

// openFence reports whether text opens a fenced code block, at top level
// (up to three spaces of indent) or right after list item markers.
func openFence(text string) (fenceState, bool) {
	col, i := indentAt(text, 0, 0)
	if col > 3 {
		return fenceState{}, false
	}
	contentCol := 0
	for {
		m := listMarkerLen(text[i:])
		if m == 0 {
			break
		}
		c2, j := indentAt(text, i+m, col+m)
		w := c2 - (col + m)
		if w < 1 || j == len(text) {
			break
		}
		if w > 4 { // the item's content is an indented code block
			return fenceState{}, false
		}
		col, i, contentCol = c2, j, c2
	}
	r := text[i:]
	if r == "" || (r[0] != '`' && r[0] != '~') {
		return fenceState{}, false
	}
	ch := r[0]
	n := 0
	for n < len(r) && r[n] == ch {
		n++
	}
	if n < 3 {
		return fenceState{}, false
	}
	if ch == '`' && strings.IndexByte(r[n:], '`') >= 0 {
		return fenceState{}, false // a backtick fence's info string has no backticks
	}
	return fenceState{active: true, ch: ch, n: n, contentCol: contentCol}, true
}

// closedBy reports whether text is the closing fence.
func (f fenceState) closedBy(text string) bool {
	col, i := indentAt(text, 0, 0)
	if col-f.contentCol > 3 {
		return false
	}
	n := 0
	for i+n < len(text) && text[i+n] == f.ch {
		n++
	}
	return n >= f.n && isBlank(text[i+n:])
}

// alwaysInterrupts reports whether text ends any open paragraph, whatever
// container the paragraph is in. It must never say yes where GitHub would
// continue the paragraph (that would make hidden inline HTML look visible),
// so it leaves out the cases that depend on context or on the CommonMark
// version: block quote markers, setext "=" underlines, lists not starting
// at 1, and HTML block names not in every version.
func alwaysInterrupts(text string) bool {
	if isBlank(text) {
		return true
	}
	i := 0
	for i < len(text) && i < 3 && text[i] == ' ' {
		i++
	}
	r := text[i:]
	if r == "" || r[0] == ' ' || r[0] == '\t' {
		return false
	}
	if f, ok := openFence(r); ok && f.contentCol == 0 {
		return true
	}
	switch c := r[0]; {
	case c == '#':
		n := 0
		for n < len(r) && r[n] == '#' {
			n++
		}
		return n <= 6 && (n == len(r) || r[n] == ' ' || r[n] == '\t')
	case c == '-' || c == '*' || c == '_':
		if isThematicBreak(r) {
			return true
		}
		return c != '_' && len(r) > 1 && (r[1] == ' ' || r[1] == '\t') && !isBlank(r[2:])
	case c == '+':
		return len(r) > 1 && (r[1] == ' ' || r[1] == '\t') && !isBlank(r[2:])
	case c == '1':
		return len(r) > 2 && (r[1] == '.' || r[1] == ')') && (r[2] == ' ' || r[2] == '\t') && !isBlank(r[3:])
	case c == '<':
		return htmlBlockInterrupts(r)
	}
	return false
}

func isThematicBreak(r string) bool {
	ch := r[0]
	n := 0
	for i := 0; i < len(r); i++ {
		switch r[i] {
		case ch:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// htmlBlockInterrupts reports whether r starts an HTML block of kinds 1-6,
// which may interrupt a paragraph. The tag names are those common to
// CommonMark 0.29 (GitHub's) and later versions.
func htmlBlockInterrupts(r string) bool {
	switch {
	case strings.HasPrefix(r, "<!--"), strings.HasPrefix(r, "<?"), strings.HasPrefix(r, "<![CDATA["):
		return true
	case len(r) > 2 && r[1] == '!' && isASCIILetter(r[2]):
		return true
	}
	name, closing := tagNameAt(r)
	if name == "" {
		return false
	}
	after := r[1+len(name):]
	if closing {
		after = r[2+len(name):]
	}
	lname := strings.ToLower(name)
	if !closing && (lname == "script" || lname == "pre" || lname == "style") {
		return after == "" || after[0] == '>' || after[0] == ' ' || after[0] == '\t'
	}
	if !strings.Contains(blockTagNames, " "+lname+" ") {
		return false
	}
	return after == "" || after[0] == '>' || after[0] == ' ' || after[0] == '\t' || strings.HasPrefix(after, "/>")
}

// blockTagNames lists the HTML block (kind 6) tag names, space-separated.
const blockTagNames = " address article aside base basefont blockquote body" +
	" caption center col colgroup dd details dialog dir div dl dt fieldset figcaption" +
	" figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hr html iframe" +
	" legend li link main menu menuitem nav noframes ol optgroup option p param" +
	" section summary table tbody td tfoot th thead title tr track ul "

// tagNameAt returns the tag name of "<name" or "</name" at the start of r.
func tagNameAt(r string) (name string, closing bool) {
	i := 1
	if len(r) > 1 && r[1] == '/' {
		closing = true
		i = 2
	}
	if i >= len(r) || !isASCIILetter(r[i]) {
		return "", false
	}
	j := i
	for j < len(r) && isTagNameByte(r[j]) {
		j++
	}
	return r[i:j], closing
}

// containerPrefix skips indentation, block quote markers and list item
// markers, returning the offset of the first other character and whether
// any container marker was skipped.
func containerPrefix(text string) (int, bool) {
	i := 0
	prefixed := false
	for i < len(text) {
		switch c := text[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '>':
			i++
			prefixed = true
		default:
			m := listMarkerLen(text[i:])
			if m == 0 || i+m >= len(text) || (text[i+m] != ' ' && text[i+m] != '\t') {
				return i, prefixed
			}
			i += m
			prefixed = true
		}
	}
	return i, prefixed
}

// listMarkerLen returns the length of a list item marker at the start of r
// ("-", "*", "+", or 1-9 digits and "." or ")"), or 0.
func listMarkerLen(r string) int {
	if r == "" {
		return 0
	}
	switch r[0] {
	case '-', '*', '+':
		return 1
	}
	n := 0
	for n < len(r) && n < 9 && r[n] >= '0' && r[n] <= '9' {
		n++
	}
	if n > 0 && n < len(r) && (r[n] == '.' || r[n] == ')') {
		return n + 1
	}
	return 0
}

// indentAt advances over spaces and tabs from byte i (at column col) and
// returns the new column and byte offset. Tabs stop at multiples of 4.
func indentAt(text string, i, col int) (int, int) {
	for i < len(text) {
		switch text[i] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col, i
		}
		i++
	}
	return col, i
}

func indentCols(text string) int {
	col, _ := indentAt(text, 0, 0)
	return col
}

func endsWithLabel(text string) bool {
	return strings.HasSuffix(strings.TrimRight(text, " \t"), "]:")
}

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

func skipSpace(b string, j int) int {
	for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\f') {
		j++
	}
	return j
}

func isASCIILetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isASCIIDigit(c byte) bool  { return c >= '0' && c <= '9' }

func isTagNameByte(c byte) bool { return isASCIILetter(c) || isASCIIDigit(c) || c == '-' }

func isAttrNameStart(c byte) bool { return isASCIILetter(c) || c == '_' || c == ':' }

func isAttrNameByte(c byte) bool {
	return isAttrNameStart(c) || isASCIIDigit(c) || c == '.' || c == '-'
}

func isUnquotedValueByte(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\f', '"', '\'', '=', '<', '>', '`':
		return false
	}
	return true
}

func isASCIIPunct(c byte) bool {
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~')
}

// containsFold reports whether s contains the ASCII needle, ignoring ASCII case.
func containsFold(s, needle string) bool { return indexFold(s, 0, needle) >= 0 }

// indexFold returns the first offset at or after from where the ASCII
// needle occurs in s, ignoring ASCII case, or -1.
func indexFold(s string, from int, needle string) int {
	if needle == "" {
		return from
	}
	first := needle[0] | 0x20
	for i := from; i+len(needle) <= len(s); i++ {
		if s[i]|0x20 != first {
			continue
		}
		if asciiEqualFold(s[i:i+len(needle)], needle) {
			return i
		}
	}
	return -1
}

// asciiEqualFold compares two strings ignoring ASCII case only. Any byte
// outside ASCII must match exactly, so Unicode case folding (where, for
// example, the Kelvin sign folds to "k") can never make two strings equal.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x >= 0x80 || y >= 0x80 {
			return false
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
