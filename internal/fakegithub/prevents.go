package fakegithub

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A pull request's end and its reviews, and the webhooks GitHub sends of
// them (issue 38): `pull_request` closed and reopened,
// `pull_request_review` submitted and `pull_request_review_comment`
// created, each shaped as GitHub's webhook payloads document them (the
// octokit/webhooks examples; prevents_test.go holds them to
// /work/shared/fixtures/github-webhooks). Each method changes the stand-in
// as GitHub would and returns the payload; the test sends it with Deliver.

const (
	docsReviews     = "https://docs.github.com/rest/pulls/reviews"
	docsListReviews = docsReviews + "#list-reviews-for-a-pull-request"
)

// review is a submitted pull request review.
type review struct {
	id        int64
	user      string
	state     string // APPROVED, CHANGES_REQUESTED, COMMENTED (the REST spelling)
	body      string
	commitID  string
	submitted string // timestamp
}

func (s *Server) reviewRoutes() {
	s.handle("GET /repos/{owner}/{repo}/pulls/{number}/reviews", docsListReviews, repoGate("pull_requests"), s.listReviews)
}

// pullFor is the pull request, or a panic naming it (a test's mistake).
// Callers hold s.mu.
func (s *Server) pullFor(owner, repo string, number int) (*repoState, *issue) {
	r := s.mustRepo(owner, repo)
	it := r.issues[number]
	if it == nil || it.pull == nil {
		panic(fmt.Sprintf("fakegithub: no pull #%d in %s/%s", number, owner, repo))
	}
	return r, it
}

// ClosePull closes an open pull request as `by`, merging it when merge (a
// merge commit of a made-up SHA, merged_by `by`), and returns the
// `pull_request` "closed" payload. It returns the merge commit's SHA ("" when
// not merged).
func (s *Server) ClosePull(owner, repo string, number int, by string, merge bool) (payload []byte, mergeSHA string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, it := s.pullFor(owner, repo, number)
	if it.State != "open" {
		panic(fmt.Sprintf("fakegithub: pull #%d is not open", number))
	}
	now := s.now()
	it.State, it.closedAt, it.updatedAt, it.closedBy = "closed", now, now, by
	if merge {
		it.pull.Merged, it.mergedBy = true, by
		it.mergeSHA = fakeSHA(r.fullName(), "merge", strconv.Itoa(number))
		mergeSHA = it.mergeSHA
	}
	return s.pullEvent(r, it, "closed", by), mergeSHA
}

// MergePullAs merges an open pull request as `by` with mergeSHA as its
// merge commit (one the test made on the base branch, as a squash merge
// would), and returns the `pull_request` "closed" payload.
func (s *Server) MergePullAs(owner, repo string, number int, by, mergeSHA string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, it := s.pullFor(owner, repo, number)
	if it.State != "open" {
		panic(fmt.Sprintf("fakegithub: pull #%d is not open", number))
	}
	now := s.now()
	it.State, it.closedAt, it.updatedAt, it.closedBy = "closed", now, now, by
	it.pull.Merged, it.mergedBy, it.mergeSHA = true, by, mergeSHA
	return s.pullEvent(r, it, "closed", by)
}

// ReopenPull reopens a closed, unmerged pull request as `by` and returns
// the `pull_request` "reopened" payload.
func (s *Server) ReopenPull(owner, repo string, number int, by string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, it := s.pullFor(owner, repo, number)
	if it.State != "closed" || it.pull.Merged {
		panic(fmt.Sprintf("fakegithub: pull #%d cannot be reopened", number))
	}
	it.State, it.closedAt, it.updatedAt, it.closedBy = "open", time.Time{}, s.now(), ""
	return s.pullEvent(r, it, "reopened", by)
}

// SubmitReview records a review by `by` (state "APPROVED",
// "CHANGES_REQUESTED" or "COMMENTED") and returns the
// `pull_request_review` "submitted" payload.
func (s *Server) SubmitReview(owner, repo string, number int, by, state, body string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, it := s.pullFor(owner, repo, number)
	rv := &review{id: s.nextID(), user: by, state: state, body: body, commitID: it.pull.HeadSHA, submitted: timestamp(s.now())}
	it.reviews = append(it.reviews, rv)
	p := s.eventBase(r, by)
	p["action"] = "submitted"
	p["review"] = s.reviewJSON(r, it, rv, true)
	p["pull_request"] = s.webhookPull(r, it, false)
	return mustJSON(p)
}

