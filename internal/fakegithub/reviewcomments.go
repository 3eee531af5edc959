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

// Pull request review comments: comments on a line (or a file) of a pull
// request's diff, in threads of a root comment and its replies. Each
// comment is its own single-comment review, as when it is made outside a
// pending review. Reading needs "pull_requests: read", writing "write".

const (
	docsReviewComments     = "https://docs.github.com/rest/pulls/comments"
	docsReviewCommentReact = "https://docs.github.com/rest/reactions/reactions#create-reaction-for-a-pull-request-review-comment"
)

// ReviewComment is a pull request review comment, to seed with
// AddReviewComment and for inspection.
type ReviewComment struct {
	ID        int64 // assigned by the server
	User      string
	Body      string
	Path      string
	Line      int // the (last) line commented on; 0 for a comment on the whole file
	StartLine int // the first line of a multi-line comment; 0 otherwise
	Side      string
	DiffHunk  string
	CommitID  string
	InReplyTo int64 // the thread's root comment, for a reply; 0 otherwise
}

type reviewComment struct {
	ReviewComment
	number               int   // the pull request's
	reviewID             int64 // the single-comment review it belongs to
	createdAt, updatedAt time.Time
	reactions            []*reaction
}

// AddReviewComment seeds a review comment on a pull request and returns
// its id. User defaults to "octocat", Side to "RIGHT" and CommitID to the
// pull request's head. A reply (InReplyTo set) joins its thread: a reply
// to a reply is made a reply to the thread's root, and Path, Line,
// StartLine, Side, DiffHunk and CommitID left empty are the root's.
// Naming a pull request or a comment that does not exist is a panic.
func (s *Server) AddReviewComment(owner, repo string, pr int, rc ReviewComment) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	it := r.issues[pr]
	if it == nil || it.pull == nil {
		panic(fmt.Sprintf("fakegithub: no pull #%d in %s/%s", pr, owner, repo))
	}
	if rc.InReplyTo != 0 {
		root := r.reviewCms[rc.InReplyTo]
		if root == nil || root.number != pr {
			panic(fmt.Sprintf("fakegithub: no review comment %d on pull #%d in %s/%s", rc.InReplyTo, pr, owner, repo))
		}
		root = s.threadRoot(r, root)
		rc.InReplyTo = root.ID
		rc.Path = cmp.Or(rc.Path, root.Path)
		if rc.Line == 0 {
			rc.Line, rc.StartLine = root.Line, root.StartLine
		}
		rc.Side = cmp.Or(rc.Side, root.Side)
		rc.DiffHunk = cmp.Or(rc.DiffHunk, root.DiffHunk)
		rc.CommitID = cmp.Or(rc.CommitID, root.CommitID)
	}
	rc.User = cmp.Or(rc.User, "octocat")
	rc.Side = cmp.Or(rc.Side, "RIGHT")
	rc.CommitID = cmp.Or(rc.CommitID, it.pull.HeadSHA)
	s.ensureUser(rc.User, "")
	return s.addReviewComment(r, it, rc).ID
}

// ReviewComments returns a pull request's review comments, replies
// included, in the order they were made.
func (s *Server) ReviewComments(owner, repo string, pr int) []ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil || r.issues[pr] == nil {
		return nil
	}
	var out []ReviewComment
	for _, id := range r.issues[pr].reviewCms {
		if cm := r.reviewCms[id]; cm != nil {
			out = append(out, cm.ReviewComment)
		}
	}
	return out
}

// addReviewComment stores a comment, giving it an id. Callers hold s.mu.
func (s *Server) addReviewComment(r *repoState, it *issue, rc ReviewComment) *reviewComment {
	now := s.now()
	rc.ID = s.nextID()
	cm := &reviewComment{ReviewComment: rc, number: it.Number, reviewID: s.nextID(), createdAt: now, updatedAt: now}
	r.reviewCms[rc.ID] = cm
	it.reviewCms = append(it.reviewCms, rc.ID)
	return cm
}

// rendered judges a review comment written through the API (rendered.go)
// and returns it.
func rendered(r *repoState, cm *reviewComment) *reviewComment {
	r.render(RenderedReviewComment, cm.number, cm.ID, cm.Body, false)
	return cm
}

