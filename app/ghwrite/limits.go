package ghwrite

import (
	"unicode/utf8"

	"github.com/google/go-github/v62/github"
)

// GitHub's documented limits on the texts Inspect sends. Each verb here
// cuts what it sends to them, with a visible note, so a long text (an
// agent's output quoted in a reply) shortens what GitHub shows instead of
// making GitHub refuse the whole write (docs/decisions/0032).
const (
	// MaxCheckOutput is a check run's output.summary and output.text:
	// "maxLength: 65535" in GitHub's OpenAPI description, in characters.
	MaxCheckOutput = 65535
	// MaxAnnotationTitle is an annotation's title: "The title of the
	// annotation. Maximum 255 characters."
	MaxAnnotationTitle = 255
	// MaxAnnotationBytes is an annotation's message and raw_details: "64
	// KB" each. Counted in bytes, the stricter reading, one short of 64 KiB.
	MaxAnnotationBytes = 64<<10 - 1
	// MaxCommentBody is an issue, pull request or review comment's body:
	// "Body is too long (maximum is 65536 characters)".
	MaxCommentBody = 65536
	// MaxPRTitle is a pull request's (an issue's) title: GitHub answers
	// 422 "title is too long (maximum is 256 characters)".
	MaxPRTitle = 256
	// MaxPRBody is a pull request's body, limited as a comment's is.
	MaxPRBody = MaxCommentBody
)

// cutNote is what ends a cut text, so a reader knows there was more.
const cutNote = "\n\n… (cut: longer than GitHub allows)"

// CutRunes is s, or when s has more than limit characters, its start and
// cutNote, limit characters in all. A limit too small for the note gets a
// plain cut.
func CutRunes(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	note := cutNote
	if n := utf8.RuneCountInString(note); n >= limit {
		note = ""
	}
	keep := limit - utf8.RuneCountInString(note)
	i, n := 0, 0
	for i < len(s) && n < keep {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return s[:i] + note
}

// CutBytes is s, or when s is longer than limit bytes, its start (whole
// characters only) and cutNote, at most limit bytes in all.
func CutBytes(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := cutNote
	if len(note) >= limit {
		note = ""
	}
	keep := limit - len(note)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note
}

// cutOutput is a copy of o cut to GitHub's limits (nil for nil): the
// caller's output is left as it is.
func cutOutput(in *github.CheckRunOutput) *github.CheckRunOutput {
	if in == nil {
		return nil
	}
	o := *in
	o.Annotations = append([]*github.CheckRunAnnotation(nil), in.Annotations...)
	if o.Summary != nil {
		o.Summary = github.String(CutRunes(*o.Summary, MaxCheckOutput))
	}
	if o.Text != nil {
		o.Text = github.String(CutRunes(*o.Text, MaxCheckOutput))
	}
	for i, a := range o.Annotations {
		c := *a
		if c.Title != nil {
			c.Title = github.String(CutRunes(*c.Title, MaxAnnotationTitle))
		}
		if c.Message != nil {
			c.Message = github.String(CutBytes(*c.Message, MaxAnnotationBytes))
		}
		if c.RawDetails != nil {
			c.RawDetails = github.String(CutBytes(*c.RawDetails, MaxAnnotationBytes))
		}
		o.Annotations[i] = &c
	}
	return &o
}

// withMarker is body and, on a line of its own, marker, the body cut so
// that the whole fits a comment: the marker is what a replay looks for, so
// it is never the part that is cut.
func withMarker(body, marker string) string {
	return CutRunes(body, MaxCommentBody-utf8.RuneCountInString(marker)-1) + "\n" + marker
}
