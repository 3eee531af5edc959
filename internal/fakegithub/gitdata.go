package fakegithub

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// The Git Data API (blobs, trees, commits, refs) and the REST commit, over
// the repo's bare repository. Every route needs "contents": read to read,
// write to write.

const (
	docsGitBlobs   = "https://docs.github.com/rest/git/blobs"
	docsGitTrees   = "https://docs.github.com/rest/git/trees"
	docsGitCommits = "https://docs.github.com/rest/git/commits"
	docsGitRefs    = "https://docs.github.com/rest/git/refs"
	docsGetCommit  = "https://docs.github.com/rest/commits/commits#get-a-commit"

	// botUserID is the id of the App's bot user, which commits made with an
	// installation token are authored by.
	botUserID = 148_424_242

	// signedByGitHub stands in for the signature GitHub puts on the commits
	// it signs. Nothing can verify it: the stand-in only remembers which
	// commits it "signed" and reports them verified, as GitHub would.
	signedByGitHub = "-----BEGIN PGP SIGNATURE-----\n\nfakegithub: signed by the stand-in, not by a real key\n-----END PGP SIGNATURE-----\n"
)

// modeTypes are the tree entry modes GitHub accepts, and the object type
// each needs.
var modeTypes = map[string]string{
	"100644": "blob",
	"100755": "blob",
	"120000": "blob",
	"040000": "tree",
	"160000": "commit",
}

// BotLogin is the App's bot user, "inspect-app[bot]": it authors comments,
// pull requests and commits made with an installation token.
func (s *Server) BotLogin() string { return s.botLogin() }

// BotEmail is the noreply email of the App's bot, which commits it authors
// carry: "<bot id>+inspect-app[bot]@users.noreply.github.com".
func (s *Server) BotEmail() string {
	return fmt.Sprintf("%d+%s@users.noreply.github.com", botUserID, s.botLogin())
}

func (s *Server) gitDataRoutes() {
	g := repoGate("contents")
	s.handle("POST /repos/{owner}/{repo}/git/blobs", docsGitBlobs+"#create-a-blob", g, s.createBlob)
	s.handle("GET /repos/{owner}/{repo}/git/blobs/{sha}", docsGitBlobs+"#get-a-blob", g, s.getBlob)
	s.handle("POST /repos/{owner}/{repo}/git/trees", docsGitTrees+"#create-a-tree", g, s.createTree)
	s.handle("GET /repos/{owner}/{repo}/git/trees/{sha...}", docsGitTrees+"#get-a-tree", g, s.getTree)
	s.handle("POST /repos/{owner}/{repo}/git/commits", docsGitCommits+"#create-a-commit", g, s.createGitCommit)
	s.handle("GET /repos/{owner}/{repo}/git/commits/{sha}", docsGitCommits+"#get-a-commit-object", g, s.getGitCommit)
	s.handle("GET /repos/{owner}/{repo}/git/ref/{ref...}", docsGitRefs+"#get-a-reference", g, s.getRef)
	s.handle("GET /repos/{owner}/{repo}/git/matching-refs/{ref...}", docsGitRefs+"#list-matching-references", g, s.matchingRefs)
	s.handle("GET /repos/{owner}/{repo}/git/refs/{ref...}", docsGitRefs+"#get-a-reference", g, s.legacyGetRefs)
	s.handle("POST /repos/{owner}/{repo}/git/refs", docsGitRefs+"#create-a-reference", g, s.createRef)
	s.handle("PATCH /repos/{owner}/{repo}/git/refs/{ref...}", docsGitRefs+"#update-a-reference", g, s.updateRefRoute)
	s.handle("DELETE /repos/{owner}/{repo}/git/refs/{ref...}", docsGitRefs+"#delete-a-reference", g, s.deleteRef)
	// GET /repos/{owner}/{repo}/commits/{ref...} (getRESTCommit) is
	// registered with the other /commits/ routes, in commits.go.
}

// invalidRequest is GitHub's 422 for a body that breaks the endpoint's
// JSON schema.
func invalidRequest(doc, detail string) response {
	return errResp(http.StatusUnprocessableEntity, "Invalid request.\n\n"+detail, doc)
}

