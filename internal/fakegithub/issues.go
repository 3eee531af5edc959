package fakegithub

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	docsGetIssue       = "https://docs.github.com/rest/issues/issues#get-an-issue"
	docsListIssues     = "https://docs.github.com/rest/issues/issues#list-repository-issues"
	docsIssueComments  = "https://docs.github.com/rest/issues/comments"
	docsCommentReact   = "https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue-comment"
	docsLocking        = "https://docs.github.com/articles/locking-conversations/"
	maxCommentBodyRune = 65536 // GitHub: "Body is too long (maximum is 65536 characters)"
)

// reactionContents are the eight reactions GitHub accepts.
var reactionContents = []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}

// Issue is an issue to seed with AddIssue.
type Issue struct {
	Number int // 0: the repo's next number
	Title  string
	Body   string
	State  string // "open" (default) or "closed"
	Locked bool
	User   string   // author login; "octocat" when empty
	Labels []string // label names, in order; labels the repo lacks are created
}

// issue is an issue or, when pull is set, a pull request: GitHub numbers
// both from one sequence and serves every pull request as an issue too.
type issue struct {
	Issue
	id                  int64
	pull                *Pull
	createdAt           time.Time
	updatedAt, closedAt time.Time // zero: as created
	comments            []int64   // comment ids, oldest first
	followsHead         bool      // a pull whose head moves with its branch
	reviewers           []string  // requested reviewers' logins, in order
	labels              []*label  // in the order they were added
	reviewCms           []int64   // review comment ids (pulls only), oldest first
	reviews             []*review // submitted reviews (pulls only), oldest first
	closedBy            string    // who closed it last ("" when unknown)
	mergedBy, mergeSHA  string    // a merged pull's merger and merge commit
}

// Comment is an issue or pull request comment, for inspection.
type Comment struct {
	ID                   int64
	Body, User           string
	CreatedAt, UpdatedAt time.Time
	Edits                int // how many times it was PATCHed
}

type comment struct {
	Comment
	number    int
	viaApp    bool // made with an installation token
	reactions []*reaction
}

// Reaction is a reaction to a comment, for inspection.
type Reaction struct {
	ID            int64
	Content, User string
}

type reaction struct {
	Reaction
	createdAt time.Time
}

// AddIssue seeds an issue. Seeding an existing number replaces its fields
// (its labels included) and keeps its comments.
func (s *Server) AddIssue(owner, repo string, is Issue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putIssue(s.mustRepo(owner, repo), is, nil)
}

// putIssue stores an issue or pull request. Callers hold s.mu.
func (s *Server) putIssue(r *repoState, is Issue, p *Pull) *issue {
	if is.Number == 0 {
		is.Number = r.lastNumber + 1
	}
	r.lastNumber = max(r.lastNumber, is.Number)
	if is.State == "" {
		is.State = "open"
	}
	if is.User == "" {
		is.User = "octocat"
	}
	s.ensureUser(is.User, "")
	names := is.Labels
	is.Labels = nil // the labels live in issue.labels
	it, ok := r.issues[is.Number]
	if ok {
		it.Issue, it.pull = is, p
		it.closedAt = time.Time{}
	} else {
		it = &issue{Issue: is, id: s.nextID(), pull: p, createdAt: s.now()}
		r.issues[is.Number] = it
	}
	it.labels = nil
	s.addLabels(r, it, names)
	return it
}

// AddComment seeds a comment by user on an issue or pull request and
// returns its id.
func (s *Server) AddComment(owner, repo string, number int, user, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	it, ok := r.issues[number]
	if !ok {
		panic(fmt.Sprintf("fakegithub: no issue or pull #%d in %s/%s", number, owner, repo))
	}
	s.ensureUser(user, "")
	return s.addComment(r, it, user, body, false).ID
}

func (s *Server) addComment(r *repoState, it *issue, login, body string, viaApp bool) *comment {
	now := s.now()
	cm := &comment{
		Comment: Comment{ID: s.nextID(), Body: body, User: login, CreatedAt: now, UpdatedAt: now},
		number:  it.Number,
		viaApp:  viaApp,
	}
	r.comments[cm.ID] = cm
	it.comments = append(it.comments, cm.ID)
	return cm
}

