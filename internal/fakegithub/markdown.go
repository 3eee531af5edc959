package fakegithub

import (
	"regexp"
	"strings"
)

// What GitHub does with a Markdown body it renders (a pull request's body,
// a comment, a check run's output), by its documented rules, so that a
// test judges Inspect's words as GitHub would rather than by looking for
// strings:
//
//   - Closing keywords (docs.github.com, "Linking a pull request to an
//     issue"): close, closes, closed, fix, fixes, fixed, resolve, resolves
//     and resolved, in any case, optionally followed by a colon, then a
//     reference: #N, OWNER/REPO#N, or the URL. In a pull request's
//     body they close the issue when the pull request is merged into the
//     default branch.
//   - References ("Autolinked references and URLs"): #N, GH-N,
//     OWNER/REPO#N and issue or pull request URLs link the issue, and the
//     issue's timeline shows the reference.
//   - Mentions ("Basic writing and formatting syntax"): @LOGIN notifies the
//     person, @ORG/TEAM the team.
//   - Images: ![alt](url), ![alt][ref] with its definition, and <img> load
//     their URL (through GitHub's image proxy, but they load).
//   - Raw HTML: tags, comments, declarations and processing instructions
//     are rendered (sanitised, but rendered).
//
// None of these happens inside code: a fenced code block (``` or ~~~, at
// least three, after up to three spaces, closed by a fence of the same
// character at least as long, or by the end of its block quote, or by
// nothing before the end) or a code span (a run of backticks closed by the
// next run of the same length; a backslash-escaped backtick opens none).
// Everything else counts, including block quotes, link texts, HTML blocks
// and indented code, which this model does not tell apart, and a code span
// that would continue onto the next line: where it cannot be sure, it says
// a body acts, so a test can only pass where GitHub would be as quiet.

// Effects is what a Markdown body does on GitHub. Every list is in the
// order of the body and may repeat.
type Effects struct {
	// Closes are the issues the body would close as a pull request's body
	// merged into the default branch, as "#3" or "owner/repo#9" (a URL
	// reference is given in the latter form).
	Closes []string
	// References are every issue and pull request reference the body
	// links, closing or not, in the same forms (GH-3 as "#3").
	References []string
	// Mentions are the people and teams the body notifies: "@login",
	// "@org/team".
	Mentions []string
	// Images are the URLs of the images the body loads ("" for an <img>
	// without a src).
	Images []string
	// HTML are the raw HTML constructs it renders: tag names in lower case
	// ("img", "details", "/details"), "!--" for a comment, "!" for a
	// declaration, "?" for a processing instruction.
	HTML []string
}

// Acts reports whether the body does anything at all beyond showing text.
func (e Effects) Acts() bool {
	return len(e.Closes)+len(e.References)+len(e.Mentions)+len(e.Images)+len(e.HTML) > 0
}

// MarkdownEffects is what body does when GitHub renders it (see Effects).
func MarkdownEffects(body string) Effects {
	var e Effects
	lines := visibleText(body)
	defs := imageDefinitions(lines)
	for _, l := range lines {
		scanEffects(l, defs, &e)
	}
	return e
}

// visibleText returns the lines of body outside fenced code blocks, with
// their code spans replaced by a space. A code span is looked for within
// one line (GitHub's may continue onto the paragraph's next line; taking it
// as text says more acts, never less), and within one cell of a table row.
func visibleText(body string) []string {
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
	var out []string
	var fence struct {
		open  bool
		ch    byte
		n     int
		depth int // the block quote depth it opened at
	}
	for _, line := range strings.Split(body, "\n") {
		if fence.open {
			depth, rest := quotePrefix(line, fence.depth)
			if depth < fence.depth {
				fence.open = false // the quote ended, and the code block in it
			} else {
				if ch, n, info, ok := fenceRun(rest); ok && ch == fence.ch && n >= fence.n && strings.TrimSpace(info) == "" {
					fence.open = false
				}
				continue
			}
		}
		depth, rest := quotePrefix(line, -1)
		if ch, n, info, ok := fenceRun(rest); ok && (ch == '~' || !strings.Contains(info, "`")) {
			fence.open, fence.ch, fence.n, fence.depth = true, ch, n, depth
			continue
		}
		out = append(out, withoutCodeSpans(rest))
	}
	return out
}

// quotePrefix strips up to max block quote markers (">" after up to three
// spaces, and one space after it; max < 0 for all of them) and returns how
// many there were.
func quotePrefix(line string, max int) (int, string) {
	depth := 0
	for max < 0 || depth < max {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 || !strings.HasPrefix(t, ">") {
			break
		}
		depth++
		line = strings.TrimPrefix(t[1:], " ")
	}
	return depth, line
}

// fenceRun reports whether line (outside its quote markers) is a code fence
// line: up to three spaces, then three or more of ` or ~, then the info.
func fenceRun(line string) (ch byte, n int, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || t == "" || (t[0] != '`' && t[0] != '~') {
		return 0, 0, "", false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, "", false
	}
	return ch, n, t[n:], true
}

// withoutCodeSpans replaces each code span of a line by a space; a table
// row's cells are split at their unescaped pipes first, as GFM does.
func withoutCodeSpans(line string) string {
	if !strings.HasPrefix(strings.TrimSpace(line), "|") {
		return spansOut(line)
	}
	var b strings.Builder
	start := 0
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\':
			i++
		case line[i] == '|':
			b.WriteString(spansOut(line[start:i]))
			b.WriteByte('|')
			start = i + 1
		}
	}
	b.WriteString(spansOut(line[min(start, len(line)):]))
	return b.String()
}

