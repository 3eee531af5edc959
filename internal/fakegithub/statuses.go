package fakegithub

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// Commit statuses: POST .../statuses/{sha}, and under /commits/{ref}/ (see
// commits.go) the list and the combined status. They need the "statuses"
// permission: read to read, write to create. The App is granted only
// "statuses: read" by default; a test that has it post statuses grants
// more with SetAppPermission("statuses", "write").

const (
	docsStatuses = "https://docs.github.com/rest/commits/statuses"

	// GitHub: "there is a limit of 1000 statuses per sha and context
	// within a repository".
	maxStatusesPerContext = 1000
)

// statusStates are the states a status may have.
var statusStates = []string{"error", "failure", "pending", "success"}

// Status is a commit status, to seed with AddStatus and for inspection.
type Status struct {
	Context     string // "default" when empty, as on GitHub
	State       string // error, failure, pending or success
	Description string
	TargetURL   string
	Creator     string // login; the App's bot for statuses posted with an installation token, "octocat" when seeded without one
}

type status struct {
	Status
	id        int64
	sha       string
	createdAt time.Time
}

// AddStatus seeds a status on a commit and returns its id. sha is the
// commit's SHA (a branch name is resolved to its commit). An unknown state
// is a panic.
func (s *Server) AddStatus(owner, repo, sha string, st Status) int64 {
	if !slices.Contains(statusStates, st.State) {
		panic(fmt.Sprintf("fakegithub: status state %q is not one of %v", st.State, statusStates))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	commit, ok := s.refCommit(r, sha)
	if !ok {
		panic(fmt.Sprintf("fakegithub: %s has no commit %q", r.fullName(), sha))
	}
	if st.Creator == "" {
		st.Creator = "octocat"
	}
	return s.addStatus(r, commit, st).id
}

func (s *Server) addStatus(r *repoState, sha string, st Status) *status {
	if st.Context == "" {
		st.Context = "default"
	}
	s.ensureUser(st.Creator, "")
	out := &status{Status: st, id: s.nextID(), sha: sha, createdAt: s.now()}
	r.statuses = append(r.statuses, out)
	return out
}

// Statuses returns the statuses of a commit (or of the commit a branch
// points at), oldest first.
func (s *Server) Statuses(owner, repo, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil {
		return nil
	}
	commit, ok := s.refCommit(r, sha)
	if !ok {
		return nil
	}
	var out []Status
	for _, st := range r.statuses {
		if st.sha == commit {
			out = append(out, st.Status)
		}
	}
	return out
}

func (s *Server) statusRoutes() {
	s.handle("POST /repos/{owner}/{repo}/statuses/{sha}", docsStatuses+"#create-a-commit-status", repoGate("statuses"), s.createStatus)
}

func orNull(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func (s *Server) statusJSON(r *repoState, st *status) map[string]any {
	creator := s.ensureUser(st.Creator, "")
	cj := creator.json(s)
	return map[string]any{
		"url":         fmt.Sprintf("%srepos/%s/statuses/%s", s.APIURL(), r.fullName(), st.sha),
		"avatar_url":  cj["avatar_url"],
		"id":          st.id,
		"node_id":     fmt.Sprintf("SC_%d", st.id),
		"state":       st.State,
		"description": orNull(st.Description),
		"target_url":  orNull(st.TargetURL),
		"context":     st.Context,
		"created_at":  timestamp(st.createdAt),
		"updated_at":  timestamp(st.createdAt),
		"creator":     cj,
	}
}

func statusErr(field, code, msg string) fieldError {
	return fieldError{Resource: "Status", Field: field, Code: code, Message: msg}
}

// createStatus posts a status as the App's bot. state is required and one
// of error, failure, pending or success; context defaults to "default".
// The SHA must name a commit: a commit of the repo (abbreviated or not),
// any full 40-digit SHA, or a seeded pull request's head, since this
// stand-in does not model every commit (seeded pull requests may have
// made-up heads). Anything else is GitHub's 422 "No commit found for SHA".
func (s *Server) createStatus(c *call) response {
	var req struct {
		State       *string `json:"state"`
		TargetURL   *string `json:"target_url"`
		Description *string `json:"description"`
		Context     *string `json:"context"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if req.State == nil {
		return validationFailed(c.doc, statusErr("state", "missing_field", ""))
	}
	if !slices.Contains(statusStates, *req.State) {
		return validationFailed(c.doc, statusErr("state", "custom", "state is not included in the list"))
	}
	r := c.repo
	ref := c.r.PathValue("sha")
	sha := strings.ToLower(ref)
	if !isSHA(sha) {
		full, ok := "", false
		if isHex(sha) {
			if full, ok = s.resolveCommit(r, sha); !ok && pullWithHead(r, sha) {
				full, ok = sha, true // a seeded pull request's made-up head
			}
		}
		if !ok {
			return errResp(http.StatusUnprocessableEntity, "No commit found for SHA: "+ref, c.doc)
		}
		sha = full
	}
	st := Status{State: *req.State, Creator: s.botLogin()}
	if req.Context != nil {
		st.Context = *req.Context
	}
	if req.Description != nil {
		st.Description = *req.Description
	}
	if req.TargetURL != nil {
		st.TargetURL = *req.TargetURL
	}
	ctx := st.Context
	if ctx == "" {
		ctx = "default"
	}
	n := 0
	for _, old := range r.statuses {
		if old.sha == sha && old.Context == ctx {
			n++
		}
	}
	if n >= maxStatusesPerContext {
		return validationFailed(c.doc, statusErr("", "custom", "This SHA and context has reached the maximum number of statuses."))
	}
	s.ensureUser(s.botLogin(), "Bot")
	out := s.statusJSON(r, s.addStatus(r, sha, st))
	return response{status: http.StatusCreated, body: out, header: http.Header{"Location": {out["url"].(string)}}}
}

// listStatuses lists a ref's statuses newest first, paginated.
func (s *Server) listStatuses(c *call) response {
	sha, ok := s.refCommit(c.repo, c.r.PathValue("ref"))
	if !ok {
		return notFound(c.doc)
	}
	out := []map[string]any{}
	for i := len(c.repo.statuses) - 1; i >= 0; i-- {
		if st := c.repo.statuses[i]; st.sha == sha {
			out = append(out, s.statusJSON(c.repo, st))
		}
	}
	return page(c, out)
}

// combinedState is GitHub's combined state: failure if any context's
// latest status is error or failure; otherwise pending if there is none,
// or any is pending; otherwise success.
func combinedState(latest []*status) string {
	if len(latest) == 0 {
		return "pending"
	}
	state := "success"
	for _, st := range latest {
		switch st.State {
		case "error", "failure":
			return "failure"
		case "pending":
			state = "pending"
		}
	}
	return state
}

// combinedStatus answers a ref's combined status: the latest status of
// each context (in the order the contexts first reported; paginated, with
// total_count counting every context) and the combined state.
func (s *Server) combinedStatus(c *call) response {
	r := c.repo
	sha, ok := s.refCommit(r, c.r.PathValue("ref"))
	if !ok {
		return notFound(c.doc)
	}
	var latest []*status
	index := map[string]int{}
	for _, st := range r.statuses {
		if st.sha != sha {
			continue
		}
		if i, ok := index[st.Context]; ok {
			latest[i] = st
			continue
		}
		index[st.Context] = len(latest)
		latest = append(latest, st)
	}
	lo, hi, h := standin.Paginate(c.r, c.origPath, len(latest))
	list := []map[string]any{}
	for _, st := range latest[lo:hi] {
		list = append(list, s.statusJSON(r, st))
	}
	api := fmt.Sprintf("%srepos/%s/commits/%s", s.APIURL(), r.fullName(), sha)
	return response{status: http.StatusOK, header: h, body: map[string]any{
		"state":          combinedState(latest),
		"statuses":       list,
		"sha":            sha,
		"total_count":    len(latest),
		"repository":     s.repoJSON(r),
		"repository_url": s.APIURL() + "repos/" + r.fullName(),
		"commit_url":     api,
		"url":            api + "/status",
	}}
}
