package ghconformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func checker(t *testing.T) *Checker {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTheValidatorRefusesWhatTheDescriptionDoesNotAllow: the validator
// itself, so that a passing conformance test means something. A good
// request passes; the same without a required field, with a field the
// description does not list, with a value it does not allow, or to an
// operation it does not have, fails.
func TestTheValidatorRefusesWhatTheDescriptionDoesNotAllow(t *testing.T) {
	c := checker(t)
	ctx := context.Background()
	const runs = "/repos/acme/widgets/check-runs"
	for _, tc := range []struct {
		name, method, path, query, body string
		wantErr                         string // "" for none
	}{
		{name: "a good create", method: "POST", path: runs, body: `{"name":"Inspect","head_sha":"abc","status":"queued","output":{"title":"t","summary":""}}`},
		{name: "no head_sha, which is required", method: "POST", path: runs, body: `{"name":"Inspect"}`, wantErr: "head_sha"},
		{name: "a field the description does not list", method: "POST", path: runs, body: `{"name":"Inspect","head_sha":"abc","colour":"red"}`, wantErr: "colour"},
		{name: "a status it does not allow", method: "POST", path: runs, body: `{"name":"Inspect","head_sha":"abc","status":"done"}`, wantErr: "status"},
		{name: "51 annotations", method: "PATCH", path: runs + "/5", body: `{"output":{"summary":"s","annotations":[` + strings.TrimSuffix(strings.Repeat(`{"path":"a","start_line":1,"end_line":1,"annotation_level":"failure","message":"m"},`, 51), ",") + `]}}`, wantErr: "annotations"},
		{name: "a summary over 65535 characters", method: "PATCH", path: runs + "/5", body: `{"output":{"summary":"` + strings.Repeat("a", 65536) + `"}}`, wantErr: "summary"},
		{name: "a good list", method: "GET", path: "/repos/acme/widgets/commits/abc/check-runs", query: "check_name=Inspect&filter=all&per_page=100"},
		{name: "a filter it does not allow", method: "GET", path: "/repos/acme/widgets/commits/abc/check-runs", query: "filter=newest", wantErr: "filter"},
		{name: "a label name with a slash, escaped once", method: "DELETE", path: "/repos/acme/widgets/issues/1/labels/team%2Finspect"},
		{name: "a file's path, slashes and all", method: "GET", path: "/repos/acme/widgets/contents/.github/inspect.yml", query: "ref=main"},
		{name: "a ref with its slashes", method: "PATCH", path: "/repos/acme/widgets/git/refs/heads/inspect/1-abc", body: `{"sha":"abc","force":false}`},
		{name: "an operation GitHub does not have", method: "POST", path: "/repos/acme/widgets/check-runs/5/cancel", wantErr: ErrNoOperation.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Request(ctx, tc.method, tc.path, tc.query, []byte(tc.body))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("passed, want an error about %s", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("error %v does not name %s", err, tc.wantErr)
			}
		})
	}
	if err := c.Request(ctx, "GET", "/nothing/here", "", nil); !errors.Is(err, ErrNoOperation) {
		t.Errorf("unknown path: %v, want ErrNoOperation", err)
	}
}