// threadRoot is the root of a comment's thread (the comment itself, for a
// root).
func (s *Server) threadRoot(r *repoState, cm *reviewComment) *reviewComment {
	for cm.InReplyTo != 0 {
		root := r.reviewCms[cm.InReplyTo]
		if root == nil {
			break
		}
		cm = root
	}
	return cm
}

// replyTo makes a reply in root's thread, on root's lines.
func (s *Server) replyTo(r *repoState, it *issue, root *reviewComment, login, body string) *reviewComment {
	return s.addReviewComment(r, it, ReviewComment{
		User: login, Body: body, Path: root.Path, Line: root.Line, StartLine: root.StartLine,
		Side: root.Side, DiffHunk: root.DiffHunk, CommitID: root.CommitID, InReplyTo: root.ID,
	})
}

func (s *Server) reviewCommentRoutes() {
	g := repoGate("pull_requests")
	// ".../pulls/{number}/comments" and ".../pulls/comments/{id}" would
	// conflict in ServeMux, as the issue comment routes would: one pattern
	// takes both, and pullSub tells them apart. The more specific
	// .../pulls/{number}/requested_reviewers patterns (pulls.go) win over
	// it.
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		s.handle(method+" /repos/{owner}/{repo}/pulls/{a}/{b}", docsReviewComments, g, s.pullSub)
	}
	s.handle("POST /repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies", docsReviewComments+"#create-a-reply-for-a-review-comment", g, s.replyToReviewComment)
	s.handle("GET /repos/{owner}/{repo}/pulls/comments/{id}/reactions", docsReviewCommentReact, g, s.listReviewCommentReactions)
	s.handle("POST /repos/{owner}/{repo}/pulls/comments/{id}/reactions", docsReviewCommentReact, g, s.createReviewCommentReaction)
}

func (s *Server) pullSub(c *call) response {
	a, b := c.r.PathValue("a"), c.r.PathValue("b")
	switch {
	case a == "comments" && c.r.Method == http.MethodGet:
		c.doc = docsReviewComments + "#get-a-review-comment-for-a-pull-request"
		return s.getReviewComment(c, b)
	case a == "comments" && c.r.Method == http.MethodPatch:
		c.doc = docsReviewComments + "#update-a-review-comment-for-a-pull-request"
		return s.updateReviewComment(c, b)
	case a == "comments" && c.r.Method == http.MethodDelete:
		c.doc = docsReviewComments + "#delete-a-review-comment-for-a-pull-request"
		return s.deleteReviewComment(c, b)
	case b == "comments" && c.r.Method == http.MethodGet:
		c.doc = docsReviewComments + "#list-review-comments-on-a-pull-request"
		it := s.issueByNumber(c.repo, a)
		if it == nil || it.pull == nil {
			return notFound(c.doc)
		}
		return s.reviewCommentsPage(c, it.reviewCms)
	case b == "comments" && c.r.Method == http.MethodPost:
		c.doc = docsReviewComments + "#create-a-review-comment-for-a-pull-request"
		return s.createReviewComment(c, a)
	}
	return notFound(docsRoot)
}

// listRepoReviewComments answers GET .../pulls/comments, every pull
// request's review comments (see reviewCommentsPage). It reaches getPull's
// pattern, .../pulls/{number}, which hands it over.
func (s *Server) listRepoReviewComments(c *call) response {
	c.doc = docsReviewComments + "#list-review-comments-in-a-repository"
	ids := make([]int64, 0, len(c.repo.reviewCms))
	for id := range c.repo.reviewCms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return s.reviewCommentsPage(c, ids)
}

func (s *Server) reviewCommentByID(r *repoState, id string) *reviewComment {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil
	}
	return r.reviewCms[n]
}

// diffPosition stands in for a comment's "position", its line in the diff
// counted from the hunk header: the last line of its diff_hunk, which ends
// at the commented line. GitHub sets it null on an outdated comment, which
// these never are.
func diffPosition(hunk string) int {
	return max(1, strings.Count(strings.TrimRight(hunk, "\n"), "\n"))
}

