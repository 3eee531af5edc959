package fakegithub

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
)

// The endpoints under /repos/{owner}/{repo}/commits/{ref}/: check runs,
// statuses, the combined status and the pull requests of a commit, next to
// GET .../commits/{ref...} itself (gitdata.go).
//
// A ref with a slash ("feature/x") reaches none of the one-segment
// patterns below: go-github v62 escapes each part of a ref but not the
// slashes between them, so GET .../commits/feature/x/status arrives as is,
// and only the catch-all .../commits/{ref...} matches it. That route
// therefore looks for one of these suffixes first, as GitHub does, and
// answers the commit itself only when there is none.

const docsCommitPulls = "https://docs.github.com/rest/commits/commits#list-pull-requests-associated-with-a-commit"

// route is an endpoint: its documentation, gate and handler.
type route struct {
	doc string
	g   gate
	h   handler
}

// commitSubroutes are the endpoints under /commits/{ref}/, by the last
// path segment.
func (s *Server) commitSubroutes() map[string]route {
	return map[string]route{
		"check-runs": {docsListChecks, repoGate("checks"), s.listCheckRuns},
		"statuses":   {docsStatuses + "#list-commit-statuses-for-a-reference", repoGate("statuses"), s.listStatuses},
		"status":     {docsStatuses + "#get-the-combined-status-for-a-specific-reference", repoGate("statuses"), s.combinedStatus},
		"pulls":      {docsCommitPulls, repoGate("pull_requests"), s.listPullsForCommit},
	}
}

func (s *Server) commitRoutes() {
	subs := s.commitSubroutes()
	for suffix, rt := range subs {
		s.handle("GET /repos/{owner}/{repo}/commits/{ref}/"+suffix, rt.doc, rt.g, rt.h)
	}
	getCommit := route{docsGetCommit, repoGate("contents"), s.getRESTCommit}
	s.handle("GET /repos/{owner}/{repo}/commits/{ref...}", docsGetCommit, nil, func(c *call) response {
		rt := getCommit
		ref := c.r.PathValue("ref")
		if i := strings.LastIndex(ref, "/"); i > 0 {
			if sub, ok := subs[ref[i+1:]]; ok {
				rt = sub
				c.r.SetPathValue("ref", ref[:i])
			}
		}
		c.doc = rt.doc
		if refused := rt.g(s, c); refused != nil {
			return *refused
		}
		return rt.h(c)
	})
}

// pullWithHead tells whether a pull request of the repo has that head SHA.
func pullWithHead(r *repoState, sha string) bool {
	for _, it := range r.issues {
		if it.pull != nil && it.pull.HeadSHA == sha {
			return true
		}
	}
	return false
}

// pullForHeadRef is the same-repo pull request whose head branch is ref:
// an open one first, then the newest.
func pullForHeadRef(r *repoState, ref string) *issue {
	better := func(a, b *issue) bool {
		if ao, bo := a.State == "open", b.State == "open"; ao != bo {
			return ao
		}
		return a.Number > b.Number
	}
	var best *issue
	for _, it := range r.issues {
		if it.pull != nil && sameRepoHead(r, it.pull) && it.pull.HeadRef == ref && (best == nil || better(it, best)) {
			best = it
		}
	}
	return best
}

// refCommit resolves the {ref} of a statuses or pulls endpoint, which may
// be a SHA, a branch or a tag, to the commit SHA statuses hang on: a full
// SHA is taken as is; a same-repo pull request's head branch is its head
// (as for check runs, see commitFor); a branch is its commit (the default
// branch of a repo without commits is the stable made-up SHA the stand-in
// always reports for it); then tags, full ref names and abbreviated SHAs
// of the repo; last, a made-up head SHA of a seeded pull request. ok is
// false when nothing matches. Callers hold s.mu.
func (s *Server) refCommit(r *repoState, ref string) (string, bool) {
	v := strings.ToLower(ref)
	switch {
	case ref == "":
		return "", false
	case isSHA(v):
		return v, true
	}
	if it := pullForHeadRef(r, ref); it != nil {
		return it.pull.HeadSHA, true
	}
	if sha := r.branchSHA(ref); sha != "" {
		return sha, true
	}
	if ref == r.DefaultBranch {
		return fakeSHA(r.fullName(), "branch", ref), true
	}
	if sha, ok := s.resolveCommit(r, ref); ok {
		return sha, true
	}
	if pullWithHead(r, ref) {
		return ref, true
	}
	return "", false
}

// listPullsForCommit lists the pull requests whose head is the commit
// (open, closed and merged alike), or, for a branch name, those whose head
// branch it is, newest first, paginated, in the pulls list's shape. A ref
// that names no commit is GitHub's 422 "No commit found for SHA".
func (s *Server) listPullsForCommit(c *call) response {
	r := c.repo
	ref := c.r.PathValue("ref")
	sha, ok := s.refCommit(r, ref)
	if !ok {
		return errResp(http.StatusUnprocessableEntity, "No commit found for SHA: "+ref, c.doc)
	}
	branch := ""
	if !isSHA(strings.ToLower(ref)) && (r.branchSHA(ref) != "" || pullForHeadRef(r, ref) != nil) {
		branch = ref
	}
	var list []*issue
	for _, it := range r.issues {
		p := it.pull
		if p != nil && (p.HeadSHA == sha || (branch != "" && sameRepoHead(r, p) && p.HeadRef == branch)) {
			list = append(list, it)
		}
	}
	slices.SortFunc(list, func(a, b *issue) int {
		return cmp.Or(b.createdAt.Compare(a.createdAt), cmp.Compare(b.Number, a.Number))
	})
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		out = append(out, s.pullJSON(r, it))
	}
	return page(c, out)
}
