package fakegithub

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	docsPulls     = "https://docs.github.com/rest/pulls/pulls"
	docsGetPull   = docsPulls + "#get-a-pull-request"
	docsReviewReq = "https://docs.github.com/rest/pulls/review-requests"
)

// Pull is a pull request to seed with AddPull.
type Pull struct {
	Number                int // 0: the repo's next number
	Title, Body           string
	State                 string // "open" (default) or "closed"; merged pulls are closed
	Merged, Draft, Locked bool
	User                  string   // author login; "octocat" when empty
	HeadSHA               string   // the head branch's commit, or a made-up SHA, when empty
	HeadRef, BaseRef      string   // BaseRef defaults to the default branch
	HeadRepoFullName      string   // "" = same repo; "someone/fork" = a fork
	Labels                []string // label names, in order; labels the repo lacks are created
}

// AddPull seeds a pull request. As on GitHub, it is an issue too: it shares
// the issue number sequence, and GET .../issues/{number} answers it with a
// "pull_request" key.
//
// An open, same-repo pull follows its head branch, as on GitHub, when its
// HeadSHA is empty or a commit the repo has: while the branch exists, the
// pull's head is the branch's commit, and it moves when the branch moves.
// A HeadSHA that is no commit of the repo (a made-up one) is kept as is.
func (s *Server) AddPull(owner, repo string, p Pull) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	if p.Merged {
		p.State = "closed"
	}
	if p.BaseRef == "" {
		p.BaseRef = r.DefaultBranch
	}
	it := s.putIssue(r, Issue{Number: p.Number, Title: p.Title, Body: p.Body, State: p.State, Locked: p.Locked, User: p.User, Labels: p.Labels}, nil)
	p.Labels = nil // the labels live in issue.labels
	p.Number, p.State, p.User = it.Number, it.State, it.User
	if p.HeadRef == "" {
		p.HeadRef = fmt.Sprintf("patch-%d", p.Number)
	}
	it.followsHead = p.HeadSHA == "" || (r.gitDir != "" && s.objectType(r, strings.ToLower(p.HeadSHA)) == "commit")
	if p.HeadSHA == "" {
		p.HeadSHA = fakeSHA(r.fullName(), "pull", fmt.Sprint(p.Number))
	}
	it.pull = &p
	it.reviewers = nil
	s.followHead(r, it)
}

// RequestedReviewers returns the logins whose review was requested on a
// pull request and not withdrawn, in the order they were requested.
func (s *Server) RequestedReviewers(owner, repo string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil || r.issues[number] == nil {
		return nil
	}
	return slices.Clone(r.issues[number].reviewers)
}

func (s *Server) pullRoutes() {
	g := repoGate("pull_requests")
	s.handle("GET /repos/{owner}/{repo}/pulls", docsPulls+"#list-pull-requests", g, s.listPulls)
	s.handle("POST /repos/{owner}/{repo}/pulls", docsPulls+"#create-a-pull-request", g, s.createPull)
	s.handle("GET /repos/{owner}/{repo}/pulls/{number}", docsGetPull, g, s.getPull)
	s.handle("PATCH /repos/{owner}/{repo}/pulls/{number}", docsPulls+"#update-a-pull-request", g, s.updatePull)
	s.handle("GET /repos/{owner}/{repo}/pulls/{number}/requested_reviewers", docsReviewReq+"#get-all-requested-reviewers-for-a-pull-request", g, s.listReviewRequests)
	s.handle("POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers", docsReviewReq+"#request-reviewers-for-a-pull-request", g, s.requestReviewers)
	s.handle("DELETE /repos/{owner}/{repo}/pulls/{number}/requested_reviewers", docsReviewReq+"#remove-requested-reviewers-from-a-pull-request", g, s.removeReviewRequests)
}

// fakeSHA is a stable, made-up commit SHA for things this stand-in does not
// model as commits (a branch's head, a seeded pull's head).
func fakeSHA(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}

func mergedAt(it *issue) any {
	if it.pull != nil && it.pull.Merged {
		if !it.closedAt.IsZero() {
			return timestamp(it.closedAt) // merged by ClosePull
		}
		return timestamp(it.createdAt)
	}
	return nil
}