func (s *Server) reviewCommentJSON(r *repoState, cm *reviewComment) map[string]any {
	api := fmt.Sprintf("%srepos/%s/pulls/comments/%d", s.APIURL(), r.fullName(), cm.ID)
	pull := fmt.Sprintf("%srepos/%s/pulls/%d", s.APIURL(), r.fullName(), cm.number)
	html := fmt.Sprintf("%s/%s/pull/%d#discussion_r%d", s.URL(), r.fullName(), cm.number, cm.ID)
	intOrNull := func(n int) any {
		if n == 0 {
			return nil
		}
		return n
	}
	var startSide any
	if cm.StartLine != 0 {
		startSide = cm.Side
	}
	subject := "line"
	if cm.Line == 0 {
		subject = "file"
	}
	m := map[string]any{
		"url":                    api,
		"pull_request_review_id": cm.reviewID,
		"id":                     cm.ID,
		"node_id":                fmt.Sprintf("PRRC_%d", cm.ID),
		"diff_hunk":              cm.DiffHunk,
		"path":                   cm.Path,
		"position":               diffPosition(cm.DiffHunk),
		"original_position":      diffPosition(cm.DiffHunk),
		"commit_id":              cm.CommitID,
		"original_commit_id":     cm.CommitID,
		"user":                   s.ensureUser(cm.User, "").json(s),
		"body":                   cm.Body,
		"created_at":             timestamp(cm.createdAt),
		"updated_at":             timestamp(cm.updatedAt),
		"html_url":               html,
		"pull_request_url":       pull,
		"author_association":     s.authorAssociation(r, cm.User),
		"_links": map[string]any{
			"self":         map[string]string{"href": api},
			"html":         map[string]string{"href": html},
			"pull_request": map[string]string{"href": pull},
		},
		"start_line":          intOrNull(cm.StartLine),
		"original_start_line": intOrNull(cm.StartLine),
		"start_side":          startSide,
		"line":                intOrNull(cm.Line),
		"original_line":       intOrNull(cm.Line),
		"side":                cm.Side,
		"subject_type":        subject,
		"reactions":           reactionSummary(api+"/reactions", cm.reactions),
	}
	if cm.InReplyTo != 0 {
		m["in_reply_to_id"] = cm.InReplyTo
	}
	return m
}

// reviewCommentsPage lists review comments, paginated: by id (creation
// order) by default; sort=created or updated, direction asc (the default)
// or desc; since a timestamp on updated_at.
func (s *Server) reviewCommentsPage(c *call, ids []int64) response {
	q := c.r.URL.Query()
	sortBy := q.Get("sort")
	if sortBy != "" && sortBy != "created" && sortBy != "updated" {
		return validationFailed(c.doc, reviewCommentErr("sort", "invalid", ""))
	}
	dir := cmp.Or(q.Get("direction"), "asc")
	if dir != "asc" && dir != "desc" {
		return validationFailed(c.doc, reviewCommentErr("direction", "invalid", ""))
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return validationFailed(c.doc, reviewCommentErr("since", "invalid", ""))
		}
		since = t
	}
	var list []*reviewComment
	for _, id := range ids {
		if cm := c.repo.reviewCms[id]; cm != nil && !cm.updatedAt.Before(since) {
			list = append(list, cm)
		}
	}
	if sortBy != "" {
		key := func(cm *reviewComment) time.Time { return cm.createdAt }
		if sortBy == "updated" {
			key = func(cm *reviewComment) time.Time { return cm.updatedAt }
		}
		slices.SortStableFunc(list, func(a, b *reviewComment) int {
			return cmp.Or(key(a).Compare(key(b)), cmp.Compare(a.ID, b.ID))
		})
		if dir == "desc" {
			slices.Reverse(list)
		}
	}
	out := make([]map[string]any, 0, len(list))
	for _, cm := range list {
		out = append(out, s.reviewCommentJSON(c.repo, cm))
	}
	return page(c, out)
}

func reviewCommentErr(field, code, msg string) fieldError {
	return fieldError{Resource: "PullRequestReviewComment", Field: field, Code: code, Message: msg}
}