// gitFailure answers an unexpected git failure: a bug in the stand-in or
// the test, not something GitHub does, so it says so.
func gitFailure(err error) response {
	return errResp(http.StatusInternalServerError, "fakegithub: "+err.Error(), docsRoot)
}

func (s *Server) gitURL(r *repoState, kind, sha string) string {
	return fmt.Sprintf("%srepos/%s/git/%s/%s", s.APIURL(), r.fullName(), kind, sha)
}

// Blobs.

func (s *Server) createBlob(c *call) response {
	var req struct {
		Content  *string `json:"content"`
		Encoding *string `json:"encoding"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if req.Content == nil {
		return invalidRequest(c.doc, `"content" wasn't supplied.`)
	}
	content := []byte(*req.Content)
	enc := "utf-8"
	if req.Encoding != nil {
		enc = *req.Encoding
	}
	switch enc {
	case "utf-8":
	case "base64":
		b, err := base64.StdEncoding.DecodeString(strings.NewReplacer("\n", "", "\r", "").Replace(*req.Content))
		if err != nil {
			return invalidRequest(c.doc, "content is not valid Base64.")
		}
		content = b
	default:
		return invalidRequest(c.doc, fmt.Sprintf(`For 'properties/encoding', %q is not one of ["utf-8", "base64"].`, enc))
	}
	sha, err := s.hashBlob(c.repo, content)
	if err != nil {
		return gitFailure(err)
	}
	url := s.gitURL(c.repo, "blobs", sha)
	return response{status: http.StatusCreated, body: map[string]any{"sha": sha, "url": url}, header: http.Header{"Location": {url}}}
}

func (s *Server) getBlob(c *call) response {
	sha := strings.ToLower(c.r.PathValue("sha"))
	if s.objectType(c.repo, sha) != "blob" {
		return notFound(c.doc)
	}
	content, err := s.git(c.repo, nil, nil, "cat-file", "blob", sha)
	if err != nil {
		return gitFailure(err)
	}
	if strings.Contains(c.r.Header.Get("Accept"), "vnd.github.raw") {
		return response{status: http.StatusOK, raw: content, header: http.Header{"Content-Type": {"application/vnd.github.raw"}}}
	}
	return jsonResp(http.StatusOK, map[string]any{
		"sha":      sha,
		"node_id":  "B_" + sha,
		"size":     len(content),
		"url":      s.gitURL(c.repo, "blobs", sha),
		"content":  wrapBase64(content),
		"encoding": "base64",
	})
}

// Trees.

// treeEntryReq is one entry of a create-tree body. sha is kept raw to tell
// an explicit null (delete the path) from an absent key.
type treeEntryReq struct {
	Path    *string         `json:"path"`
	Mode    *string         `json:"mode"`
	Type    *string         `json:"type"`
	SHA     json.RawMessage `json:"sha"`
	Content *string         `json:"content"`
}

