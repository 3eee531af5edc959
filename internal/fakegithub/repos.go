package fakegithub

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

const (
	docsGetRepo     = "https://docs.github.com/rest/repos/repos#get-a-repository"
	docsPermission  = "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user"
	docsGetContents = "https://docs.github.com/rest/repos/contents#get-repository-content"

	// Files larger than this come back from the contents API with empty
	// content and encoding "none" (GitHub docs: "Between 1-100 MB: Only the
	// raw or object custom media types are supported").
	contentsInlineLimit = 1 << 20
)

// Repo is a repository to seed with AddRepo.
type Repo struct {
	ID             int64 // 0: assigned
	Owner, Name    string
	DefaultBranch  string // "main" when empty
	Archived       bool
	Private        bool
	InstallationID int64  // the installation that sees the repo
	OwnerType      string // "Organization" (default) or "User"
	// OwnerPlan is the owner account's plan: PlanFree (default), PlanPro,
	// PlanTeam or PlanEnterprise. It decides whether a private repository
	// takes draft pull requests.
	OwnerPlan string
}

// Owner plans, for Repo.OwnerPlan. GitHub: "Draft pull requests are
// available in public repositories with GitHub Free and GitHub Free for
// organizations, GitHub Pro, and legacy per-repository billing plans, and
// in public and private repositories with GitHub Team and GitHub
// Enterprise Cloud."
const (
	PlanFree       = "free"
	PlanPro        = "pro"
	PlanTeam       = "team"
	PlanEnterprise = "enterprise"
)

// takesDrafts tells whether GitHub lets the repository have draft pull
// requests, by its visibility and its owner's plan.
func (r Repo) takesDrafts() bool {
	return !r.Private || r.OwnerPlan == PlanTeam || r.OwnerPlan == PlanEnterprise
}

type repoState struct {
	Repo
	createdAt  time.Time
	gitDir     string               // the bare repository; "" until first used
	refs       map[string]gitRef    // its refs by full name, reread after every change
	treeCache  map[string][]lsEntry // commit → its whole tree
	signed     map[string]time.Time // commits the server "signed", and when
	seeded     int                  // fixture commits made so far, for their dates
	roles      map[string]string    // lower-case login → role name
	rendered   []Rendered           // every rendered body written, in order (rendered.go)
	issues     map[int]*issue       // issues and pulls share numbers
	lastNumber int
	comments   map[int64]*comment
	checkRuns  []*checkRun
	suites     []*checkSuite            // one per (app, head SHA), made on demand
	labels     map[string]*label        // by lower-case name
	statuses   []*status                // commit statuses, oldest first
	jobLogs    map[int64]string         // GitHub Actions job logs, by job id
	reviewCms  map[int64]*reviewComment // pull request review comments, by id
}

func (r *repoState) fullName() string { return r.Owner + "/" + r.Name }

func repoKey(owner, name string) string { return strings.ToLower(owner + "/" + name) }

// repo finds a repository; GitHub's owner and repo names are not case
// sensitive. Callers hold s.mu.
func (s *Server) repo(owner, name string) *repoState { return s.repos[repoKey(owner, name)] }