// spansOut replaces the code spans of a piece of text by a space.
func spansOut(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		if p[i] == '\\' && i+1 < len(p) {
			b.WriteString(p[i : i+2])
			i += 2
			continue
		}
		if p[i] != '`' {
			b.WriteByte(p[i])
			i++
			continue
		}
		n := backtickRun(p, i)
		end := closingRun(p, i+n, n)
		if end < 0 {
			b.WriteString(p[i : i+n]) // no closer: literal backticks
			i += n
			continue
		}
		b.WriteByte(' ')
		i = end + n
	}
	return b.String()
}

func backtickRun(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// closingRun finds the next run of exactly n backticks from i, or -1.
func closingRun(s string, i, n int) int {
	for i < len(s) {
		if s[i] != '`' {
			i++
			continue
		}
		m := backtickRun(s, i)
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

const (
	loginRE = `[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}`
	repoRE  = `[A-Za-z0-9._-]+`
	// refRE is one issue reference: OWNER/REPO#N, #N or a URL's path.
	refRE = `(?:(` + loginRE + `/` + repoRE + `)#([0-9]+)|#([0-9]+)|https?://[^/\s]+/(` + loginRE + `/` + repoRE + `)/(?:issues|pull)/([0-9]+))`
)

var (
	closingPattern   = regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9_])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?[ \t]+` + refRE + `(?:$|[^A-Za-z0-9_])`)
	referencePattern = regexp.MustCompile(`(?:^|[^A-Za-z0-9_&/])` + refRE + `(?:$|[^A-Za-z0-9_])`)
	ghPattern        = regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9_])GH-([0-9]+)(?:$|[^A-Za-z0-9_])`)
	mentionPattern   = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])@(` + loginRE + `(?:/[A-Za-z0-9_-]+)?)`)
	imagePattern     = regexp.MustCompile(`!\[[^\]]*\]\(\s*<?([^)\s>]*)`)
	imageRefPattern  = regexp.MustCompile(`!\[([^\]]*)\]\[([^\]]*)\]`)
	imageDefPattern  = regexp.MustCompile(`^ {0,3}\[([^\]]+)\]:\s*<?(\S*?)>?(?:\s|$)`)
	htmlPattern      = regexp.MustCompile(`<(/?[A-Za-z][A-Za-z0-9-]*)(?:[\s/>]|$)|<(!--|!|\?)`)
	imgSrcPattern    = regexp.MustCompile(`(?i)<img\b[^>]*?\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))`)
	imgTagPattern    = regexp.MustCompile(`(?i)<img\b[^>]*>?`)
)

// imageDefinitions are the link reference definitions, by lower-case label.
func imageDefinitions(lines []string) map[string]string {
	defs := map[string]string{}
	for _, l := range lines {
		for _, m := range imageDefPattern.FindAllStringSubmatch(l, -1) {
			defs[strings.ToLower(m[1])] = m[2]
		}
	}
	return defs
}

// scanEffects adds what one line of visible text does.
func scanEffects(s string, defs map[string]string, e *Effects) {
	for _, m := range findAllOverlapping(closingPattern, s) {
		e.Closes = append(e.Closes, refName(m))
	}
	for _, m := range findAllOverlapping(referencePattern, s) {
		e.References = append(e.References, refName(m))
	}
	for _, m := range findAllOverlapping(ghPattern, s) {
		e.References = append(e.References, "#"+m[1])
	}
	for _, m := range mentionPattern.FindAllStringSubmatch(s, -1) {
		e.Mentions = append(e.Mentions, "@"+m[1])
	}
	for _, m := range imagePattern.FindAllStringSubmatch(s, -1) {
		e.Images = append(e.Images, m[1])
	}
	for _, m := range imageRefPattern.FindAllStringSubmatch(s, -1) {
		label := m[2]
		if label == "" {
			label = m[1] // ![x][] uses the alt text as its label
		}
		if url, ok := defs[strings.ToLower(label)]; ok {
			e.Images = append(e.Images, url)
		}
	}
	for _, m := range htmlPattern.FindAllStringSubmatch(s, -1) {
		if m[1] != "" {
			e.HTML = append(e.HTML, strings.ToLower(m[1]))
		} else {
			e.HTML = append(e.HTML, m[2])
		}
	}
	for _, m := range imgSrcPattern.FindAllStringSubmatch(s, -1) {
		e.Images = append(e.Images, m[1]+m[2]+m[3])
	}
	for _, m := range imgTagPattern.FindAllString(s, -1) {
		if !imgSrcPattern.MatchString(m) {
			e.Images = append(e.Images, "")
		}
	}
}

// findAllOverlapping is FindAllStringSubmatch for patterns whose matches
// end with the character after them: it searches again from just before
// that character, so "#1 #2" finds both.
func findAllOverlapping(re *regexp.Regexp, s string) [][]string {
	var out [][]string
	for from := 0; from < len(s); {
		loc := re.FindStringSubmatchIndex(s[from:])
		if loc == nil {
			break
		}
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = s[from+loc[2*i] : from+loc[2*i+1]]
			}
		}
		out = append(out, m)
		next := from + loc[1]
		if loc[1] > loc[0] && next > from+loc[0]+1 {
			next-- // the boundary character may start the next match
		}
		if next <= from {
			next = from + 1
		}
		from = next
	}
	return out
}

// refName is the reference a closing or reference match names.
func refName(m []string) string {
	switch {
	case m[1] != "":
		return m[1] + "#" + m[2]
	case m[3] != "":
		return "#" + m[3]
	}
	return m[4] + "#" + m[5]
}