// validTreePath refuses what git (and GitHub) will not store: empty, "."
// or ".." components, a ".git" component, leading or doubled slashes.
func validTreePath(p string) bool {
	if p == "" || strings.ContainsRune(p, 0) {
		return false
	}
	for _, part := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

// createTree builds a tree: base_tree's entries (none without it), with
// each entry of "tree" applied in order at its path, nested paths making
// or editing subtrees. An entry gives its content inline, or an object by
// sha, or "sha": null to delete the path, which must exist: GitHub answers
// 422 "GitRPC::BadObjectState" otherwise. A directory left empty goes.
func (s *Server) createTree(c *call) response {
	var req struct {
		BaseTree *string        `json:"base_tree"`
		Tree     []treeEntryReq `json:"tree"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if req.Tree == nil {
		return invalidRequest(c.doc, `"tree" wasn't supplied.`)
	}
	r := c.repo

	// Validate every entry before writing anything.
	type op struct {
		path    string
		ent     *treeEnt // nil: delete
		content *string
	}
	var ops []op
	var refs []string
	for i, e := range req.Tree {
		where := fmt.Sprintf("tree[%d]", i)
		if e.Path == nil || !validTreePath(*e.Path) {
			p := ""
			if e.Path != nil {
				p = *e.Path
			}
			return errResp(http.StatusUnprocessableEntity, fmt.Sprintf("%s.path contains a malformed path component: %q", where, p), c.doc)
		}
		p := strings.TrimSuffix(*e.Path, "/")
		var sha *string
		shaNull := false
		if len(e.SHA) > 0 {
			if string(bytes.TrimSpace(e.SHA)) == "null" {
				shaNull = true
			} else {
				var v string
				if json.Unmarshal(e.SHA, &v) != nil {
					return invalidRequest(c.doc, fmt.Sprintf("For 'items', %s is not a string or null.", string(e.SHA)))
				}
				sha = &v
			}
		}
		if sha != nil && e.Content != nil {
			return errResp(http.StatusUnprocessableEntity, fmt.Sprintf("%s: use either sha or content, not both", where), c.doc)
		}
		if shaNull && e.Content == nil {
			// A deletion: GitHub ignores mode and type.
			ops = append(ops, op{path: p})
			continue
		}
		if sha == nil && e.Content == nil {
			return invalidRequest(c.doc, fmt.Sprintf(`%s: either "sha" or "content" must be supplied.`, where))
		}
		mode := ""
		if e.Mode != nil {
			mode = *e.Mode
		}
		if mode == "" && e.Content != nil {
			mode = "100644"
		}
		want, ok := modeTypes[mode]
		if !ok {
			return invalidRequest(c.doc, fmt.Sprintf(`For 'properties/mode', %q is not one of ["100644", "100755", "040000", "160000", "120000"].`, mode))
		}
		typ := want
		if e.Type != nil {
			typ = *e.Type
			if typ != "blob" && typ != "tree" && typ != "commit" {
				return invalidRequest(c.doc, fmt.Sprintf(`For 'properties/type', %q is not one of ["blob", "tree", "commit"].`, typ))
			}
			if typ != want {
				return errResp(http.StatusUnprocessableEntity, fmt.Sprintf("%s: mode %s needs type %s, not %s", where, mode, want, typ), c.doc)
			}
		}
		if e.Content != nil && typ != "blob" {
			return errResp(http.StatusUnprocessableEntity, fmt.Sprintf("%s: content can only make a blob", where), c.doc)
		}
		o := op{path: p, ent: &treeEnt{mode: mode, typ: typ}, content: e.Content}
		if sha != nil {
			v := strings.ToLower(*sha)
			if !isSHA(v) {
				return errResp(http.StatusUnprocessableEntity, fmt.Sprintf("tree.sha %s is not a valid %s", *sha, typ), c.doc)
			}
			o.ent.sha = v
			if typ != "commit" { // a submodule's commit lives in another repository
				refs = append(refs, v)
			}
		}
		ops = append(ops, o)
	}
	base := ""
	if req.BaseTree != nil && *req.BaseTree != "" {
		base = strings.ToLower(*req.BaseTree)
		refs = append(refs, base)
	}
	types, err := s.objectTypes(r, refs...)
	if err != nil {
		return gitFailure(err)
	}
	if base != "" && types[base] != "tree" {
		return errResp(http.StatusUnprocessableEntity, "base_tree is not a valid tree oid", c.doc)
	}
	for _, o := range ops {
		if o.ent != nil && o.ent.sha != "" && o.ent.typ != "commit" && types[o.ent.sha] != o.ent.typ {
			return errResp(http.StatusUnprocessableEntity, fmt.Sprintf("tree.sha %s is not a valid %s", o.ent.sha, o.ent.typ), c.doc)
		}
	}

	root, err := s.readTree(r, base)
	if err != nil {
		return gitFailure(err)
	}
	for _, o := range ops {
		if o.content != nil {
			if o.ent.sha, err = s.hashBlob(r, []byte(*o.content)); err != nil {
				return gitFailure(err)
			}
		}
		err := s.editPath(r, root, o.path, o.ent)
		if errors.Is(err, errNoSuchPath) {
			// GitHub: "returns an error if you try to delete a file that
			// does not exist"; the whole request fails.
			return errResp(http.StatusUnprocessableEntity, "GitRPC::BadObjectState", c.doc)
		}
		if err != nil {
			return gitFailure(err)
		}
	}
	sha, err := s.writeTree(r, root)
	if err != nil {
		return gitFailure(err)
	}
	body, err := s.treeJSON(r, sha, false)
	if err != nil {
		return gitFailure(err)
	}
	return response{status: http.StatusCreated, body: body, header: http.Header{"Location": {s.gitURL(r, "trees", sha)}}}
}

func (s *Server) treeJSON(r *repoState, sha string, recursive bool) (map[string]any, error) {
	entries, err := s.lsTree(r, sha, recursive)
	if err != nil {
		return nil, err
	}
	list := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		m := map[string]any{"path": e.path, "mode": e.mode, "type": e.typ, "sha": e.sha}
		switch e.typ {
		case "blob":
			m["size"] = e.size
			m["url"] = s.gitURL(r, "blobs", e.sha)
		case "tree":
			m["url"] = s.gitURL(r, "trees", e.sha)
		}
		list = append(list, m)
	}
	return map[string]any{"sha": sha, "url": s.gitURL(r, "trees", sha), "tree": list, "truncated": false}, nil
}