// forkJSON describes a head repository that is a fork, which this stand-in
// knows only by name.
func (s *Server) forkJSON(fullName string) map[string]any {
	owner, name, _ := strings.Cut(fullName, "/")
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(fullName)))
	id := int64(h.Sum32()) + 1_000_000_000
	fork := s.repoJSON(&repoState{Repo: Repo{ID: id, Owner: owner, Name: name, DefaultBranch: "main"}})
	fork["fork"] = true
	return fork
}

func (s *Server) pullJSON(r *repoState, it *issue) map[string]any {
	p := it.pull
	api := fmt.Sprintf("%srepos/%s/pulls/%d", s.APIURL(), r.fullName(), it.Number)
	html := fmt.Sprintf("%s/%s/pull/%d", s.URL(), r.fullName(), it.Number)
	base := s.repoJSON(r)
	headRepo := base
	if p.HeadRepoFullName != "" && !strings.EqualFold(p.HeadRepoFullName, r.fullName()) {
		headRepo = s.forkJSON(p.HeadRepoFullName)
	}
	headOwner := headRepo["owner"].(map[string]any)
	m := map[string]any{
		"id":                    it.id,
		"node_id":               fmt.Sprintf("PR_%d", it.id),
		"number":                it.Number,
		"state":                 it.State,
		"title":                 it.Title,
		"body":                  it.Body,
		"locked":                it.Locked,
		"draft":                 p.Draft,
		"merged":                p.Merged,
		"merged_at":             mergedAt(it),
		"mergeable":             nil,
		"mergeable_state":       "unknown", // what GitHub says until it has computed mergeability
		"review_comments":       len(it.reviewCms),
		"commits_url":           api + "/commits",
		"review_comments_url":   api + "/comments",
		"review_comment_url":    fmt.Sprintf("%srepos/%s/pulls/comments{/number}", s.APIURL(), r.fullName()),
		"statuses_url":          fmt.Sprintf("%srepos/%s/statuses/%s", s.APIURL(), r.fullName(), p.HeadSHA),
		"maintainer_can_modify": false,
		"user":                  s.ensureUser(it.User, "").json(s),
		"author_association":    s.authorAssociation(r, it.User),
		"labels":                s.labelsJSON(r, it.labels),
		"requested_reviewers":   s.reviewersJSON(it),
		"requested_teams":       []any{},
		"assignee":              nil,
		"assignees":             []any{},
		"milestone":             nil,
		"auto_merge":            nil,
		"merged_by":             s.userOrNil(it.mergedBy),
		"merge_commit_sha":      stringOrNil(it.mergeSHA),
		"_links": map[string]any{
			"self":            map[string]any{"href": api},
			"html":            map[string]any{"href": html},
			"issue":           map[string]any{"href": fmt.Sprintf("%srepos/%s/issues/%d", s.APIURL(), r.fullName(), it.Number)},
			"comments":        map[string]any{"href": fmt.Sprintf("%srepos/%s/issues/%d/comments", s.APIURL(), r.fullName(), it.Number)},
			"review_comments": map[string]any{"href": api + "/comments"},
			"review_comment":  map[string]any{"href": fmt.Sprintf("%srepos/%s/pulls/comments{/number}", s.APIURL(), r.fullName())},
			"commits":         map[string]any{"href": api + "/commits"},
			"statuses":        map[string]any{"href": fmt.Sprintf("%srepos/%s/statuses/%s", s.APIURL(), r.fullName(), p.HeadSHA)},
		},
		"head": map[string]any{
			"label": fmt.Sprintf("%s:%s", headOwner["login"], p.HeadRef),
			"ref":   p.HeadRef,
			"sha":   p.HeadSHA,
			"user":  headOwner,
			"repo":  headRepo,
		},
		"base": map[string]any{
			"label": fmt.Sprintf("%s:%s", r.Owner, p.BaseRef),
			"ref":   p.BaseRef,
			"sha":   r.branchSHAOrFake(p.BaseRef),
			"user":  base["owner"],
			"repo":  base,
		},
		"url":          api,
		"html_url":     html,
		"diff_url":     html + ".diff",
		"patch_url":    html + ".patch",
		"issue_url":    fmt.Sprintf("%srepos/%s/issues/%d", s.APIURL(), r.fullName(), it.Number),
		"comments_url": fmt.Sprintf("%srepos/%s/issues/%d/comments", s.APIURL(), r.fullName(), it.Number),
		"comments":     len(it.comments),
		"created_at":   timestamp(it.createdAt),
		"updated_at":   timestamp(it.updated()),
		"closed_at":    it.closedAtJSON(),
	}
	return m
}

