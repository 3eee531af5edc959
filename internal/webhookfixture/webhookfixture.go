// Package webhookfixture builds test webhook payloads from the real ones
// in testdata/github-webhooks (octokit/webhooks), changing only the fields
// a test names, so that every other field stays as GitHub sends it.
package webhookfixture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Dir is the folder of the real payloads, found from this file's place in
// the repository, so a test in any package reads the same files.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		// Without caller information, the working directory's repository
		// root is the best guess; a test then fails reading, naming it.
		return filepath.Join("testdata", "github-webhooks")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "github-webhooks")
}

// Load decodes the payload file name (issue_comment.created.with-installation.json).
func Load(name string) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// Comment is a new issue comment, as a test's stand-in holds it.
type Comment struct {
	// Owner and Repo name the repository; they set the pull_request URL
	// of a comment on a pull request (PullRequest).
	Owner, Repo string
	// Number is the issue's or pull request's number.
	Number int
	// PullRequest says the issue is a pull request, as GitHub marks it.
	PullRequest bool
	// Login and UserID are the comment's author and the event's sender.
	Login  string
	UserID int64
	// ID and Body are the comment's.
	ID   int64
	Body string
	// InstallationID is the App installation the event is for.
	InstallationID int64
}

// IssueComment is an issue_comment "created" payload for c, with the
// repository's default branch main.
func IssueComment(c Comment) ([]byte, error) {
	m, err := Load("issue_comment.created.with-installation.json")
	if err != nil {
		return nil, err
	}
	sender, okS := m["sender"].(map[string]any)
	comment, okC := m["comment"].(map[string]any)
	issue, okI := m["issue"].(map[string]any)
	repo, okR := m["repository"].(map[string]any)
	if !okS || !okC || !okI || !okR {
		return nil, fmt.Errorf("the issue_comment fixture lacks sender, comment, issue or repository")
	}
	sender["login"], sender["type"], sender["id"] = c.Login, "User", float64(c.UserID)
	comment["body"], comment["id"], comment["user"] = c.Body, float64(c.ID), sender
	issue["number"] = float64(c.Number)
	if c.PullRequest {
		issue["pull_request"] = map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/%s/%s/pulls/%d", c.Owner, c.Repo, c.Number)}
	}
	repo["default_branch"] = "main"
	m["installation"] = map[string]any{"id": float64(c.InstallationID)}
	return json.Marshal(m)
}