// getTree answers a tree, named by its SHA, a commit's SHA, or a branch or
// tag name; recursive (any value) lists every entry beneath it.
func (s *Server) getTree(c *call) response {
	r := c.repo
	ref := c.r.PathValue("sha")
	var tree string
	if v := strings.ToLower(ref); isSHA(v) {
		switch s.objectType(r, v) {
		case "tree":
			tree = v
		case "commit":
			if pc, err := s.readCommit(r, v); err == nil && pc != nil {
				tree = pc.tree
			}
		}
	} else if commit, ok := s.resolveCommit(r, ref); ok && ref != "" {
		if pc, err := s.readCommit(r, commit); err == nil && pc != nil {
			tree = pc.tree
		}
	}
	if tree == "" {
		return notFound(c.doc)
	}
	body, err := s.treeJSON(r, tree, c.r.URL.Query().Has("recursive"))
	if err != nil {
		return gitFailure(err)
	}
	return jsonResp(http.StatusOK, body)
}

// Commits.

type identReq struct {
	Name  *string `json:"name"`
	Email *string `json:"email"`
	Date  *string `json:"date"`
}

// parse checks an author or committer as GitHub does: name and email
// required, date ISO 8601 (now when absent).
func (id *identReq) parse(field string, now time.Time) (ident, string) {
	if id.Name == nil || strings.TrimSpace(*id.Name) == "" {
		return ident{}, fmt.Sprintf(`"name" wasn't supplied for %q.`, field)
	}
	if id.Email == nil || strings.TrimSpace(*id.Email) == "" {
		return ident{}, fmt.Sprintf(`"email" wasn't supplied for %q.`, field)
	}
	if strings.ContainsAny(*id.Name+*id.Email, "<>\n\x00") {
		return ident{}, fmt.Sprintf("%s has characters git does not allow in a name or an email.", field)
	}
	out := ident{name: *id.Name, email: *id.Email, when: now}
	if id.Date != nil {
		t, err := time.Parse(time.RFC3339, *id.Date)
		if err != nil {
			return ident{}, fmt.Sprintf("%s.date %q is not a valid ISO 8601 date.", field, *id.Date)
		}
		out.when = t
	}
	return out, ""
}