// getPull answers a pull request. An issue number that is not a pull
// request is a 404, as on GitHub.
func (s *Server) getPull(c *call) response {
	if c.r.PathValue("number") == "comments" {
		return s.listRepoReviewComments(c)
	}
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.pullJSON(c.repo, it))
}

func (s *Server) reviewersJSON(it *issue) []any {
	out := []any{}
	for _, login := range it.reviewers {
		out = append(out, s.ensureUser(login, "").json(s))
	}
	return out
}

// A pull request's title and body limits, in characters: GitHub answers
// 422 "title is too long (maximum is 256 characters)" and "body is too
// long (maximum is 65536 characters)".
const (
	maxPullTitle = 256
	maxPullBody  = 65536
)

// checkPullTexts checks a pull request's title and body (either nil when
// not sent) against GitHub's limits.
func checkPullTexts(doc string, title, body *string) *response {
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{{"title", title, maxPullTitle}, {"body", body, maxPullBody}} {
		if f.v != nil && utf8.RuneCountInString(*f.v) > f.max {
			r := validationFailed(doc, pullErr(f.name, "custom", fmt.Sprintf("%s is too long (maximum is %d characters)", f.name, f.max)))
			return &r
		}
	}
	return nil
}

func pullErr(field, code, msg string) fieldError {
	return fieldError{Resource: "PullRequest", Field: field, Code: code, Message: msg}
}

// openPullFor finds another open pull request from a same-repo head branch
// into a base branch.
func openPullFor(r *repoState, head, base string, except int) *issue {
	for _, it := range r.issues {
		if it.pull != nil && it.Number != except && it.State == "open" && sameRepoHead(r, it.pull) &&
			it.pull.HeadRef == head && it.pull.BaseRef == base {
			return it
		}
	}
	return nil
}

