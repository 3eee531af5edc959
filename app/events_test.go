package app_test

import (
	"encoding/json"
	"testing"
)

// Webhook payloads for the other ways in, each built from its real
// octokit fixture with the fields a case needs changed.

func marshal(t testing.TB, m map[string]any) []byte {
	t.Helper()
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withOurRepo points a fixture at the harness's repository and installation.
func withOurRepo(m map[string]any, sender, senderType string) {
	r := m["repository"].(map[string]any)
	r["default_branch"], r["id"], r["name"], r["full_name"] = "main", float64(repoID), repoName, owner+"/"+repoName
	r["owner"].(map[string]any)["login"] = owner
	m["installation"] = map[string]any{"id": float64(installationID)}
	if senderType == "" {
		senderType = "User"
	}
	m["sender"] = map[string]any{"login": sender, "id": float64(len(sender) * 1000), "type": senderType}
}

// labelEvent is issues.labeled (or unlabeled) on issue #1.
func labelEvent(t testing.TB, action, label, sender, senderType string) []byte {
	t.Helper()
	m := loadFixture(t, "issues.labeled.json")
	m["action"] = action
	withOurRepo(m, sender, senderType)
	m["label"].(map[string]any)["name"] = label
	issue := m["issue"].(map[string]any)
	issue["number"], issue["title"] = float64(issueNumber), "Spelling error"
	delete(issue, "pull_request")
	return marshal(t, m)
}

type checkRunOpts struct {
	name, conclusion, sha string
	runID                 int64
	appID                 int64
	appSlug               string
	// pr is the pull request the payload names (0: none); forkRepoID, when
	// set, is its head repository's id.
	pr         int
	forkRepoID int64
}

// checkRunEvent is check_run.completed from another app.
func checkRunEvent(t testing.TB, o checkRunOpts) []byte {
	t.Helper()
	m := loadFixture(t, "check_run.completed.json")
	withOurRepo(m, "ci-app[bot]", "Bot")
	cr := m["check_run"].(map[string]any)
	cr["name"], cr["conclusion"], cr["head_sha"], cr["id"], cr["status"] = o.name, o.conclusion, o.sha, float64(o.runID), "completed"
	if o.appSlug == "" {
		o.appSlug, o.appID = "ci-app", 777
	}
	cr["app"].(map[string]any)["slug"], cr["app"].(map[string]any)["id"] = o.appSlug, float64(o.appID)
	cr["check_suite"].(map[string]any)["id"] = float64(5000 + o.runID)
	cr["pull_requests"] = []any{}
	if o.pr != 0 {
		head := float64(repoID)
		if o.forkRepoID != 0 {
			head = float64(o.forkRepoID)
		}
		cr["pull_requests"] = []any{map[string]any{
			"number": float64(o.pr),
			"head":   map[string]any{"ref": "fix-flaky", "sha": o.sha, "repo": map[string]any{"id": head}},
			"base":   map[string]any{"ref": "main", "sha": o.sha, "repo": map[string]any{"id": float64(repoID)}},
		}}
	}
	return marshal(t, m)
}

// statusEvent is a commit status (as Buildkite reports them).
func statusEvent(t testing.TB, sha, context, state string) []byte {
	t.Helper()
	m := loadFixture(t, "status.payload.json")
	withOurRepo(m, "buildkite[bot]", "Bot")
	m["sha"], m["context"], m["state"], m["description"] = sha, context, state, "Build #12 failed"
	return marshal(t, m)
}

// checkActionEvent is a press of a button on Inspect's check run:
// requested_action with identifier, or rerequested when identifier is "".
func (h *harness) checkActionEvent(identifier, sessionID, sender string, runID int64) []byte {
	h.t.Helper()
	name := "check_run.requested_action.json"
	if identifier == "" {
		name = "check_run.rerequested.json"
	}
	m := loadFixture(h.t, name)
	withOurRepo(m, sender, "User")
	cr := m["check_run"].(map[string]any)
	cr["external_id"], cr["id"], cr["name"] = sessionID, float64(runID), "Inspect"
	cr["app"] = map[string]any{"id": float64(h.gh.AppID()), "slug": h.gh.AppSlug()}
	cr["pull_requests"] = []any{map[string]any{"number": float64(prNumber),
		"head": map[string]any{"ref": "fix-flaky", "sha": headSHA, "repo": map[string]any{"id": float64(repoID)}},
		"base": map[string]any{"ref": "main", "sha": headSHA, "repo": map[string]any{"id": float64(repoID)}}}}
	if identifier != "" {
		m["requested_action"] = map[string]any{"identifier": identifier}
	}
	return marshal(h.t, m)
}

// reviewCommentEvent is pull_request_review_comment.created on PR #2.
func reviewCommentEvent(t testing.TB, commentID int64, body, sender, path string, line int, hunk string) []byte {
	t.Helper()
	m := loadFixture(t, "pull_request_review_comment.created.json")
	withOurRepo(m, sender, "User")
	c := m["comment"].(map[string]any)
	c["id"], c["body"], c["path"], c["line"], c["original_line"], c["diff_hunk"] = float64(commentID), body, path, float64(line), float64(line), hunk
	c["start_line"], c["in_reply_to_id"] = nil, nil
	c["user"] = m["sender"]
	m["pull_request"].(map[string]any)["number"] = float64(prNumber)
	return marshal(t, m)
}

// checkSuiteEvent is check_suite.completed from another app, naming no
// pull request (as for a suite on a branch push).
func checkSuiteEvent(t testing.TB, sha, conclusion string, suiteID int64) []byte {
	t.Helper()
	m := loadFixture(t, "check_suite.completed.json")
	withOurRepo(m, "ci-app[bot]", "Bot")
	cs := m["check_suite"].(map[string]any)
	cs["head_sha"], cs["conclusion"], cs["id"], cs["status"] = sha, conclusion, float64(suiteID), "completed"
	cs["app"].(map[string]any)["slug"], cs["app"].(map[string]any)["id"] = "ci-app", float64(777)
	cs["pull_requests"] = []any{}
	return marshal(t, m)
}