// createGitCommit writes a commit. Without author and committer, it is
// authored and committed by the App's bot at the current time and GitHub
// signs it, so it reads back verified; with either given, it is unsigned.
func (s *Server) createGitCommit(c *call) response {
	var req struct {
		Message   *string   `json:"message"`
		Tree      *string   `json:"tree"`
		Parents   []string  `json:"parents"`
		Author    *identReq `json:"author"`
		Committer *identReq `json:"committer"`
		Signature *string   `json:"signature"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	switch {
	case req.Message == nil:
		return invalidRequest(c.doc, `"message" wasn't supplied.`)
	case req.Tree == nil:
		return invalidRequest(c.doc, `"tree" wasn't supplied.`)
	case req.Signature != nil:
		// GitHub would store the signature in the commit; this stand-in
		// cannot, and says so rather than pretend.
		return errResp(http.StatusUnprocessableEntity, "fakegithub: commits with a caller-supplied signature are not supported", c.doc)
	}
	r := c.repo
	tree := strings.ToLower(*req.Tree)
	parents := make([]string, 0, len(req.Parents))
	for _, p := range req.Parents {
		parents = append(parents, strings.ToLower(p))
	}
	ids := append([]string{tree}, parents...)
	types, err := s.objectTypes(r, ids...)
	if err != nil {
		return gitFailure(err)
	}
	if !isSHA(tree) || types[tree] != "tree" {
		return errResp(http.StatusUnprocessableEntity, "Tree SHA does not exist", c.doc)
	}
	for _, p := range parents {
		if !isSHA(p) || types[p] != "commit" {
			return errResp(http.StatusUnprocessableEntity, "Parent SHA does not exist or is not a commit object", c.doc)
		}
	}

	now := s.now().UTC().Truncate(time.Second)
	bot := ident{name: s.botLogin(), email: s.BotEmail(), when: now}
	author, committer := bot, bot
	if req.Author != nil {
		var msg string
		if author, msg = req.Author.parse("author", now); msg != "" {
			return invalidRequest(c.doc, msg)
		}
		committer = author
	}
	if req.Committer != nil {
		var msg string
		if committer, msg = req.Committer.parse("committer", now); msg != "" {
			return invalidRequest(c.doc, msg)
		}
	}
	sha, err := s.makeCommit(r, tree, parents, *req.Message, author, committer)
	if err != nil {
		return gitFailure(err)
	}
	if req.Author == nil && req.Committer == nil {
		s.ensureUser(s.botLogin(), "Bot")
		if _, ok := r.signed[sha]; !ok {
			r.signed[sha] = now
		}
	}
	pc, err := s.readCommit(r, sha)
	if err != nil || pc == nil {
		return gitFailure(fmt.Errorf("reading back commit %s: %v", sha, err))
	}
	body := s.gitCommitJSON(r, pc)
	return response{status: http.StatusCreated, body: body, header: http.Header{"Location": {body["url"].(string)}}}
}

func (s *Server) getGitCommit(c *call) response {
	sha := strings.ToLower(c.r.PathValue("sha"))
	if !isSHA(sha) {
		return notFound(c.doc)
	}
	pc, err := s.readCommit(c.repo, sha)
	if err != nil {
		return gitFailure(err)
	}
	if pc == nil {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.gitCommitJSON(c.repo, pc))
}

func identJSON(id ident) map[string]any {
	return map[string]any{"name": id.name, "email": id.email, "date": timestamp(id.when)}
}

// verificationJSON is a commit's "verification": verified for the commits
// the server signed; a signature the server did not make is from a key it
// does not know; anything else is unsigned.
func (s *Server) verificationJSON(r *repoState, pc *parsedCommit) map[string]any {
	if at, ok := r.signed[pc.sha]; ok {
		return map[string]any{"verified": true, "reason": "valid", "signature": signedByGitHub, "payload": pc.payload, "verified_at": timestamp(at)}
	}
	if pc.signature != "" {
		return map[string]any{"verified": false, "reason": "unknown_key", "signature": pc.signature, "payload": pc.payload, "verified_at": nil}
	}
	return map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}
}

func (s *Server) parentsJSON(r *repoState, pc *parsedCommit, kind string) []map[string]any {
	out := []map[string]any{}
	for _, p := range pc.parents {
		url := s.gitURL(r, "commits", p)
		if kind == "rest" {
			url = fmt.Sprintf("%srepos/%s/commits/%s", s.APIURL(), r.fullName(), p)
		}
		out = append(out, map[string]any{"sha": p, "url": url, "html_url": fmt.Sprintf("%s/%s/commit/%s", s.URL(), r.fullName(), p)})
	}
	return out
}

