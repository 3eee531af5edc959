package fakegithub

// Every body the App writes that GitHub renders as Markdown is judged when
// it is written, by MarkdownEffects, and kept: GitHub notifies a person
// mentioned in any version of a comment, not only its last, and links the
// references of each. Closing keywords count only in a pull request's
// body, and only while it targets the default branch (GitHub ignores them
// elsewhere); a check run's title and its annotations are plain text.

// Kinds of rendered bodies.
const (
	RenderedPull          = "pull"           // a pull request's body
	RenderedComment       = "issue_comment"  // a comment on an issue or pull request
	RenderedReviewComment = "review_comment" // a review comment on a pull request's diff
	RenderedCheckRun      = "check_run"      // a check run's output summary and text
)

// Rendered is one write of a body GitHub renders, and what it did.
type Rendered struct {
	Kind   string
	Number int   // the issue or pull request; 0 for a check run
	ID     int64 // the comment or check run; 0 for a pull request
	Body   string
	Effects
}

// RenderedBodies returns every rendered write to the repository so far, in
// order.
func (s *Server) RenderedBodies(owner, repo string) []Rendered {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil {
		return nil
	}
	return append([]Rendered(nil), r.rendered...)
}

// render judges and keeps one write. closes says whether closing keywords
// act there. Callers hold s.mu.
func (r *repoState) render(kind string, number int, id int64, body string, closes bool) {
	e := MarkdownEffects(body)
	if !closes {
		e.Closes = nil
	}
	r.rendered = append(r.rendered, Rendered{Kind: kind, Number: number, ID: id, Body: body, Effects: e})
}

// renderPull judges a pull request's body as it now stands.
func (r *repoState) renderPull(it *issue) {
	r.render(RenderedPull, it.Number, 0, it.pull.Body, it.pull.BaseRef == r.DefaultBranch)
}