// checkReviewCommentBody validates a body as GitHub does: required, and at
// most 65536 characters.
func checkReviewCommentBody(doc string, body *string) *response {
	if body == nil || *body == "" {
		r := validationFailed(doc, reviewCommentErr("body", "missing_field", ""))
		return &r
	}
	if utf8.RuneCountInString(*body) > maxCommentBodyRune {
		r := validationFailed(doc, reviewCommentErr("body", "custom",
			fmt.Sprintf("Body is too long (maximum is %d characters)", maxCommentBodyRune)))
		return &r
	}
	return nil
}

func (s *Server) getReviewComment(c *call, id string) response {
	cm := s.reviewCommentByID(c.repo, id)
	if cm == nil {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.reviewCommentJSON(c.repo, cm))
}

// notAuthor refuses a change to a comment the caller did not write: the
// App may edit and delete only its own bot's review comments.
func (s *Server) notAuthor(c *call, cm *reviewComment) *response {
	if strings.EqualFold(cm.User, s.callerLogin(c)) {
		return nil
	}
	r := errResp(http.StatusForbidden, msgNotAccessible, c.doc)
	return &r
}

func (s *Server) updateReviewComment(c *call, id string) response {
	cm := s.reviewCommentByID(c.repo, id)
	if cm == nil {
		return notFound(c.doc)
	}
	var req struct {
		Body *string `json:"body"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if bad := checkReviewCommentBody(c.doc, req.Body); bad != nil {
		return *bad
	}
	if bad := s.notAuthor(c, cm); bad != nil {
		return *bad
	}
	cm.Body = *req.Body
	cm.updatedAt = s.now()
	return jsonResp(http.StatusOK, s.reviewCommentJSON(c.repo, rendered(c.repo, cm)))
}

// deleteReviewComment deletes one of the App's review comments: 204. Its
// replies stay, as on GitHub.
func (s *Server) deleteReviewComment(c *call, id string) response {
	cm := s.reviewCommentByID(c.repo, id)
	if cm == nil {
		return notFound(c.doc)
	}
	if bad := s.notAuthor(c, cm); bad != nil {
		return *bad
	}
	delete(c.repo.reviewCms, cm.ID)
	if it := c.repo.issues[cm.number]; it != nil {
		it.reviewCms = slices.DeleteFunc(slices.Clone(it.reviewCms), func(x int64) bool { return x == cm.ID })
	}
	return response{status: http.StatusNoContent}
}

// lockedPull is GitHub's refusal to comment on a locked conversation, to
// anyone who is not a collaborator (an App's bot among them).
func lockedPull(it *issue) *response {
	if !it.Locked {
		return nil
	}
	r := errResp(http.StatusForbidden, "Unable to create comment because issue is locked.", docsLocking)
	return &r
}

func createdReviewComment(body map[string]any) response {
	return response{status: http.StatusCreated, body: body, header: http.Header{"Location": {body["url"].(string)}}}
}

// createReviewComment answers POST .../pulls/{number}/comments, as the
// App's bot. With in_reply_to (what go-github's CreateCommentInReplyTo
// sends), it replies in that comment's thread and every other parameter
// but body is ignored, as GitHub documents; a reply to a reply joins the
// thread's root. Otherwise it starts a thread: body, commit_id and path
// are required, and line too unless subject_type is "file"; side is LEFT
// or RIGHT (the default); a start_line must come before line. The
// stand-in cannot check that the lines are part of the diff, and leaves
// diff_hunk empty.
func (s *Server) createReviewComment(c *call, number string) response {
	it := s.issueByNumber(c.repo, number)
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	var req struct {
		Body        *string `json:"body"`
		CommitID    *string `json:"commit_id"`
		Path        *string `json:"path"`
		Position    *int    `json:"position"`
		Line        *int    `json:"line"`
		Side        *string `json:"side"`
		StartLine   *int    `json:"start_line"`
		StartSide   *string `json:"start_side"`
		InReplyTo   *int64  `json:"in_reply_to"`
		SubjectType *string `json:"subject_type"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if bad := checkReviewCommentBody(c.doc, req.Body); bad != nil {
		return *bad
	}
	r := c.repo
	if req.InReplyTo != nil {
		root := r.reviewCms[*req.InReplyTo]
		if root == nil || root.number != it.Number {
			return notFound(c.doc)
		}
		if bad := lockedPull(it); bad != nil {
			return *bad
		}
		return createdReviewComment(s.reviewCommentJSON(r, rendered(r, s.replyTo(r, it, s.threadRoot(r, root), s.callerLogin(c), *req.Body))))
	}

	switch {
	case req.CommitID == nil || *req.CommitID == "":
		return invalidRequest(c.doc, `"commit_id" wasn't supplied.`)
	case req.Path == nil || *req.Path == "":
		return invalidRequest(c.doc, `"path" wasn't supplied.`)
	}
	file := req.SubjectType != nil && *req.SubjectType == "file"
	if req.SubjectType != nil && !file && *req.SubjectType != "line" {
		return invalidRequest(c.doc, fmt.Sprintf(`For 'properties/subject_type', %q is not one of ["line", "file"].`, *req.SubjectType))
	}
	rc := ReviewComment{User: s.callerLogin(c), Body: *req.Body, Path: *req.Path, CommitID: strings.ToLower(*req.CommitID), Side: "RIGHT"}
	if !file {
		switch {
		case req.Line != nil:
			rc.Line = *req.Line
		case req.Position != nil:
			rc.Line = *req.Position // the stand-in has no diff to map a position with
		default:
			return invalidRequest(c.doc, `"line" wasn't supplied.`)
		}
		if rc.Line < 1 {
			return validationFailed(c.doc, reviewCommentErr("line", "invalid", ""))
		}
		if req.Side != nil {
			if *req.Side != "LEFT" && *req.Side != "RIGHT" {
				return invalidRequest(c.doc, fmt.Sprintf(`For 'properties/side', %q is not one of ["LEFT", "RIGHT"].`, *req.Side))
			}
			rc.Side = *req.Side
		}
		if req.StartLine != nil {
			if *req.StartLine < 1 || *req.StartLine >= rc.Line {
				return errResp(http.StatusUnprocessableEntity, "pull_request_review_thread.start_line must precede the end line.", c.doc)
			}
			rc.StartLine = *req.StartLine
		}
	}
	if bad := lockedPull(it); bad != nil {
		return *bad
	}
	return createdReviewComment(s.reviewCommentJSON(r, rendered(r, s.addReviewComment(r, it, rc))))
}

// replyToReviewComment answers POST .../pulls/{number}/comments/{id}/replies:
// a reply by the App's bot in the thread of comment {id}, on its lines.
// GitHub's docs: {id} "must be the ID of a top-level review comment, not
// a reply to that comment. Replies to replies are not supported." They
// document only 201 and 404, so a reply, like a comment of another pull
// request or none, is a 404 here.
func (s *Server) replyToReviewComment(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	root := s.reviewCommentByID(c.repo, c.r.PathValue("id"))
	if root == nil || root.number != it.Number || root.InReplyTo != 0 {
		return notFound(c.doc)
	}
	var req struct {
		Body *string `json:"body"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if bad := checkReviewCommentBody(c.doc, req.Body); bad != nil {
		return *bad
	}
	if bad := lockedPull(it); bad != nil {
		return *bad
	}
	return createdReviewComment(s.reviewCommentJSON(c.repo, rendered(c.repo, s.replyTo(c.repo, it, root, s.callerLogin(c), *req.Body))))
}

func (s *Server) createReviewCommentReaction(c *call) response {
	cm := s.reviewCommentByID(c.repo, c.r.PathValue("id"))
	if cm == nil {
		return notFound(c.doc)
	}
	return s.react(c, &cm.reactions)
}

func (s *Server) listReviewCommentReactions(c *call) response {
	cm := s.reviewCommentByID(c.repo, c.r.PathValue("id"))
	if cm == nil {
		return notFound(c.doc)
	}
	return s.reactionsPage(c, cm.reactions)
}

// ReviewCommentReactions returns the reactions to a review comment, oldest
// first.
func (s *Server) ReviewCommentReactions(owner, repo string, commentID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil || r.reviewCms[commentID] == nil {
		return nil
	}
	var out []Reaction
	for _, re := range r.reviewCms[commentID].reactions {
		out = append(out, re.Reaction)
	}
	return out
}
