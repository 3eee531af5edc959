package web

import (
	"strings"
	"testing"
)

// TestRenderAnswerRefusesWhatWouldAct feeds the answer renderer what an
// agent (or a prompt injection through it) could write, and checks the
// page gets Markdown's structure and nothing that runs, loads or points
// anywhere but an absolute http(s) URL.
func TestRenderAnswerRefusesWhatWouldAct(t *testing.T) {
	cases := []struct {
		name, answer string
		want, never  []string
	}{
		{name: "markdown renders", answer: "Fixed `Add` ✅\n\n- **one**\n- two\n\n```go\nx := 1\n```\n",
			want:  []string{"<code>Add</code> ✅", "<li><strong>one</strong></li>", "<pre><code>x := 1\n</code></pre>"},
			never: []string{"`"}},
		{name: "raw script tag", answer: "before\n\n<script>alert(1)</script>\n\nafter <b onclick=\"x()\">bold</b>",
			want: []string{"before", "after"}, never: []string{"<script", "alert(1)", "<b", "onclick"}},
		{name: "inline script shown inert in code", answer: "use `<script>alert(1)</script>`",
			want: []string{"<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>"}, never: []string{"<script"}},
		{name: "raw html block", answer: "<div><iframe src=\"https://evil.example\"></iframe></div>",
			never: []string{"<div", "<iframe", "evil.example"}},
		{name: "javascript link", answer: "[click](javascript:alert(1))",
			want: []string{"click"}, never: []string{"javascript:", "href"}},
		{name: "javascript link, mixed case and entity", answer: "[click](JaVaScRiPt&#58;alert(1))",
			want: []string{"click"}, never: []string{"alert", "href"}},
		{name: "data link", answer: "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
			never: []string{"data:", "href"}},
		{name: "image", answer: "![pixel](https://tracker.example/p.png) and ![d](data:image/png;base64,AAAA)",
			never: []string{"<img", "tracker.example", "data:"}},
		{name: "reference link to javascript", answer: "[go][r]\n\n[r]: javascript:alert(1)\n",
			want: []string{"go"}, never: []string{"javascript", "href"}},
		{name: "reference image", answer: "![i][r]\n\n[r]: https://tracker.example/p.png\n",
			never: []string{"<img", "tracker.example"}},
		{name: "relative link into the dashboard", answer: "[cancel](/sessions/abc/cancel) [up](../x)",
			want: []string{"cancel"}, never: []string{"href"}},
		{name: "autolink", answer: "<javascript:alert(1)>", never: []string{"href", "<a"}},
		{name: "https link kept, inert to the page", answer: "[docs](https://go.dev/doc)",
			want: []string{`href="https://go.dev/doc"`, `rel="nofollow noreferrer noopener"`, `target="_blank"`}},
		{name: "reference link to https", answer: "[docs][d]\n\n[d]: https://go.dev/doc \"title\"\n",
			want: []string{`href="https://go.dev/doc"`, `rel="nofollow noreferrer noopener"`}, never: []string{"title="}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(renderMarkdown(c.answer))
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("rendered %q lacks %q", got, w)
				}
			}
			for _, n := range c.never {
				if strings.Contains(got, n) {
					t.Errorf("rendered %q holds %q", got, n)
				}
			}
		})
	}
}