func (s *Server) gitCommitJSON(r *repoState, pc *parsedCommit) map[string]any {
	return map[string]any{
		"sha":          pc.sha,
		"node_id":      "C_" + pc.sha,
		"url":          s.gitURL(r, "commits", pc.sha),
		"html_url":     fmt.Sprintf("%s/%s/commit/%s", s.URL(), r.fullName(), pc.sha),
		"author":       identJSON(pc.author),
		"committer":    identJSON(pc.committer),
		"message":      pc.message,
		"tree":         map[string]any{"sha": pc.tree, "url": s.gitURL(r, "trees", pc.tree)},
		"parents":      s.parentsJSON(r, pc, "git"),
		"verification": s.verificationJSON(r, pc),
	}
}

// userForEmail finds the user a commit email belongs to: GitHub's noreply
// forms "<id>+<login>@users.noreply.github.com" and
// "<login>@users.noreply.github.com". Others match nobody.
func (s *Server) userForEmail(email string) any {
	local, ok := strings.CutSuffix(strings.ToLower(email), "@users.noreply.github.com")
	if !ok {
		return nil
	}
	if _, login, ok := strings.Cut(local, "+"); ok {
		local = login
	}
	if u, ok := s.users[local]; ok {
		return u.json(s)
	}
	return nil
}

// getRESTCommit answers GET /repos/{owner}/{repo}/commits/{ref}: the
// commit a SHA, branch or tag names, with the git commit (and its
// verification) under "commit" and the GitHub users under "author" and
// "committer".
func (s *Server) getRESTCommit(c *call) response {
	r := c.repo
	ref := c.r.PathValue("ref")
	sha, ok := s.resolveCommit(r, ref)
	if !ok || ref == "" {
		return errResp(http.StatusUnprocessableEntity, "No commit found for SHA: "+ref, c.doc)
	}
	if strings.Contains(c.r.Header.Get("Accept"), "vnd.github.sha") {
		return response{status: http.StatusOK, raw: []byte(sha), header: http.Header{"Content-Type": {"application/vnd.github.sha"}}}
	}
	out, err := s.restCommitJSON(r, sha)
	if err != nil {
		return gitFailure(err)
	}
	return jsonResp(http.StatusOK, out)
}

// restCommitJSON is a commit as the REST commits API shows it (GET
// .../commits/{ref}, and the commits of a comparison). Callers hold s.mu.
func (s *Server) restCommitJSON(r *repoState, sha string) (map[string]any, error) {
	pc, err := s.readCommit(r, sha)
	if err != nil || pc == nil {
		return nil, fmt.Errorf("reading commit %s: %v", sha, err)
	}
	api := fmt.Sprintf("%srepos/%s/commits/%s", s.APIURL(), r.fullName(), sha)
	return map[string]any{
		"sha":          sha,
		"node_id":      "C_" + sha,
		"url":          api,
		"html_url":     fmt.Sprintf("%s/%s/commit/%s", s.URL(), r.fullName(), sha),
		"comments_url": api + "/comments",
		"commit": map[string]any{
			"url":           s.gitURL(r, "commits", sha),
			"author":        identJSON(pc.author),
			"committer":     identJSON(pc.committer),
			"message":       pc.message,
			"tree":          map[string]any{"sha": pc.tree, "url": s.gitURL(r, "trees", pc.tree)},
			"comment_count": 0,
			"verification":  s.verificationJSON(r, pc),
		},
		"author":    s.userForEmail(pc.author.email),
		"committer": s.userForEmail(pc.committer.email),
		"parents":   s.parentsJSON(r, pc, "rest"),
		"files":     s.commitFiles(r, pc, sha),
	}, nil
}