// Comments returns the comments on an issue or pull request, oldest first.
func (s *Server) Comments(owner, repo string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil || r.issues[number] == nil {
		return nil
	}
	var out []Comment
	for _, id := range r.issues[number].comments {
		out = append(out, r.comments[id].Comment)
	}
	return out
}

// CommentReactions returns the reactions to a comment, oldest first.
func (s *Server) CommentReactions(owner, repo string, commentID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil || r.comments[commentID] == nil {
		return nil
	}
	var out []Reaction
	for _, re := range r.comments[commentID].reactions {
		out = append(out, re.Reaction)
	}
	return out
}

// botLogin is the App's bot user, who authors what an installation token
// writes.
func (s *Server) botLogin() string { return s.appSlug + "[bot]" }

func (s *Server) issueRoutes() {
	// GitHub accepts either permission on these endpoints: a pull request
	// is also an issue.
	g := repoGate("issues", "pull_requests")
	// Reading the issue itself takes issues, even for a pull request's:
	// GitHub's permissions table names only that for it.
	s.handle("GET /repos/{owner}/{repo}/issues/{number}", docsGetIssue, repoGate("issues"), s.getIssue)
	// "/issues/{number}/comments" and "/issues/comments/{id}" would
	// conflict in ServeMux (both match ".../issues/comments/comments"),
	// so one pattern takes both and issueSub tells them apart.
	s.handle("GET /repos/{owner}/{repo}/issues/{a}/{b}", docsIssueComments, g, s.issueSub)
	s.handle("POST /repos/{owner}/{repo}/issues/{a}/{b}", docsIssueComments, g, s.issueSub)
	s.handle("PATCH /repos/{owner}/{repo}/issues/{a}/{b}", docsIssueComments, g, s.issueSub)
	s.handle("PUT /repos/{owner}/{repo}/issues/{a}/{b}", docsIssueComments, g, s.issueSub)
	s.handle("DELETE /repos/{owner}/{repo}/issues/{a}/{b}", docsIssueComments, g, s.issueSub)
	s.handle("GET /repos/{owner}/{repo}/issues", docsListIssues, g, s.listIssues)
	s.handle("GET /repos/{owner}/{repo}/issues/comments/{id}/reactions", docsCommentReact, g, s.listReactions)
	s.handle("POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", docsCommentReact, g, s.createReaction)
}

func (s *Server) issueSub(c *call) response {
	a, b := c.r.PathValue("a"), c.r.PathValue("b")
	switch {
	case a == "comments" && c.r.Method == http.MethodGet:
		c.doc = docsIssueComments + "#get-an-issue-comment"
		return s.getComment(c, b)
	case a == "comments" && c.r.Method == http.MethodPatch:
		c.doc = docsIssueComments + "#update-an-issue-comment"
		return s.updateComment(c, b)
	case b == "comments" && c.r.Method == http.MethodGet:
		c.doc = docsIssueComments + "#list-issue-comments"
		return s.listComments(c, a)
	case b == "comments" && c.r.Method == http.MethodPost:
		c.doc = docsIssueComments + "#create-an-issue-comment"
		return s.createComment(c, a)
	case b == "labels":
		// Labels share this pattern with comments: see labels.go.
		return s.issueLabelsSub(c, a)
	}
	return notFound(docsRoot)
}

func (s *Server) issueByNumber(r *repoState, number string) *issue {
	n, err := strconv.Atoi(number)
	if err != nil {
		return nil
	}
	return r.issues[n]
}

func (s *Server) authorAssociation(r *repoState, login string) string {
	if strings.EqualFold(login, r.Owner) {
		return "OWNER"
	}
	if role, ok := r.roles[strings.ToLower(login)]; ok && role != "none" {
		return "COLLABORATOR"
	}
	return "NONE"
}

