package fakegithub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Labels: a repository's labels, and the labels of its issues and pull
// requests (a pull request's labels are its issue's). Label names compare
// case-insensitively, as on GitHub; a label keeps the spelling it was
// created with.

const (
	docsLabels = "https://docs.github.com/rest/issues/labels"

	// defaultLabelColor is the color GitHub gives a label that adding it to
	// an issue created.
	defaultLabelColor = "ededed"

	// maxIssueLabels is how many labels GitHub lets an issue carry.
	maxIssueLabels = 100

	// maxLabelDescription is a label description's longest, in characters.
	maxLabelDescription = 100
)

type label struct {
	id          int64
	name, color string
	description string
}

// ensureLabel finds the repo's label of that name, creating it (as adding
// an unknown label to an issue does on GitHub) when there is none. Callers
// hold s.mu.
func (s *Server) ensureLabel(r *repoState, name string) *label {
	key := strings.ToLower(name)
	if l, ok := r.labels[key]; ok {
		return l
	}
	l := &label{id: s.nextID(), name: name, color: defaultLabelColor}
	r.labels[key] = l
	return l
}

// labelIndex is the position of the label named name among the issue's,
// or -1.
func (it *issue) labelIndex(name string) int {
	return slices.IndexFunc(it.labels, func(l *label) bool { return strings.EqualFold(l.name, name) })
}

// addLabels adds labels by name to an issue, after those it has, skipping
// names it already carries. Callers hold s.mu.
func (s *Server) addLabels(r *repoState, it *issue, names []string) {
	for _, name := range names {
		if it.labelIndex(name) < 0 {
			it.labels = append(it.labels, s.ensureLabel(r, name))
		}
	}
}

// IssueLabels returns the names of the labels of an issue or pull request,
// in the order they were added.
func (s *Server) IssueLabels(owner, repo string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil || r.issues[number] == nil {
		return nil
	}
	var out []string
	for _, l := range r.issues[number].labels {
		out = append(out, l.name)
	}
	return out
}

// SetIssueLabels replaces the labels of an issue or pull request, creating
// the repo's labels that do not exist yet. No labels removes them all.
func (s *Server) SetIssueLabels(owner, repo string, number int, labels ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	it, ok := r.issues[number]
	if !ok {
		panic(fmt.Sprintf("fakegithub: no issue or pull #%d in %s/%s", number, owner, repo))
	}
	it.labels = nil
	s.addLabels(r, it, labels)
}

func (s *Server) labelRoutes() {
	// Labels on an issue or a pull request: "Issues" or "Pull requests"
	// permission, as for the other issue endpoints. GET, POST and PUT
	// .../issues/{number}/labels go through issueSub (issues.go), which
	// shares its pattern with the comments.
	g := repoGate("issues", "pull_requests")
	s.handle("DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name...}", docsLabels+"#remove-a-label-from-an-issue", g, s.removeIssueLabel)
	s.handle("GET /repos/{owner}/{repo}/labels", docsLabels+"#list-labels-for-a-repository", g, s.listRepoLabels)
	s.handle("GET /repos/{owner}/{repo}/labels/{name...}", docsLabels+"#get-a-label", g, s.getLabel)
	s.handle("POST /repos/{owner}/{repo}/labels", docsLabels+"#create-a-label", g, s.createLabel)
}

