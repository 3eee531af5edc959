package web

import (
	"bytes"
	"html/template"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// answerMarkdown turns the agent's answer (untrusted: the agent read the
// repository and the issue) into HTML. goldmark is CommonMark with GitHub's
// tables and strikethrough; it is not given html.WithUnsafe, so raw HTML in
// the answer is dropped and javascript:/vbscript:/file:/data: URLs are
// blanked. Decision 0068.
var answerMarkdown = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))

// answerPolicy is the allowlist the rendered HTML passes through after
// goldmark, so that a renderer bug cannot put anything else on the page:
// text structure, code and tables; links only to absolute http(s) URLs,
// marked nofollow/noreferrer and opened in a new tab; no images, no
// attributes beyond href (and the table's alignment), no relative links
// (which would point into the dashboard itself).
var answerPolicy = func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "em", "strong", "del", "code", "pre", "blockquote",
		"ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
		"table", "thead", "tbody", "tr", "th", "td")
	p.AllowAttrs("align").Matching(bluemonday.Paragraph).OnElements("th", "td")
	p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https")
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(false)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}()

// renderMarkdown is untrusted Markdown (the agent's answer, the outcome
// sentence written for GitHub) as safe HTML for the session page, or the
// text escaped in a <pre> if goldmark fails (it only fails on a writer
// error, which a bytes.Buffer never returns).
func renderMarkdown(answer string) template.HTML {
	var buf bytes.Buffer
	if err := answerMarkdown.Convert([]byte(answer), &buf); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(answer) + "</pre>")
	}
	return template.HTML(answerPolicy.SanitizeBytes(buf.Bytes()))
}
