package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
)

const docsGetPull = "https://docs.github.com/rest/pulls/pulls#get-a-pull-request"

// Pull is a pull request to seed with AddPull.
type Pull struct {
	Number                int // 0: the repo's next number
	Title, Body           string
	State                 string // "open" (default) or "closed"; merged pulls are closed
	Merged, Draft, Locked bool
	User                  string // author login; "octocat" when empty
	HeadSHA               string // a made-up SHA when empty
	HeadRef, BaseRef      string // BaseRef defaults to the default branch
	HeadRepoFullName      string // "" = same repo; "someone/fork" = a fork
}

// AddPull seeds a pull request. As on GitHub, it is an issue too: it shares
// the issue number sequence, and GET .../issues/{number} answers it with a
// "pull_request" key.
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
	it := s.putIssue(r, Issue{Number: p.Number, Title: p.Title, Body: p.Body, State: p.State, Locked: p.Locked, User: p.User}, nil)
	p.Number, p.State, p.User = it.Number, it.State, it.User
	if p.HeadRef == "" {
		p.HeadRef = fmt.Sprintf("patch-%d", p.Number)
	}
	if p.HeadSHA == "" {
		p.HeadSHA = fakeSHA(r.fullName(), "pull", fmt.Sprint(p.Number))
	}
	it.pull = &p
}

func (s *Server) pullRoutes() {
	s.handle("GET /repos/{owner}/{repo}/pulls/{number}", docsGetPull, repoGate("pull_requests"), s.getPull)
}

// fakeSHA is a stable, made-up commit SHA for things this stand-in does not
// model as commits (a branch's head, a seeded pull's head).
func fakeSHA(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}

func mergedAt(it *issue) any {
	if it.pull != nil && it.pull.Merged {
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
	return map[string]any{
		"id":             id,
		"node_id":        fmt.Sprintf("R_%d", id),
		"name":           name,
		"full_name":      fullName,
		"owner":          s.ensureUser(owner, "").json(),
		"private":        false,
		"fork":           true,
		"default_branch": "main",
		"html_url":       s.URL() + "/" + fullName,
		"url":            s.APIURL() + "repos/" + fullName,
	}
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
		"maintainer_can_modify": false,
		"user":                  s.ensureUser(it.User, "").json(),
		"author_association":    s.authorAssociation(r, it.User),
		"labels":                []any{},
		"requested_reviewers":   []any{},
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
			"sha":   fakeSHA(r.fullName(), "branch", p.BaseRef),
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
		"updated_at":   timestamp(it.createdAt),
		"closed_at":    nil,
	}
	if it.State == "closed" {
		m["closed_at"] = timestamp(it.createdAt)
	}
	return m
}

// getPull answers a pull request. An issue number that is not a pull
// request is a 404, as on GitHub.
func (s *Server) getPull(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil || it.pull == nil {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.pullJSON(c.repo, it))
}
