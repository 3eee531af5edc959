package fakegithub

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/inspecthq/inspect/internal/ghconformance"
)

// fixture reads one of GitHub's webhook examples (octokit/webhooks).
func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "github-webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// sameShape fails for every key of want (an object, recursively into
// objects) that got lacks or holds as another JSON type; null on either
// side matches anything, as GitHub's nullable fields do.
func sameShape(t *testing.T, path string, want, got any) {
	t.Helper()
	wm, ok := want.(map[string]any)
	if !ok {
		return
	}
	gm, ok := got.(map[string]any)
	if !ok {
		t.Errorf("%s: %T, want an object", path, got)
		return
	}
	keys := make([]string, 0, len(wm))
	for k := range wm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, present := gm[k]
		switch {
		case !present:
			t.Errorf("%s.%s: missing", path, k)
		case wm[k] == nil || g == nil:
		case kind(wm[k]) != kind(g):
			t.Errorf("%s.%s: %s, want %s", path, k, kind(g), kind(wm[k]))
		default:
			sameShape(t, path+"."+k, wm[k], g)
		}
	}
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The stand-in's pull_request closed (merged or not) and reopened,
// pull_request_review submitted and pull_request_review_comment created
// payloads have every field GitHub's examples have, of the same types.
func TestPullRequestFateWebhooksAreShapedAsGitHubs(t *testing.T) {
	s := New()
	defer s.Close()
	s.AddInstallation(1, "acme")
	s.AddRepo(Repo{ID: 101, Owner: "acme", Name: "widgets", InstallationID: 1})
	s.AddPull("acme", "widgets", Pull{Number: 7, Title: "t", Body: "b", User: "inspect-app[bot]"})
	s.AddPull("acme", "widgets", Pull{Number: 8, Title: "t", Body: "b"})

	closedFixture := fixture(t, "pull_request.closed.json")
	review := decode(t, s.SubmitReview("acme", "widgets", 7, "rev", "CHANGES_REQUESTED", "please"))
	// pull_request_review.submitted as GitHub documents it: the review's
	// fields (octokit/webhooks' example), a pull request as in the other
	// pull request events.
	reviewWant := map[string]any{"action": "submitted", "review": map[string]any{"id": 1.0, "node_id": "", "user": map[string]any{},
		"body": "", "commit_id": "", "submitted_at": "", "state": "", "html_url": "", "pull_request_url": "",
		"author_association": "", "_links": map[string]any{}}, "pull_request": fixture(t, "pull_request_review_comment.created.json")["pull_request"],
		"repository": closedFixture["repository"], "installation": closedFixture["installation"], "sender": closedFixture["sender"]}
	sameShape(t, "review", reviewWant, review)
	if review["review"].(map[string]any)["state"] != "changes_requested" {
		t.Errorf("a webhook's review state is lower case: %v", review["review"])
	}
	cid := s.AddReviewComment("acme", "widgets", 7, ReviewComment{User: "rev", Body: "why?", Path: "a.go", Line: 1, DiffHunk: "@@ -1 +1 @@\n+x"})
	sameShape(t, "review_comment", fixture(t, "pull_request_review_comment.created.json"), decode(t, s.ReviewCommentEvent("acme", "widgets", cid)))

	closed, _ := s.ClosePull("acme", "widgets", 8, "alice", false)
	sameShape(t, "closed", closedFixture, decode(t, closed))
	reopened := decode(t, s.ReopenPull("acme", "widgets", 8, "alice"))
	sameShape(t, "reopened", closedFixture, reopened)
	if reopened["action"] != "reopened" || reopened["pull_request"].(map[string]any)["state"] != "open" {
		t.Errorf("reopened: %v", reopened["action"])
	}
	// And against GitHub's published webhook schemas (x-webhooks of its
	// REST description, vendored in internal/ghconformance).
	hooks, err := ghconformance.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, payload := range map[string][]byte{
		"pull-request-closed": closed, "pull-request-reopened": mustJSON(reopened),
		"pull-request-review-submitted":       mustJSON(review),
		"pull-request-review-comment-created": s.ReviewCommentEvent("acme", "widgets", cid),
	} {
		for _, p := range ghconformance.Problems(hooks.Webhook(name, payload)) {
			t.Errorf("%s: %s: %s", name, p.Pointer, p.Reason)
		}
	}
	merged, sha := s.ClosePull("acme", "widgets", 7, "bob", true)
	m := decode(t, merged)
	sameShape(t, "merged", closedFixture, m)
	for _, p := range ghconformance.Problems(hooks.Webhook("pull-request-closed", merged)) {
		t.Errorf("merged: %s: %s", p.Pointer, p.Reason)
	}
	pr := m["pull_request"].(map[string]any)
	if pr["merged"] != true || pr["merge_commit_sha"] != sha || pr["merged_by"].(map[string]any)["login"] != "bob" || pr["merged_at"] == nil {
		t.Errorf("merged: %v %v %v", pr["merged"], pr["merge_commit_sha"], pr["merged_by"])
	}
}