func reactionSummary(url string, rs []*reaction) map[string]any {
	m := map[string]any{"url": url, "total_count": len(rs)}
	for _, c := range reactionContents {
		m[c] = 0
	}
	for _, re := range rs {
		m[re.Content] = m[re.Content].(int) + 1
	}
	return m
}

func (s *Server) issueJSON(r *repoState, it *issue) map[string]any {
	api := fmt.Sprintf("%srepos/%s/issues/%d", s.APIURL(), r.fullName(), it.Number)
	html := fmt.Sprintf("%s/%s/issues/%d", s.URL(), r.fullName(), it.Number)
	m := map[string]any{
		"id":                 it.id,
		"node_id":            fmt.Sprintf("I_%d", it.id),
		"number":             it.Number,
		"title":              it.Title,
		"body":               it.Body,
		"state":              it.State,
		"locked":             it.Locked,
		"active_lock_reason": nil,
		"user":               s.ensureUser(it.User, "").json(s),
		"labels":             s.labelsJSON(r, it.labels),
		"assignee":           nil,
		"assignees":          []any{},
		"milestone":          nil,
		"comments":           len(it.comments),
		"author_association": s.authorAssociation(r, it.User),
		"url":                api,
		"html_url":           html,
		"comments_url":       api + "/comments",
		"labels_url":         api + "/labels{/name}",
		"events_url":         api + "/events",
		"repository_url":     s.APIURL() + "repos/" + r.fullName(),
		"created_at":         timestamp(it.createdAt),
		"updated_at":         timestamp(it.updated()),
		"closed_at":          it.closedAtJSON(),
		"closed_by":          s.userOrNil(it.closedBy),
		"reactions":          reactionSummary(api+"/reactions", nil),
	}
	if it.pull != nil {
		pull := fmt.Sprintf("%srepos/%s/pulls/%d", s.APIURL(), r.fullName(), it.Number)
		phtml := fmt.Sprintf("%s/%s/pull/%d", s.URL(), r.fullName(), it.Number)
		m["html_url"] = phtml
		m["draft"] = it.pull.Draft
		m["pull_request"] = map[string]any{
			"url": pull, "html_url": phtml, "diff_url": phtml + ".diff", "patch_url": phtml + ".patch",
			"merged_at": mergedAt(it),
		}
	}
	return m
}

func (it *issue) updated() time.Time {
	if it.updatedAt.IsZero() {
		return it.createdAt
	}
	return it.updatedAt
}

// closedAtJSON is when a closed issue was closed (when it was created, for
// one seeded closed), or null.
func (it *issue) closedAtJSON() any {
	switch {
	case it.State != "closed":
		return nil
	case !it.closedAt.IsZero():
		return timestamp(it.closedAt)
	}
	return timestamp(it.createdAt)
}

func (s *Server) getIssue(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.issueJSON(c.repo, it))
}

func (s *Server) commentJSON(r *repoState, cm *comment) map[string]any {
	api := fmt.Sprintf("%srepos/%s/issues/comments/%d", s.APIURL(), r.fullName(), cm.ID)
	u := s.ensureUser(cm.User, "")
	m := map[string]any{
		"id":                       cm.ID,
		"node_id":                  fmt.Sprintf("IC_%d", cm.ID),
		"url":                      api,
		"html_url":                 fmt.Sprintf("%s/%s/issues/%d#issuecomment-%d", s.URL(), r.fullName(), cm.number, cm.ID),
		"issue_url":                fmt.Sprintf("%srepos/%s/issues/%d", s.APIURL(), r.fullName(), cm.number),
		"body":                     cm.Body,
		"user":                     u.json(s),
		"created_at":               timestamp(cm.CreatedAt),
		"updated_at":               timestamp(cm.UpdatedAt),
		"author_association":       s.authorAssociation(r, cm.User),
		"performed_via_github_app": nil,
		"reactions":                reactionSummary(api+"/reactions", cm.reactions),
	}
	if cm.viaApp {
		m["performed_via_github_app"] = s.appJSON()
	}
	return m
}