// createLabel makes a repository label. GitHub requires the name and
// answers 422 already_exists for a name taken in any case; the color is
// six hex digits without "#" (GitHub picks one when it is left out) and
// the description at most 100 characters.
func (s *Server) createLabel(c *call) response {
	var req struct {
		Name        *string `json:"name"`
		Color       *string `json:"color"`
		Description *string `json:"description"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return validationFailed(c.doc, fieldError{Resource: "Label", Field: "name", Code: "missing_field"})
	}
	if _, ok := c.repo.labels[strings.ToLower(*req.Name)]; ok {
		return validationFailed(c.doc, fieldError{Resource: "Label", Field: "name", Code: "already_exists"})
	}
	color := defaultLabelColor
	if req.Color != nil {
		color = *req.Color
		if len(color) != 6 || strings.Trim(strings.ToLower(color), "0123456789abcdef") != "" {
			return validationFailed(c.doc, fieldError{Resource: "Label", Field: "color", Code: "invalid"})
		}
	}
	l := &label{id: s.nextID(), name: *req.Name, color: color}
	if req.Description != nil {
		if utf8.RuneCountInString(*req.Description) > maxLabelDescription {
			return validationFailed(c.doc, fieldError{Resource: "Label", Field: "description", Code: "custom",
				Message: fmt.Sprintf("description is too long (maximum is %d characters)", maxLabelDescription)})
		}
		l.description = *req.Description
	}
	c.repo.labels[strings.ToLower(l.name)] = l
	return jsonResp(http.StatusCreated, s.labelJSON(c.repo, l))
}

// RepoLabel is a repository's label, for inspection.
type RepoLabel struct {
	Name, Color, Description string
}

// Label returns the repository's label called name (in any case), and
// whether it exists.
func (s *Server) Label(owner, repo, name string) (RepoLabel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	l, ok := r.labels[strings.ToLower(name)]
	if !ok {
		return RepoLabel{}, false
	}
	return RepoLabel{Name: l.name, Color: l.color, Description: l.description}, true
}

func (s *Server) labelJSON(r *repoState, l *label) map[string]any {
	var desc any
	if l.description != "" {
		desc = l.description
	}
	return map[string]any{
		"id":          l.id,
		"node_id":     fmt.Sprintf("LA_%d", l.id),
		"url":         fmt.Sprintf("%srepos/%s/labels/%s", s.APIURL(), r.fullName(), url.PathEscape(l.name)),
		"name":        l.name,
		"color":       l.color,
		"default":     false,
		"description": desc,
	}
}

func (s *Server) labelsJSON(r *repoState, labels []*label) []map[string]any {
	out := make([]map[string]any, 0, len(labels))
	for _, l := range labels {
		out = append(out, s.labelJSON(r, l))
	}
	return out
}

// issueLabelsSub answers .../issues/{number}/labels for the methods that
// share issueSub's pattern.
func (s *Server) issueLabelsSub(c *call, number string) response {
	it := s.issueByNumber(c.repo, number)
	switch c.r.Method {
	case http.MethodGet:
		c.doc = docsLabels + "#list-labels-for-an-issue"
	case http.MethodPost:
		c.doc = docsLabels + "#add-labels-to-an-issue"
	case http.MethodPut:
		c.doc = docsLabels + "#set-labels-for-an-issue"
	case http.MethodDelete:
		c.doc = docsLabels + "#remove-all-labels-from-an-issue"
	default:
		return notFound(docsRoot)
	}
	if it == nil {
		return notFound(c.doc)
	}
	switch c.r.Method {
	case http.MethodGet:
		return page(c, s.labelsJSON(c.repo, it.labels))
	case http.MethodDelete:
		if len(it.labels) > 0 {
			it.labels = nil
			it.updatedAt = s.now()
		}
		return response{status: http.StatusNoContent}
	}
	names, bad := c.labelNames(c.r.Method == http.MethodPost)
	if bad != nil {
		return *bad
	}
	seen := map[string]bool{}
	if c.r.Method == http.MethodPost {
		for _, l := range it.labels {
			seen[strings.ToLower(l.name)] = true
		}
	}
	for _, name := range names {
		seen[strings.ToLower(name)] = true
	}
	if len(seen) > maxIssueLabels {
		return validationFailed(c.doc, fieldError{Resource: "Label", Field: "labels", Code: "custom",
			Message: fmt.Sprintf("An issue can have at most %d labels.", maxIssueLabels)})
	}
	if c.r.Method == http.MethodPut {
		it.labels = nil
	}
	s.addLabels(c.repo, it, names)
	it.updatedAt = s.now()
	return jsonResp(http.StatusOK, s.labelsJSON(c.repo, it.labels))
}

// labelNames parses the body of an add or set: GitHub takes
// {"labels": ["a", "b"]}, {"labels": [{"name": "a"}]}, the bare arrays
// ["a", "b"] (which go-github sends) and [{"name": "a"}], or one name as a
// string. Adding needs at least one label; setting may pass none, which
// removes them all.
func (c *call) labelNames(atLeastOne bool) ([]string, *response) {
	body := bytes.TrimSpace(c.body)
	invalid := func(detail string) ([]string, *response) {
		r := invalidRequest(c.doc, detail)
		return nil, &r
	}
	if len(body) == 0 {
		return invalid(`"labels" wasn't supplied.`)
	}
	if !json.Valid(body) {
		r := problemsParsingJSON()
		return nil, &r
	}
	var raw json.RawMessage = body
	var obj map[string]json.RawMessage
	if body[0] == '{' {
		if json.Unmarshal(body, &obj) != nil {
			return invalid(`"labels" wasn't supplied.`)
		}
		v, ok := obj["labels"]
		if !ok {
			return invalid(`"labels" wasn't supplied.`)
		}
		raw = v
	}
	raw = bytes.TrimSpace(raw)
	var names []string
	var one string
	var list []json.RawMessage
	switch {
	case len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &one) == nil:
		names = []string{one}
	case len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &list) == nil:
		for _, e := range list {
			var name string
			var named struct {
				Name *string `json:"name"`
			}
			switch {
			case json.Unmarshal(e, &name) == nil:
			case json.Unmarshal(e, &named) == nil && named.Name != nil:
				name = *named.Name
			default:
				return invalid(fmt.Sprintf("For 'items', %s is not a string or an object with a name.", string(e)))
			}
			names = append(names, name)
		}
	default:
		return invalid(`"labels" is not an array.`)
	}
	if atLeastOne && len(names) == 0 {
		return invalid(`"labels" needs at least 1 item.`)
	}
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			r := validationFailed(c.doc, fieldError{Resource: "Label", Field: "name", Code: "missing_field"})
			return nil, &r
		}
	}
	return names, nil
}

// removeIssueLabel removes one label from an issue and answers the labels
// left. GitHub answers 404 "Label does not exist" when the issue does not
// carry it.
func (s *Server) removeIssueLabel(c *call) response {
	it := s.issueByNumber(c.repo, c.r.PathValue("number"))
	if it == nil {
		return notFound(c.doc)
	}
	i := it.labelIndex(c.r.PathValue("name"))
	if i < 0 {
		return errResp(http.StatusNotFound, "Label does not exist", c.doc)
	}
	it.labels = slices.Delete(slices.Clone(it.labels), i, i+1)
	it.updatedAt = s.now()
	return jsonResp(http.StatusOK, s.labelsJSON(c.repo, it.labels))
}

// listRepoLabels lists the repo's labels by name, paginated.
func (s *Server) listRepoLabels(c *call) response {
	labels := make([]*label, 0, len(c.repo.labels))
	for _, l := range c.repo.labels {
		labels = append(labels, l)
	}
	slices.SortFunc(labels, func(a, b *label) int { return strings.Compare(strings.ToLower(a.name), strings.ToLower(b.name)) })
	return page(c, s.labelsJSON(c.repo, labels))
}

func (s *Server) getLabel(c *call) response {
	l, ok := c.repo.labels[strings.ToLower(c.r.PathValue("name"))]
	if !ok {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.labelJSON(c.repo, l))
}