// emptyTree is git's empty tree: what a root commit is compared with.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// commitFiles are a commit's changes from its first parent, as GET
// .../commits/{ref} lists them: compareFiles' entries, each with its
// unified-diff hunks as "patch" (from the first "@@", as GitHub gives it;
// none for a binary file). A diff git cannot make lists no files.
// Callers hold s.mu.
func (s *Server) commitFiles(r *repoState, pc *parsedCommit, sha string) []map[string]any {
	parent := emptyTree
	if len(pc.parents) > 0 {
		parent = pc.parents[0]
	}
	files, err := s.compareFiles(r, parent, sha)
	if err != nil {
		return []map[string]any{}
	}
	for _, f := range files {
		out, err := s.git(r, nil, nil, "diff", "--no-renames", "--no-color", parent, sha, "--", f["filename"].(string))
		if err != nil {
			continue
		}
		if i := bytes.Index(out, []byte("\n@@")); i >= 0 {
			f["patch"] = strings.TrimSuffix(string(out[i+1:]), "\n")
		}
	}
	return files
}

// Refs.

func (s *Server) refJSON(r *repoState, name string, g gitRef) map[string]any {
	kind := "commits"
	if g.typ == "tag" {
		kind = "tags"
	}
	return map[string]any{
		"ref":     name,
		"node_id": "REF_" + name,
		"url":     fmt.Sprintf("%srepos/%s/git/%s", s.APIURL(), r.fullName(), name),
		"object":  map[string]any{"type": g.typ, "sha": g.sha, "url": s.gitURL(r, kind, g.sha)},
	}
}

// refParam is the ref of a /git/ref/{ref} path, which GitHub takes
// without "refs/" ("heads/main"); a leading "refs/" is tolerated.
func refParam(c *call) string {
	return "refs/" + strings.TrimPrefix(c.r.PathValue("ref"), "refs/")
}

func (s *Server) getRef(c *call) response {
	name := refParam(c)
	g, ok := c.repo.refs[name]
	if !ok {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.refJSON(c.repo, name, g))
}

// matchingRefs lists the refs whose names start with the given one
// ("heads/feat" matches heads/feature and heads/feat-2), sorted.
func (s *Server) matchingRefs(c *call) response {
	prefix := "refs/"
	if p := c.r.PathValue("ref"); p != "" {
		prefix = refParam(c)
	}
	out := []map[string]any{}
	for _, name := range c.repo.refNames(prefix) {
		out = append(out, s.refJSON(c.repo, name, c.repo.refs[name]))
	}
	return page(c, out)
}

// legacyGetRefs is the older GET /git/refs/{ref}: the ref itself when it
// exists, else the refs under it as an array, else a 404.
func (s *Server) legacyGetRefs(c *call) response {
	if c.r.PathValue("ref") == "" {
		return s.matchingRefs(c)
	}
	name := refParam(c)
	if g, ok := c.repo.refs[name]; ok {
		return jsonResp(http.StatusOK, s.refJSON(c.repo, name, g))
	}
	if names := c.repo.refNames(name + "/"); len(names) > 0 {
		out := []map[string]any{}
		for _, n := range names {
			out = append(out, s.refJSON(c.repo, n, c.repo.refs[n]))
		}
		return page(c, out)
	}
	return notFound(c.doc)
}

// validRefName is git's check-ref-format, for a full ref name with at
// least two slashes ("refs/heads/x"), as GitHub requires.
func validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.Count(name, "/") < 2 ||
		strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") ||
		strings.Contains(name, "..") || strings.Contains(name, "//") || strings.Contains(name, "@{") || name == "@" {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	for _, ch := range name {
		if ch < 0x20 || ch == 0x7f || strings.ContainsRune(" ~^:?*[\\", ch) {
			return false
		}
	}
	return utf8.ValidString(name)
}

// refusesWorkflows answers GitHub's refusal when newSHA brings changes to
// .github/workflows/ and the token lacks "workflows: write". GitHub does
// not document the status of this refusal on the REST API; this stand-in
// answers 403, with the message a refused push gets. Callers hold s.mu.
func (s *Server) refusesWorkflows(c *call, newSHA string) *response {
	if levelRank[c.cred.tok.perms["workflows"]] >= levelRank["write"] {
		return nil
	}
	file, err := s.workflowChange(c.repo, newSHA)
	if err != nil {
		r := gitFailure(err)
		return &r
	}
	if file == "" {
		return nil
	}
	r := errResp(http.StatusForbidden,
		fmt.Sprintf("refusing to allow a GitHub App to create or update workflow `%s` without `workflows` permission", file), c.doc)
	r.header = http.Header{"X-Accepted-Github-Permissions": {"workflows=write"}}
	return &r
}