// checkCommentBody validates a comment body as GitHub does: required, and
// at most 65536 characters.
func checkCommentBody(doc string, body *string) *response {
	if body == nil || *body == "" {
		r := validationFailed(doc, fieldError{Resource: "IssueComment", Field: "body", Code: "missing_field"})
		return &r
	}
	if utf8.RuneCountInString(*body) > maxCommentBodyRune {
		r := validationFailed(doc, fieldError{Resource: "IssueComment", Field: "body", Code: "custom",
			Message: fmt.Sprintf("Body is too long (maximum is %d characters)", maxCommentBodyRune)})
		return &r
	}
	return nil
}

// createComment posts a comment as the App's bot. GitHub refuses comments
// on a locked conversation to anyone who is not a collaborator, which
// includes an App's bot: 403 "Unable to create comment because issue is
// locked."
func (s *Server) createComment(c *call, number string) response {
	it := s.issueByNumber(c.repo, number)
	if it == nil {
		return notFound(c.doc)
	}
	var req struct {
		Body *string `json:"body"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if bad := checkCommentBody(c.doc, req.Body); bad != nil {
		return *bad
	}
	if it.Locked {
		return errResp(http.StatusForbidden, "Unable to create comment because issue is locked.", docsLocking)
	}
	s.ensureUser(s.botLogin(), "Bot")
	cm := s.addComment(c.repo, it, s.botLogin(), *req.Body, true)
	c.repo.render(RenderedComment, it.Number, cm.ID, cm.Body, false)
	body := s.commentJSON(c.repo, cm)
	resp := jsonResp(http.StatusCreated, body)
	resp.header = http.Header{"Location": {body["url"].(string)}}
	return resp
}

// listComments lists an issue's comments oldest first, paginated, with
// GitHub's optional "since" filter on updated_at.
func (s *Server) listComments(c *call, number string) response {
	it := s.issueByNumber(c.repo, number)
	if it == nil {
		return notFound(c.doc)
	}
	var since time.Time
	if v := c.r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return validationFailed(c.doc, fieldError{Resource: "IssueComment", Field: "since", Code: "invalid"})
		}
		since = t
	}
	out := []map[string]any{}
	for _, id := range it.comments {
		cm := c.repo.comments[id]
		if cm.UpdatedAt.Before(since) {
			continue
		}
		out = append(out, s.commentJSON(c.repo, cm))
	}
	return page(c, out)
}

func (s *Server) commentByID(r *repoState, id string) *comment {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil
	}
	return r.comments[n]
}

func (s *Server) getComment(c *call, id string) response {
	cm := s.commentByID(c.repo, id)
	if cm == nil {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.commentJSON(c.repo, cm))
}

func (s *Server) updateComment(c *call, id string) response {
	cm := s.commentByID(c.repo, id)
	if cm == nil {
		return notFound(c.doc)
	}
	var req struct {
		Body *string `json:"body"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if bad := checkCommentBody(c.doc, req.Body); bad != nil {
		return *bad
	}
	cm.Body = *req.Body
	cm.UpdatedAt = s.now()
	cm.Edits++
	c.repo.render(RenderedComment, cm.number, cm.ID, cm.Body, false)
	return jsonResp(http.StatusOK, s.commentJSON(c.repo, cm))
}

func (s *Server) reactionJSON(re *reaction) map[string]any {
	return map[string]any{
		"id":         re.ID,
		"node_id":    fmt.Sprintf("REA_%d", re.ID),
		"user":       s.ensureUser(re.User, "").json(s),
		"content":    re.Content,
		"created_at": timestamp(re.createdAt),
	}
}

// createReaction reacts to an issue comment as the App's bot: see react.
func (s *Server) createReaction(c *call) response {
	cm := s.commentByID(c.repo, c.r.PathValue("id"))
	if cm == nil {
		return notFound(c.doc)
	}
	return s.react(c, &cm.reactions)
}

// react adds the caller's reaction to a comment's. GitHub answers 201 for
// a new reaction and 200, with the existing reaction, when that user
// already reacted with that content.
func (s *Server) react(c *call, rs *[]*reaction) response {
	var req struct {
		Content string `json:"content"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if !slices.Contains(reactionContents, req.Content) {
		return validationFailed(c.doc, fieldError{Resource: "Reaction", Field: "content", Code: "custom",
			Message: "content is not included in the list"})
	}
	login := s.callerLogin(c)
	for _, re := range *rs {
		if re.User == login && re.Content == req.Content {
			return jsonResp(http.StatusOK, s.reactionJSON(re))
		}
	}
	re := &reaction{Reaction: Reaction{ID: s.nextID(), Content: req.Content, User: login}, createdAt: s.now()}
	*rs = append(*rs, re)
	return jsonResp(http.StatusCreated, s.reactionJSON(re))
}

// listReactions lists an issue comment's reactions: see reactionsPage.
func (s *Server) listReactions(c *call) response {
	cm := s.commentByID(c.repo, c.r.PathValue("id"))
	if cm == nil {
		return notFound(c.doc)
	}
	return s.reactionsPage(c, cm.reactions)
}

// reactionsPage lists reactions oldest first, paginated, optionally only
// one content.
func (s *Server) reactionsPage(c *call, rs []*reaction) response {
	want := c.r.URL.Query().Get("content")
	out := []map[string]any{}
	for _, re := range rs {
		if want == "" || re.Content == want {
			out = append(out, s.reactionJSON(re))
		}
	}
	return page(c, out)
}

// callerLogin is who a call acts as: every route that writes as someone
// takes an installation token, which acts as the App's bot user. Callers
// hold s.mu.
func (s *Server) callerLogin(c *call) string {
	s.ensureUser(s.botLogin(), "Bot")
	return s.botLogin()
}

// listIssues lists a repository's issues, pull requests included (as on
// GitHub, each with a "pull_request" key), paginated: state open (the
// default), closed or all; labels a comma-separated list of names the
// issue must all carry (case-insensitive); creator a login; since a
// timestamp on updated_at; sorted by created (the default), updated or
// comments, newest (most) first unless direction=asc.
func (s *Server) listIssues(c *call) response {
	q := c.r.URL.Query()
	state := cmp.Or(q.Get("state"), "open")
	if state != "open" && state != "closed" && state != "all" {
		return validationFailed(c.doc, fieldError{Resource: "Issue", Field: "state", Code: "invalid"})
	}
	sortBy := cmp.Or(q.Get("sort"), "created")
	if sortBy != "created" && sortBy != "updated" && sortBy != "comments" {
		return validationFailed(c.doc, fieldError{Resource: "Issue", Field: "sort", Code: "invalid"})
	}
	dir := cmp.Or(q.Get("direction"), "desc")
	if dir != "asc" && dir != "desc" {
		return validationFailed(c.doc, fieldError{Resource: "Issue", Field: "direction", Code: "invalid"})
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return validationFailed(c.doc, fieldError{Resource: "Issue", Field: "since", Code: "invalid"})
		}
		since = t
	}
	var want []string
	for _, name := range strings.Split(q.Get("labels"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			want = append(want, name)
		}
	}
	creator := q.Get("creator")
	var list []*issue
	for _, it := range c.repo.issues {
		if (state != "all" && it.State != state) || it.updated().Before(since) ||
			(creator != "" && !strings.EqualFold(creator, it.User)) {
			continue
		}
		if !slices.ContainsFunc(want, func(name string) bool { return it.labelIndex(name) < 0 }) {
			list = append(list, it)
		}
	}
	key := func(it *issue) int64 { return it.createdAt.UnixNano() }
	switch sortBy {
	case "updated":
		key = func(it *issue) int64 { return it.updated().UnixNano() }
	case "comments":
		key = func(it *issue) int64 { return int64(len(it.comments)) }
	}
	slices.SortFunc(list, func(a, b *issue) int {
		return cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.Number, b.Number))
	})
	if dir == "desc" {
		slices.Reverse(list)
	}
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		out = append(out, s.issueJSON(c.repo, it))
	}
	return page(c, out)
}