// createPull opens a pull request from a branch of the repo, as the App's
// bot. GitHub refuses, with a 422: a missing title, head or base; a head or
// base branch that does not exist; a head with no commits the base lacks
// (a head equal to the base among them); a second open pull request
// for the same head and base; a draft where the repository's visibility
// and owner's plan allow none (Repo.takesDrafts); and a title or body over
// GitHub's limits.
func (s *Server) createPull(c *call) response {
	var req struct {
		Title *string `json:"title"`
		Head  *string `json:"head"`
		Base  *string `json:"base"`
		Body  *string `json:"body"`
		Draft *bool   `json:"draft"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	var missing []fieldError
	for _, f := range []struct {
		name string
		v    *string
	}{{"title", req.Title}, {"head", req.Head}, {"base", req.Base}} {
		if f.v == nil || *f.v == "" {
			missing = append(missing, pullErr(f.name, "missing_field", ""))
		}
	}
	if len(missing) > 0 {
		return validationFailed(c.doc, missing...)
	}
	r := c.repo
	head, base := *req.Head, *req.Base
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		// "owner:branch". A head in another owner's fork is beyond this
		// stand-in, which has no forks: it does not exist here.
		if !strings.EqualFold(owner, r.Owner) {
			return validationFailed(c.doc, pullErr("head", "invalid", ""))
		}
		head = branch
	}
	baseSHA, headSHA := r.branchSHA(base), r.branchSHA(head)
	if baseSHA == "" {
		return validationFailed(c.doc, pullErr("base", "invalid", ""))
	}
	if headSHA == "" {
		return validationFailed(c.doc, pullErr("head", "invalid", ""))
	}
	if head == base {
		return validationFailed(c.doc, pullErr("", "custom", fmt.Sprintf("No commits between %s and %s", base, head)))
	}
	ahead, err := s.git(r, nil, nil, "rev-list", "--count", baseSHA+".."+headSHA)
	if err != nil {
		return gitFailure(err)
	}
	if strings.TrimSpace(string(ahead)) == "0" {
		return validationFailed(c.doc, pullErr("", "custom", fmt.Sprintf("No commits between %s and %s", base, head)))
	}
	if openPullFor(r, head, base, 0) != nil {
		return validationFailed(c.doc, pullErr("", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", r.Owner, head)))
	}
	if req.Draft != nil && *req.Draft && !r.takesDrafts() {
		return errResp(http.StatusUnprocessableEntity, "Draft pull requests are not supported in this repository.", c.doc)
	}
	if bad := checkPullTexts(c.doc, req.Title, req.Body); bad != nil {
		return *bad
	}

	// The author is who the credential is: the App's bot for an
	// installation token, the user for a user access token (oauth.go).
	author := s.botLogin()
	if c.cred.kind == authUser {
		if u := s.users[strings.ToLower(c.cred.userLogin)]; u != nil {
			author = u.login
		}
	}
	body := ""
	if req.Body != nil {
		body = *req.Body
	}
	it := s.putIssue(r, Issue{Title: *req.Title, Body: body, User: author}, nil)
	it.pull = &Pull{
		Number: it.Number, Title: it.Title, Body: body, State: "open", User: author,
		Draft:   req.Draft != nil && *req.Draft,
		HeadSHA: headSHA, HeadRef: head, BaseRef: base,
	}
	it.followsHead = true
	r.renderPull(it)
	out := s.pullJSON(r, it)
	return response{status: http.StatusCreated, body: out, header: http.Header{"Location": {out["url"].(string)}}}
}

// updatePull edits a pull request's title, body, state or base.
func (s *Server) updatePull(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	var req struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	r, p := c.repo, it.pull
	state, base := it.State, p.BaseRef
	if req.Title != nil && *req.Title == "" {
		return validationFailed(c.doc, pullErr("title", "missing_field", ""))
	}
	if bad := checkPullTexts(c.doc, req.Title, req.Body); bad != nil {
		return *bad
	}
	if req.State != nil {
		state = *req.State
		if state != "open" && state != "closed" {
			return validationFailed(c.doc, pullErr("state", "invalid", ""))
		}
		if p.Merged && state == "open" {
			return validationFailed(c.doc, pullErr("state", "custom", "state cannot be changed. The pull request has been merged."))
		}
	}
	if req.Base != nil {
		base = *req.Base
		if r.branchSHA(base) == "" {
			return validationFailed(c.doc, pullErr("base", "invalid", fmt.Sprintf("Proposed base branch '%s' was not found", base)))
		}
		if sameRepoHead(r, p) && base == p.HeadRef {
			return validationFailed(c.doc, pullErr("base", "invalid", ""))
		}
	}
	if state == "open" && sameRepoHead(r, p) && openPullFor(r, p.HeadRef, base, it.Number) != nil {
		return validationFailed(c.doc, pullErr("", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", r.Owner, p.HeadRef)))
	}

	now := s.now()
	if req.Title != nil {
		it.Title, p.Title = *req.Title, *req.Title
	}
	if req.Body != nil {
		it.Body, p.Body = *req.Body, *req.Body
	}
	if state != it.State {
		it.State, p.State = state, state
		it.closedAt = time.Time{}
		if state == "closed" {
			it.closedAt = now
		}
	}
	retargeted := p.BaseRef != base
	p.BaseRef = base
	it.updatedAt = now
	if req.Body != nil || retargeted {
		r.renderPull(it)
	}
	s.followHead(r, it)
	return jsonResp(http.StatusOK, s.pullJSON(r, it))
}

// listPulls lists pull requests, paginated: state open (default), closed
// or all; head as "owner:branch" (GitHub ignores a head without the
// owner); base a branch; sorted by created (default) or updated, newest
// first unless direction=asc.
func (s *Server) listPulls(c *call) response {
	q := c.r.URL.Query()
	state := cmp.Or(q.Get("state"), "open")
	if state != "open" && state != "closed" && state != "all" {
		return validationFailed(c.doc, pullErr("state", "invalid", ""))
	}
	sortBy := cmp.Or(q.Get("sort"), "created")
	dir := q.Get("direction")
	if dir == "" {
		dir = "desc"
		if sortBy != "created" && sortBy != "updated" {
			dir = "asc"
		}
	}
	headOwner, headRef, headFilter := strings.Cut(q.Get("head"), ":")
	base := q.Get("base")
	r := c.repo

	var list []*issue
	for _, it := range r.issues {
		p := it.pull
		if p == nil || (state != "all" && it.State != state) || (base != "" && p.BaseRef != base) {
			continue
		}
		if headFilter {
			owner := r.Owner
			if !sameRepoHead(r, p) {
				owner, _, _ = strings.Cut(p.HeadRepoFullName, "/")
			}
			if !strings.EqualFold(owner, headOwner) || (headRef != "" && p.HeadRef != headRef) {
				continue
			}
		}
		list = append(list, it)
	}
	key := func(it *issue) time.Time { return it.createdAt }
	if sortBy == "updated" {
		key = (*issue).updated
	}
	slices.SortFunc(list, func(a, b *issue) int {
		return cmp.Or(key(a).Compare(key(b)), cmp.Compare(a.Number, b.Number))
	})
	if dir == "desc" {
		slices.Reverse(list)
	}
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		out = append(out, s.pullJSON(r, it))
	}
	return page(c, out)
}

// isCollaborator tells whether a login may be asked for a review: a user
// with a role on the repo, or the owner of a user-owned repo.
func isCollaborator(r *repoState, login string) bool {
	if role, ok := r.roles[strings.ToLower(login)]; ok {
		return role != "none"
	}
	return r.OwnerType == "User" && strings.EqualFold(login, r.Owner)
}

// requestReviewers requests reviews. GitHub answers 422 "Review cannot be
// requested from pull request author." when a reviewer wrote the pull,
// and 422 when one is not a collaborator (teams are not modelled, so a
// team is never one).
func (s *Server) requestReviewers(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	var req struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if req.Reviewers == nil && req.TeamReviewers == nil {
		return invalidRequest(c.doc, `"reviewers" or "team_reviewers" wasn't supplied.`)
	}
	r := c.repo
	for _, login := range req.Reviewers {
		if strings.EqualFold(login, it.User) {
			return errResp(http.StatusUnprocessableEntity, "Review cannot be requested from pull request author.", c.doc)
		}
	}
	for _, login := range req.Reviewers {
		if _, known := s.users[strings.ToLower(login)]; !known || !isCollaborator(r, login) {
			return errResp(http.StatusUnprocessableEntity, fmt.Sprintf("Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the %s repository.", r.fullName()), c.doc)
		}
	}
	if len(req.TeamReviewers) > 0 {
		return errResp(http.StatusUnprocessableEntity, fmt.Sprintf("Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the %s repository.", r.fullName()), c.doc)
	}
	for _, login := range req.Reviewers {
		login = s.users[strings.ToLower(login)].login
		if !slices.ContainsFunc(it.reviewers, func(l string) bool { return strings.EqualFold(l, login) }) {
			it.reviewers = append(it.reviewers, login)
		}
	}
	it.updatedAt = s.now()
	return jsonResp(http.StatusCreated, s.pullJSON(r, it))
}

func (s *Server) listReviewRequests(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, map[string]any{"users": s.reviewersJSON(it), "teams": []any{}})
}

func (s *Server) removeReviewRequests(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	var req struct {
		Reviewers []string `json:"reviewers"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if req.Reviewers == nil {
		return invalidRequest(c.doc, `"reviewers" wasn't supplied.`)
	}
	it.reviewers = slices.DeleteFunc(it.reviewers, func(l string) bool {
		return slices.ContainsFunc(req.Reviewers, func(x string) bool { return strings.EqualFold(x, l) })
	})
	return jsonResp(http.StatusOK, s.pullJSON(c.repo, it))
}