// TestWebhookFixturesMatchTheDescription: every payload fixture the tests
// send is one GitHub's description allows.
func TestWebhookFixturesMatchTheDescription(t *testing.T) {
	c := checker(t)
	fixtures := map[string]string{
		"check_run.completed.json":                     "check-run-completed",
		"check_run.requested_action.json":              "check-run-requested-action",
		"check_run.rerequested.json":                   "check-run-rerequested",
		"check_suite.completed.json":                   "check-suite-completed",
		"issue_comment.created.json":                   "issue-comment-created",
		"issue_comment.created.with-installation.json": "issue-comment-created",
		"issue_comment.edited.json":                    "issue-comment-edited",
		"issues.labeled.json":                          "issues-labeled",
		"ping.with-app_id.json":                        "ping",
		"pull_request_review_comment.created.json":     "pull-request-review-comment-created",
		"push.payload.json":                            "push",
		"status.payload.json":                          "status",
		"pull_request.closed.json":                     "pull-request-closed",
		"installation.created.json":                    "installation-created",
		"installation_repositories.added.json":         "installation-repositories-added",
	}
	for file, hook := range fixtures {
		payload, err := os.ReadFile(filepath.Join("..", "..", "testdata", "github-webhooks", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range Problems(c.Webhook(hook, payload)) {
			if !Excused(hook, file, p) {
				t.Errorf("%s (%s): %s: %s", file, hook, p.Pointer, p.Reason)
			}
		}
	}
	if err := c.Webhook("issue-comment-created", []byte(`{"action":"created"}`)); err == nil {
		t.Error("a payload without its required fields passed")
	}
}

// TestTheValidatorChecksResponseShapes: a response is checked against the
// schema of its status. (The end-to-end tests do not check the stand-in's
// responses yet: it leaves out required fields the code never reads.)
func TestTheValidatorChecksResponseShapes(t *testing.T) {
	c := checker(t)
	ctx := context.Background()
	const path = "/repos/acme/widgets/labels/bug"
	good := `{"id":1,"node_id":"LA_1","url":"https://api.github.com/repos/acme/widgets/labels/bug","name":"bug","description":null,"color":"d73a4a","default":false}`
	if err := c.Response(ctx, "GET", path, "", 200, "application/json; charset=utf-8", []byte(good)); err != nil {
		t.Errorf("a good label: %v", err)
	}
	for name, body := range map[string]string{
		"a required field missing":  `{"id":1,"node_id":"LA_1","url":"u","description":null,"color":"d73a4a","default":false}`,
		"a field of the wrong type": strings.Replace(good, `"default":false`, `"default":"no"`, 1),
	} {
		if err := c.Response(ctx, "GET", path, "", 200, "application/json", []byte(body)); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
	if err := c.Response(ctx, "GET", path, "", 418, "application/json", []byte(`{}`)); err == nil {
		t.Error("a status the operation does not describe passed")
	}
}

// TestResponseExcusesAreNarrow: an excuse covers its field of its
// operation at its place, nothing else.
func TestResponseExcusesAreNarrow(t *testing.T) {
	missing := func(pointer, field string) Problem {
		return Problem{Pointer: pointer, Reason: `property "` + field + `" is missing`}
	}
	if !ExcusedResponse("pulls/get", missing("/additions", "additions")) {
		t.Error("a pull request's additions are not excused")
	}
	for name, tc := range map[string]struct {
		op string
		p  Problem
	}{
		"another operation":     {"issues/get", missing("/additions", "additions")},
		"another place":         {"pulls/get", missing("/head/repo/additions", "additions")},
		"another field":         {"pulls/get", missing("/title", "title")},
		"a value of a bad type": {"pulls/get", Problem{Pointer: "/additions", Reason: "value must be an integer"}},
	} {
		if ExcusedResponse(tc.op, tc.p) {
			t.Errorf("%s: excused", name)
		}
	}
}

// TestAnUndescribedClientErrorMustBeGitHubsShape: a 4xx the operation does
// not list (GitHub sends 401, 403, 422 on any route) passes only as
// GitHub's error body.
func TestAnUndescribedClientErrorMustBeGitHubsShape(t *testing.T) {
	c := checker(t)
	ctx := context.Background()
	const path = "/repos/acme/widgets/check-runs/5"
	for _, tc := range []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"a validation error", 422, `{"message":"Validation Failed","errors":[{"resource":"CheckRun","code":"invalid"}],"documentation_url":"https://docs.github.com/rest"}`, true},
		{"a rate limit", 403, `{"message":"API rate limit exceeded","documentation_url":"https://docs.github.com/rest"}`, true},
		{"no message", 403, `{"documentation_url":"https://docs.github.com/rest"}`, false},
		{"not JSON", 401, `<html>`, false},
		{"a 422 without its documentation_url", 422, `{"message":"Validation Failed"}`, false},
		{"a message of the wrong type", 404, `{"message":7}`, false},
	} {
		err := c.Response(ctx, "PATCH", path, "", tc.status, "application/json", []byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