func (s *Server) repoByID(id int64) *repoState {
	for _, r := range s.repos {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// mustRepo is for the seeding methods: naming a repo that was never added
// is a mistake in the test, not a condition to emulate.
func (s *Server) mustRepo(owner, name string) *repoState {
	r := s.repo(owner, name)
	if r == nil {
		panic(fmt.Sprintf("fakegithub: unknown repo %s/%s (call AddRepo first)", owner, name))
	}
	return r
}

// AddRepo adds a repository, visible to r.InstallationID (which is created
// for the owner's account if it does not exist yet). Adding a repo again
// updates its settings and keeps its contents.
func (s *Server) AddRepo(r Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	if r.OwnerType == "" {
		r.OwnerType = "Organization"
	}
	if r.OwnerPlan == "" {
		r.OwnerPlan = PlanFree
	}
	if !slices.Contains([]string{PlanFree, PlanPro, PlanTeam, PlanEnterprise}, r.OwnerPlan) {
		panic(fmt.Sprintf("fakegithub: unknown owner plan %q", r.OwnerPlan))
	}
	if old := s.repo(r.Owner, r.Name); old != nil {
		if r.ID == 0 {
			r.ID = old.ID
		}
		branchChanged := old.DefaultBranch != r.DefaultBranch
		old.Repo = r
		if branchChanged {
			s.setHEAD(old)
		}
	} else {
		if r.ID == 0 {
			r.ID = s.nextID()
		}
		s.repos[repoKey(r.Owner, r.Name)] = &repoState{
			Repo:      r,
			createdAt: s.now(),
			refs:      map[string]gitRef{},
			signed:    map[string]time.Time{},
			roles:     map[string]string{},
			issues:    map[int]*issue{},
			comments:  map[int64]*comment{},
			labels:    map[string]*label{},
			jobLogs:   map[int64]string{},
			reviewCms: map[int64]*reviewComment{},
		}
	}
	s.ensureUser(r.Owner, r.OwnerType).typ = r.OwnerType
	if r.InstallationID != 0 {
		in := s.addInstallation(r.InstallationID, r.Owner)
		if strings.EqualFold(in.account, r.Owner) {
			in.accountType = r.OwnerType
		}
	}
}

// SetFile commits a file onto a branch of a repo (ref is a branch name,
// with or without "refs/heads/"): a real commit in the repo's bare
// repository, so the contents API, the Git Data API and git over HTTP all
// see it. A branch that does not exist yet starts from the default branch
// (or as a root commit when the repo has no commit yet). Content equal to
// what is there already makes no commit. The commit is a fixture's: see
// CommitFiles.
func (s *Server) SetFile(owner, repo, ref, p string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if content == nil {
		content = []byte{}
	}
	s.seedCommit(s.mustRepo(owner, repo), ref, map[string][]byte{p: bytes.Clone(content)}, "Update "+strings.Trim(p, "/"))
}

// DeleteFile removes a file (or a directory) from a branch of a repo, in a
// new commit. Deleting what is not there makes no commit.
func (s *Server) DeleteFile(owner, repo, ref, p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	if r.branchSHA(ref) == "" {
		return
	}
	s.seedCommit(r, ref, map[string][]byte{p: nil}, "Delete "+strings.Trim(p, "/"))
}

// roleToPermission folds a role into the legacy base permission, as GitHub
// documents for the collaborator-permission endpoint: "the maintain role is
// mapped to write and the triage role is mapped to read".
var roleToPermission = map[string]string{
	"admin": "admin", "maintain": "write", "write": "write",
	"triage": "read", "read": "read", "none": "none",
}

// SetPermission gives login a role on a repo: admin, maintain, write,
// triage, read or none. The user is created if unknown.
func (s *Server) SetPermission(owner, repo, login, roleName string) {
	if _, ok := roleToPermission[roleName]; !ok {
		panic(fmt.Sprintf("fakegithub: unknown role %q", roleName))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	s.ensureUser(login, "")
	r.roles[strings.ToLower(login)] = roleName
}

type user struct {
	login string
	id    int64
	typ   string // "User", "Bot" or "Organization"
}

// json is the user as GitHub's simple-user describes it, with the
// hypermedia URLs GitHub derives from the login (the description requires
// them; Inspect reads only login, id and type).
func (u *user) json(s *Server) map[string]any {
	api := s.APIURL() + "users/" + u.login
	return map[string]any{
		"login":               u.login,
		"id":                  u.id,
		"node_id":             fmt.Sprintf("U_%d", u.id),
		"type":                u.typ,
		"site_admin":          false,
		"avatar_url":          fmt.Sprintf("https://avatars.githubusercontent.com/u/%d", u.id),
		"gravatar_id":         "",
		"html_url":            "https://github.com/" + u.login,
		"url":                 api,
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
	}
}

// AddUser adds (or updates) a user; typ is "User" or "Bot".
func (s *Server) AddUser(login string, id int64, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.ensureUser(login, typ)
	u.id = id
	if typ != "" {
		u.typ = typ
	}
}

// ensureUser returns the user, creating it when unknown. An empty typ means
// "User", or "Bot" for a login ending in "[bot]". Callers hold s.mu.
func (s *Server) ensureUser(login, typ string) *user {
	if u, ok := s.users[strings.ToLower(login)]; ok {
		return u
	}
	if typ == "" {
		typ = "User"
		if strings.HasSuffix(login, "[bot]") {
			typ = "Bot"
		}
	}
	u := &user{login: login, id: s.nextID(), typ: typ}
	s.users[strings.ToLower(login)] = u
	return u
}

func (s *Server) repoRoutes() {
	s.handle("GET /repos/{owner}/{repo}", docsGetRepo, repoGate("metadata"), s.getRepo)
	s.handle("GET /repos/{owner}/{repo}/collaborators/{username}/permission", docsPermission, repoGate("metadata"), s.getPermission)
	s.handle("GET /repos/{owner}/{repo}/contents", docsGetContents, repoGate("contents"), s.getContents)
	s.handle("GET /repos/{owner}/{repo}/contents/{path...}", docsGetContents, repoGate("contents"), s.getContents)
}

// repoJSON is the repository as GitHub's full-repository describes it.
// What the stand-in does not model (stars, forks, sizes, topics) is what
// a new repository has; the hypermedia URLs are GitHub's templates.
func (s *Server) repoJSON(r *repoState) map[string]any {
	owner := s.ensureUser(r.Owner, r.OwnerType)
	visibility := "public"
	if r.Private {
		visibility = "private"
	}
	api := s.APIURL() + "repos/" + r.fullName()
	created := timestamp(r.createdAt)
	out := map[string]any{
		"id":             r.ID,
		"node_id":        fmt.Sprintf("R_%d", r.ID),
		"name":           r.Name,
		"full_name":      r.fullName(),
		"owner":          owner.json(s),
		"private":        r.Private,
		"visibility":     visibility,
		"archived":       r.Archived,
		"disabled":       false,
		"fork":           false,
		"default_branch": r.DefaultBranch,
		"url":            api,
		"html_url":       s.URL() + "/" + r.fullName(),
		"clone_url":      s.URL() + "/" + r.fullName() + ".git",
		"git_url":        "git:" + strings.TrimPrefix(strings.TrimPrefix(s.URL(), "https:"), "http:") + "/" + r.fullName() + ".git",
		"ssh_url":        "git@" + strings.TrimPrefix(strings.TrimPrefix(s.URL(), "https://"), "http://") + ":" + r.fullName() + ".git",
		"svn_url":        s.URL() + "/" + r.fullName(),
		"mirror_url":     nil,
		"created_at":     created,
		"updated_at":     created,
		"pushed_at":      created,
		"description":    nil,
		"homepage":       nil,
		"language":       nil,
		"license":        nil,
		"size":           0,
		"forks":          0, "forks_count": 0,
		"stargazers_count": 0, "watchers": 0, "watchers_count": 0,
		"open_issues": 0, "open_issues_count": 0,
		"network_count": 0, "subscribers_count": 0,
		"has_issues": true, "has_projects": true, "has_wiki": true, "has_pages": false,
		"has_downloads": true, "has_discussions": false,
		"is_template": false, "topics": []string{},
		"allow_forking": true, "web_commit_signoff_required": false,
	}
	for name, suffix := range repoHypermedia {
		out[name] = api + suffix
	}
	return out
}

// repoHypermedia are the URL templates GitHub gives every repository, by
// field, after the repository's API URL.
var repoHypermedia = map[string]string{
	"archive_url": "/{archive_format}{/ref}", "assignees_url": "/assignees{/user}",
	"blobs_url": "/git/blobs{/sha}", "branches_url": "/branches{/branch}",
	"collaborators_url": "/collaborators{/collaborator}", "comments_url": "/comments{/number}",
	"commits_url": "/commits{/sha}", "compare_url": "/compare/{base}...{head}",
	"contents_url": "/contents/{+path}", "contributors_url": "/contributors",
	"deployments_url": "/deployments", "downloads_url": "/downloads", "events_url": "/events",
	"forks_url": "/forks", "git_commits_url": "/git/commits{/sha}", "git_refs_url": "/git/refs{/sha}",
	"git_tags_url": "/git/tags{/sha}", "hooks_url": "/hooks",
	"issue_comment_url": "/issues/comments{/number}", "issue_events_url": "/issues/events{/number}",
	"issues_url": "/issues{/number}", "keys_url": "/keys{/key_id}", "labels_url": "/labels{/name}",
	"languages_url": "/languages", "merges_url": "/merges", "milestones_url": "/milestones{/number}",
	"notifications_url": "/notifications{?since,all,participating}", "pulls_url": "/pulls{/number}",
	"releases_url": "/releases{/id}", "stargazers_url": "/stargazers", "statuses_url": "/statuses/{sha}",
	"subscribers_url": "/subscribers", "subscription_url": "/subscription", "tags_url": "/tags",
	"teams_url": "/teams", "trees_url": "/git/trees{/sha}",
}

func (s *Server) getRepo(c *call) response { return jsonResp(http.StatusOK, s.repoJSON(c.repo)) }

// getPermission answers the collaborator-permission endpoint: "permission"
// is the folded legacy role, "role_name" the real one. A login that is no
// user at all is a 404. A user without a role on the repo gets "read" on a
// public repo (anyone may read it) and "none" on a private one; the owner
// of a user-owned repo is its admin.
func (s *Server) getPermission(c *call) response {
	r := c.repo
	login := c.r.PathValue("username")
	u, ok := s.users[strings.ToLower(login)]
	if !ok {
		return errResp(http.StatusNotFound, login+" is not a user", c.doc)
	}
	role, ok := r.roles[strings.ToLower(login)]
	switch {
	case ok:
	case r.OwnerType == "User" && strings.EqualFold(login, r.Owner):
		role = "admin"
	case !r.Private:
		role = "read"
	default:
		role = "none"
	}
	rank := map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}[role]
	uj := u.json(s)
	uj["role_name"] = role
	uj["permissions"] = map[string]bool{
		"pull": rank >= 1, "triage": rank >= 2, "push": rank >= 3, "maintain": rank >= 4, "admin": rank >= 5,
	}
	return jsonResp(http.StatusOK, map[string]any{
		"permission": roleToPermission[role],
		"role_name":  role,
		"user":       uj,
	})
}

// getContents answers a file object (base64 content) or, for a directory,
// a JSON array of its entries, read from the commit the ref names.
func (s *Server) getContents(c *call) response {
	r := c.repo
	ref := c.r.URL.Query().Get("ref")
	commit, ok := s.resolveCommit(r, ref)
	if !ok {
		if ref == "" {
			return errResp(http.StatusNotFound, "This repository is empty.", c.doc)
		}
		return errResp(http.StatusNotFound, "No commit found for the ref "+ref, c.doc)
	}
	refName := ref
	if refName == "" {
		refName = r.DefaultBranch
	}
	tree, err := s.commitTree(r, commit)
	if err != nil {
		return gitFailure(err)
	}
	p := strings.Trim(c.r.PathValue("path"), "/")
	if p != "" {
		i := slices.IndexFunc(tree, func(e lsEntry) bool { return e.path == p })
		if i < 0 {
			return notFound(c.doc)
		}
		e := tree[i]
		switch e.typ {
		case "blob":
			content, err := s.git(r, nil, nil, "cat-file", "blob", e.sha)
			if err != nil {
				return gitFailure(err)
			}
			if e.mode == "120000" {
				// GitHub: "If the requested {path} points to a symlink, and
				// the symlink's target is a normal file in the repository,
				// then the API responds with the content of the file.
				// Otherwise, the API responds with an object describing the
				// symlink itself."
				if target, ok := symlinkTarget(tree, p, string(content)); ok {
					if content, err = s.git(r, nil, nil, "cat-file", "blob", target.sha); err != nil {
						return gitFailure(err)
					}
					e = target
				}
			}
			accept := c.r.Header.Get("Accept")
			if strings.Contains(accept, "vnd.github.raw") {
				return response{status: http.StatusOK, raw: content, header: http.Header{"Content-Type": {"application/vnd.github.raw"}}}
			}
			if len(content) > contentsInlineLimit && !strings.Contains(accept, "vnd.github.object") {
				// "Between 1-100 MB: Only the raw or object custom media
				// types are supported."
				return jsonResp(http.StatusForbidden, map[string]any{
					"message":           "This API returns blobs up to 1 MB in size. The requested blob is too large to fetch via the API, but you can use the Git Data API to request blobs up to 100 MB in size.",
					"errors":            []map[string]any{{"resource": "Blob", "field": "data", "code": "too_large"}},
					"documentation_url": c.doc,
				})
			}
			return jsonResp(http.StatusOK, s.fileJSON(r, refName, e, content))
		case "commit":
			m := s.contentLinks(r, refName, p, "submodule", e.sha)
			m["size"] = 0
			return jsonResp(http.StatusOK, m)
		}
	}

	// A directory: its entries.
	prefix := ""
	if p != "" {
		prefix = p + "/"
	}
	out := []map[string]any{}
	for _, e := range tree {
		rest, ok := strings.CutPrefix(e.path, prefix)
		if !ok || rest == "" || strings.Contains(rest, "/") {
			continue
		}
		out = append(out, s.entryJSON(r, refName, e))
	}
	return jsonResp(http.StatusOK, out)
}

// symlinkTarget is the normal file (a blob that is no symlink) in tree
// that the symlink at p, pointing at target, names, if there is one.
func symlinkTarget(tree []lsEntry, p, target string) (lsEntry, bool) {
	if path.IsAbs(target) {
		return lsEntry{}, false
	}
	want := path.Join(path.Dir(p), target)
	if want == ".." || strings.HasPrefix(want, "../") {
		return lsEntry{}, false // outside the repository
	}
	i := slices.IndexFunc(tree, func(e lsEntry) bool { return e.path == want })
	if i < 0 || tree[i].typ != "blob" || tree[i].mode == "120000" {
		return lsEntry{}, false
	}
	return tree[i], true
}

// contentType is the contents API's name for a tree entry.
func contentType(e lsEntry) string {
	switch {
	case e.typ == "tree":
		return "dir"
	case e.typ == "commit":
		return "submodule"
	case e.mode == "120000":
		return "symlink"
	}
	return "file"
}

func (s *Server) contentLinks(r *repoState, branch, p, typ, sha string) map[string]any {
	kind, gitKind := "blob", "blobs"
	if typ == "dir" {
		kind, gitKind = "tree", "trees"
	}
	self := fmt.Sprintf("%srepos/%s/contents/%s?ref=%s", s.APIURL(), r.fullName(), p, branch)
	git := fmt.Sprintf("%srepos/%s/git/%s/%s", s.APIURL(), r.fullName(), gitKind, sha)
	html := fmt.Sprintf("%s/%s/%s/%s/%s", s.URL(), r.fullName(), kind, branch, p)
	m := map[string]any{
		"type":     typ,
		"name":     path.Base(p),
		"path":     p,
		"sha":      sha,
		"url":      self,
		"git_url":  git,
		"html_url": html,
		"_links":   map[string]string{"self": self, "git": git, "html": html},
	}
	if typ == "file" {
		m["download_url"] = fmt.Sprintf("%s/%s/raw/%s/%s", s.URL(), r.fullName(), branch, p)
	} else {
		m["download_url"] = nil
	}
	return m
}

func (s *Server) fileJSON(r *repoState, ref string, e lsEntry, content []byte) map[string]any {
	m := s.contentLinks(r, ref, e.path, contentType(e), e.sha)
	m["size"] = len(content)
	if e.mode == "120000" {
		// GitHub describes a symlink rather than following it here.
		m["target"] = string(content)
		return m
	}
	if len(content) > contentsInlineLimit {
		// Only with the object media type: the default one is refused.
		m["encoding"], m["content"] = "none", ""
	} else {
		m["encoding"], m["content"] = "base64", wrapBase64(content)
	}
	return m
}

func (s *Server) entryJSON(r *repoState, ref string, e lsEntry) map[string]any {
	m := s.contentLinks(r, ref, e.path, contentType(e), e.sha)
	m["size"] = e.size
	return m
}

// wrapBase64 encodes as GitHub does in the contents API: standard base64
// with a newline after every 60 characters. (Go's decoder skips newlines.)
func wrapBase64(b []byte) string {
	enc := base64.StdEncoding.EncodeToString(b)
	var sb strings.Builder
	for len(enc) > 60 {
		sb.WriteString(enc[:60])
		sb.WriteByte('\n')
		enc = enc[60:]
	}
	sb.WriteString(enc)
	sb.WriteByte('\n')
	return sb.String()
}