// checkRefTarget answers the 422 for a sha a ref cannot point at: unknown,
// or (for a branch) not a commit.
func (s *Server) checkRefTarget(c *call, name, sha string) *response {
	typ := s.objectType(c.repo, sha)
	if typ == "" || (strings.HasPrefix(name, "refs/heads/") && typ != "commit") {
		r := errResp(http.StatusUnprocessableEntity, "Object does not exist", c.doc)
		return &r
	}
	return nil
}

func (s *Server) createRef(c *call) response {
	var req struct {
		Ref *string `json:"ref"`
		SHA *string `json:"sha"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	switch {
	case req.Ref == nil:
		return invalidRequest(c.doc, `"ref" wasn't supplied.`)
	case req.SHA == nil:
		return invalidRequest(c.doc, `"sha" wasn't supplied.`)
	case !validRefName(*req.Ref):
		return errResp(http.StatusUnprocessableEntity, "Reference name is invalid", c.doc)
	}
	r := c.repo
	name, sha := *req.Ref, strings.ToLower(*req.SHA)
	if _, ok := r.refs[name]; ok {
		return errResp(http.StatusUnprocessableEntity, "Reference already exists", c.doc)
	}
	if bad := s.checkRefTarget(c, name, sha); bad != nil {
		return *bad
	}
	if bad := s.refusesWorkflows(c, sha); bad != nil {
		return *bad
	}
	if err := s.updateRef(r, name, sha, zeroSHA); err != nil {
		return errResp(http.StatusUnprocessableEntity, "Reference update failed", c.doc)
	}
	s.refUpdated(c, r, name, sha)
	body := s.refJSON(r, name, r.refs[name])
	return response{status: http.StatusCreated, body: body, header: http.Header{"Location": {body["url"].(string)}}}
}

// updateRefRoute moves a ref. Without force, only a fast-forward: GitHub
// answers 422 "Update is not a fast forward" otherwise.
func (s *Server) updateRefRoute(c *call) response {
	var req struct {
		SHA   *string `json:"sha"`
		Force *bool   `json:"force"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if req.SHA == nil {
		return invalidRequest(c.doc, `"sha" wasn't supplied.`)
	}
	r := c.repo
	name, sha := refParam(c), strings.ToLower(*req.SHA)
	old, ok := r.refs[name]
	if !ok {
		return errResp(http.StatusUnprocessableEntity, "Reference does not exist", c.doc)
	}
	if bad := s.checkRefTarget(c, name, sha); bad != nil {
		return *bad
	}
	if old.sha != sha {
		if req.Force == nil || !*req.Force {
			ff, err := s.isAncestor(r, old.sha, sha)
			if err != nil {
				return gitFailure(err)
			}
			if !ff {
				return errResp(http.StatusUnprocessableEntity, "Update is not a fast forward", c.doc)
			}
		}
		if bad := s.refusesWorkflows(c, sha); bad != nil {
			return *bad
		}
		if err := s.updateRef(r, name, sha, old.sha); err != nil {
			return errResp(http.StatusUnprocessableEntity, "Reference cannot be updated", c.doc)
		}
		s.refUpdated(c, r, name, sha)
	}
	return jsonResp(http.StatusOK, s.refJSON(r, name, r.refs[name]))
}

func (s *Server) deleteRef(c *call) response {
	r := c.repo
	name := refParam(c)
	old, ok := r.refs[name]
	if !ok {
		return errResp(http.StatusUnprocessableEntity, "Reference does not exist", c.doc)
	}
	if err := s.updateRef(r, name, zeroSHA, old.sha); err != nil {
		return errResp(http.StatusUnprocessableEntity, "Reference cannot be deleted", c.doc)
	}
	return response{status: http.StatusNoContent}
}