// ReviewCommentEvent is the `pull_request_review_comment` "created"
// payload of a review comment AddReviewComment made.
func (s *Server) ReviewCommentEvent(owner, repo string, commentID int64) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	cm := r.reviewCms[commentID]
	if cm == nil {
		panic(fmt.Sprintf("fakegithub: no review comment %d in %s/%s", commentID, owner, repo))
	}
	it := r.issues[cm.number]
	p := s.eventBase(r, cm.User)
	p["action"] = "created"
	p["comment"] = s.reviewCommentJSON(r, rendered(r, cm))
	p["pull_request"] = s.webhookPull(r, it, false)
	return mustJSON(p)
}

// pullEvent is a `pull_request` payload: action, number, the pull request,
// repository, installation and sender. Callers hold s.mu.
func (s *Server) pullEvent(r *repoState, it *issue, action, sender string) []byte {
	p := s.eventBase(r, sender)
	p["action"] = action
	p["number"] = it.Number
	p["pull_request"] = s.webhookPull(r, it, true)
	return mustJSON(p)
}

// webhookPull is a pull request as webhooks carry it: the REST form with
// the repositories' custom_properties and active_lock_reason, and, in
// `pull_request` events (full), the counts of the full pull request. The
// stand-in does not model diffs, so a pull counts one commit changing one
// file by one line either way, as GitHub's example does.
func (s *Server) webhookPull(r *repoState, it *issue, full bool) map[string]any {
	p := s.pullJSON(r, it)
	p["active_lock_reason"] = nil
	for _, side := range []string{"head", "base"} {
		if repo, ok := p[side].(map[string]any)["repo"].(map[string]any); ok {
			repo["custom_properties"] = map[string]any{}
		}
	}
	if full {
		p["commits"], p["additions"], p["deletions"], p["changed_files"] = 1, 1, 1, 1
		p["rebaseable"] = nil
	}
	return p
}

// eventBase is what every App webhook payload of a repository carries.
func (s *Server) eventBase(r *repoState, sender string) map[string]any {
	repo := s.repoJSON(r)
	repo["custom_properties"] = map[string]any{}
	return map[string]any{
		"repository":   repo,
		"installation": map[string]any{"id": r.InstallationID, "node_id": fmt.Sprintf("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u%d", r.InstallationID)},
		"sender":       s.ensureUser(sender, "").json(s),
	}
}

// reviewJSON is a review as the REST API (state upper case) or a webhook
// (lower case) spells it.
func (s *Server) reviewJSON(r *repoState, it *issue, rv *review, webhook bool) map[string]any {
	state := rv.state
	if webhook {
		state = strings.ToLower(state)
	}
	pull := fmt.Sprintf("%srepos/%s/pulls/%d", s.APIURL(), r.fullName(), it.Number)
	html := fmt.Sprintf("%s/%s/pull/%d#pullrequestreview-%d", s.URL(), r.fullName(), it.Number, rv.id)
	return map[string]any{
		"id":                 rv.id,
		"node_id":            fmt.Sprintf("PRR_%d", rv.id),
		"user":               s.ensureUser(rv.user, "").json(s),
		"body":               rv.body,
		"commit_id":          rv.commitID,
		"submitted_at":       rv.submitted,
		"state":              state,
		"html_url":           html,
		"pull_request_url":   pull,
		"author_association": s.authorAssociation(r, rv.user),
		"_links":             map[string]any{"html": map[string]any{"href": html}, "pull_request": map[string]any{"href": pull}},
	}
}

func (s *Server) listReviews(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	out := make([]map[string]any, 0, len(it.reviews))
	for _, rv := range it.reviews {
		out = append(out, s.reviewJSON(c.repo, it, rv, false))
	}
	return page(c, out)
}

// userOrNil is a login's simple-user, or null for "".
func (s *Server) userOrNil(login string) any {
	if login == "" {
		return nil
	}
	return s.ensureUser(login, "").json(s)
}

func stringOrNil(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of JSON values always marshal
	}
	return b
}
