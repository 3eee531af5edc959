package handlers_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

const (
	checkRunEvent = "check_run"
	// completedFixture is a successful run of Octocoders-linter (app 29310,
	// no slug in the payload) on PR #2 of Codertocat/Hello-World, with no
	// installation.
	completedFixture = "check_run.completed.json"
	// actionFixture is the requested action "lgtm|26764" on the run "API
	// Review" of electron-cation (app 25811) on PR #26764 of
	// electron/electron, from installation 690857; its external_id is "".
	actionFixture = "check_run.requested_action.json"
	// rerequestedFixture is the run "randscape" of app 2 re-requested on
	// github/hello-world, from installation 1, naming no pull request.
	rerequestedFixture = "check_run.rerequested.json"
	testSessionID      = "sess-01J8Z4Q6"
)

// hello is Codertocat/Hello-World as its payloads name it.
var hello = session.Repo{ID: 186853002, Owner: "Codertocat", Name: "Hello-World", DefaultBranch: "master"}

// helloPR is PR #2 of Codertocat/Hello-World as check payloads name it.
var helloPR = session.PullRef{
	Number:     2,
	HeadRef:    "changes",
	HeadSHA:    "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
	HeadRepoID: 186853002,
	BaseRepoID: 186853002,
}

var codertocat = session.Sender{Login: "Codertocat", ID: 21031067, Type: "User"}

// ourBot makes our own app the sender.
var ourBot = []edit{set("sender.login", testAppSlug+"[bot]"), set("sender.type", "Bot")}

// pullRequest is one entry of a check payload's pull_requests.
func pullRequest(number, headRepo, baseRepo int64, ref, sha string) map[string]any {
	return map[string]any{
		"url":    fmt.Sprintf("https://api.github.com/repos/Codertocat/Hello-World/pulls/%d", number),
		"id":     279147437 + number,
		"number": number,
		"head":   map[string]any{"ref": ref, "sha": sha, "repo": map[string]any{"id": headRepo, "name": "Hello-World"}},
		"base":   map[string]any{"ref": "master", "sha": "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", "repo": map[string]any{"id": baseRepo, "name": "Hello-World"}},
	}
}

// fixtureRunFailure is the CheckFailure for completedFixture made a
// failure of octocoders-linter from installation 1.
func fixtureRunFailure() session.CheckFailure {
	return session.CheckFailure{
		DeliveryID:     testDelivery,
		Event:          checkRunEvent,
		Repo:           hello,
		InstallationID: 1,
		HeadSHA:        "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
		Name:           "Octocoders-linter",
		CheckRunID:     128620228,
		CheckSuiteID:   118578147,
		AppSlug:        "octocoders-linter",
		Conclusion:     "failure",
		PullRequests:   []session.PullRef{helloPR},
		Sender:         codertocat,
	}
}

// fixtureCheckAction is the Trigger for actionFixture made a "retry" on
// one of our runs, for session testSessionID.
func fixtureCheckAction() session.Trigger {
	return session.Trigger{
		DeliveryID:     testDelivery,
		Event:          checkRunEvent,
		Kind:           session.KindCheckAction,
		Repo:           session.Repo{ID: 9384267, Owner: "electron", Name: "electron", DefaultBranch: "master"},
		InstallationID: 690857,
		Number:         26764,
		IsPR:           true,
		CommentID:      0,
		Sender:         session.Sender{Login: "codebytere", ID: 2036040, Type: "User"},
		Command:        policy.Parsed{Kind: policy.Command, Sub: policy.Retry},
		SessionID:      testSessionID,
	}
}

func TestCheckRunHandles(t *testing.T) {
	if got := (&handlers.CheckRun{}).Handles(); !slices.Equal(got, []string{"check_run"}) {
		t.Errorf("Handles() = %q, want [check_run]", got)
	}
}

func TestCheckRunFixtures(t *testing.T) {
	f := fixtureRunFailure()
	checkFixture(t, completedFixture, map[string]any{
		"action":                    "completed",
		"repository.id":             f.Repo.ID,
		"repository.owner.login":    f.Repo.Owner,
		"repository.name":           f.Repo.Name,
		"repository.default_branch": f.Repo.DefaultBranch,
		"check_run.id":              f.CheckRunID,
		"check_run.name":            f.Name,
		"check_run.head_sha":        f.HeadSHA,
		"check_run.check_suite.id":  f.CheckSuiteID,
		"check_run.app.id":          29310,
		"sender.login":              f.Sender.Login,
		"sender.id":                 f.Sender.ID,
		"sender.type":               f.Sender.Type,
		// helloPR
		"check_run.pull_requests.0.number":       helloPR.Number,
		"check_run.pull_requests.0.head.ref":     helloPR.HeadRef,
		"check_run.pull_requests.0.head.sha":     helloPR.HeadSHA,
		"check_run.pull_requests.0.head.repo.id": helloPR.HeadRepoID,
		"check_run.pull_requests.0.base.repo.id": helloPR.BaseRepoID,
	})
	if n := len(fixtureValue(t, loadFixture(t, completedFixture), "check_run.pull_requests").([]any)); n != 1 {
		t.Errorf("%s names %d pull requests, want 1", completedFixture, n)
	}
	a := fixtureCheckAction()
	checkFixture(t, actionFixture, map[string]any{
		"action":                           "requested_action",
		"repository.id":                    a.Repo.ID,
		"repository.owner.login":           a.Repo.Owner,
		"repository.name":                  a.Repo.Name,
		"repository.default_branch":        a.Repo.DefaultBranch,
		"installation.id":                  a.InstallationID,
		"check_run.app.id":                 25811,
		"check_run.app.slug":               "electron-cation",
		"check_run.external_id":            "",
		"requested_action.identifier":      "lgtm|26764",
		"sender.login":                     a.Sender.Login,
		"sender.id":                        a.Sender.ID,
		"sender.type":                      a.Sender.Type,
		"check_run.pull_requests.0.number": a.Number,
	})
	checkFixture(t, rerequestedFixture, map[string]any{
		"action":           "rerequested",
		"repository.id":    526,
		"installation.id":  1,
		"check_run.app.id": 2,
		"sender.login":     "octocat",
	})
	if n := len(fixtureValue(t, loadFixture(t, rerequestedFixture), "check_run.pull_requests").([]any)); n != 0 {
		t.Errorf("%s names %d pull requests, want none", rerequestedFixture, n)
	}
}

func TestCheckRunCompleted(t *testing.T) {
	same := func(*session.CheckFailure) {}
	fork := pullRequest(3, 999, 186853002, "fix", "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c")

	tests := []struct {
		name string
		// asIs sends the fixture unchanged; otherwise it is first made a
		// failure of octocoders-linter from installation 1.
		asIs    bool
		edits   []edit
		raw     []byte
		self    *handlers.Identity
		noID    bool
		sinkErr error
		// want edits fixtureRunFailure into the one CheckFailure expected;
		// nil means the sink must not be called.
		want func(*session.CheckFailure)
		err  wantErr
		msg  string
	}{
		// Failures.
		{name: "failure", want: same},
		{name: "timed out", edits: []edit{set("check_run.conclusion", "timed_out")}, want: func(f *session.CheckFailure) { f.Conclusion = "timed_out" }},
		{name: "startup failure", edits: []edit{set("check_run.conclusion", "startup_failure")}, want: func(f *session.CheckFailure) { f.Conclusion = "startup_failure" }},
		{name: "app without a slug", edits: []edit{del("check_run.app.slug")}, want: func(f *session.CheckFailure) { f.AppSlug = "" }},
		{name: "no pull requests", edits: []edit{set("check_run.pull_requests", []any{})}, want: func(f *session.CheckFailure) { f.PullRequests = nil }},
		{name: "null pull requests", edits: []edit{set("check_run.pull_requests", nil)}, want: func(f *session.CheckFailure) { f.PullRequests = nil }},
		{
			name:  "several pull requests, one from a fork, in order",
			edits: []edit{set("check_run.pull_requests", []any{fork, pullRequest(2, 186853002, 186853002, "changes", helloPR.HeadSHA)})},
			want: func(f *session.CheckFailure) {
				f.PullRequests = []session.PullRef{
					{Number: 3, HeadRef: "fix", HeadSHA: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", HeadRepoID: 999, BaseRepoID: 186853002},
					helloPR,
				}
			},
		},
		{
			name:  "pull request whose head repo is gone",
			edits: []edit{set("check_run.pull_requests", []any{map[string]any{"number": 2, "head": map[string]any{"ref": "changes", "sha": helloPR.HeadSHA, "repo": nil}, "base": map[string]any{"repo": map[string]any{"id": 186853002}}}})},
			want: func(f *session.CheckFailure) {
				f.PullRequests = []session.PullRef{{Number: 2, HeadRef: "changes", HeadSHA: helloPR.HeadSHA, BaseRepoID: 186853002}}
			},
		},
		{
			name:  "another app whose slug starts with ours",
			edits: []edit{set("check_run.app.slug", testAppSlug+"-staging")},
			want:  func(f *session.CheckFailure) { f.AppSlug = testAppSlug + "-staging" },
		},
		{
			name:  "without an identity nothing is our own",
			self:  &handlers.Identity{},
			edits: []edit{del("check_run.app.id"), del("check_run.app.slug")},
			want:  func(f *session.CheckFailure) { f.AppSlug = "" },
		},
		{
			name:  "a slugless app is not ours when we know only our slug",
			self:  &handlers.Identity{AppSlug: testAppSlug},
			edits: []edit{del("check_run.app.slug")},
			want:  func(f *session.CheckFailure) { f.AppSlug = "" },
		},
		{
			name:  "a bot sender is reported as it is",
			edits: []edit{set("sender.login", "octocoders-linter[bot]"), set("sender.type", "Bot"), set("sender.id", 51234)},
			want: func(f *session.CheckFailure) {
				f.Sender = session.Sender{Login: "octocoders-linter[bot]", ID: 51234, Type: "Bot"}
			},
		},

		// Nothing to repair.
		{name: "the fixture is a success", asIs: true},
		{name: "success", edits: []edit{set("check_run.conclusion", "success")}},
		{name: "neutral", edits: []edit{set("check_run.conclusion", "neutral")}},
		{name: "cancelled", edits: []edit{set("check_run.conclusion", "cancelled")}},
		{name: "skipped", edits: []edit{set("check_run.conclusion", "skipped")}},
		{name: "stale", edits: []edit{set("check_run.conclusion", "stale")}},
		{name: "action required", edits: []edit{set("check_run.conclusion", "action_required")}},
		{name: "null conclusion", edits: []edit{set("check_run.conclusion", nil)}},
		{name: "missing conclusion", edits: []edit{del("check_run.conclusion")}},
		{name: "conclusion in another case", edits: []edit{set("check_run.conclusion", "Failure")}},
		{name: "our own run, by app id", edits: []edit{set("check_run.app.id", testAppID)}},
		{name: "our own run, by slug", edits: []edit{set("check_run.app.slug", testAppSlug)}},
		{name: "our own run, slug in another case", edits: []edit{set("check_run.app.slug", "Inspect-App")}},
		{name: "our own run, knowing only our id", self: &handlers.Identity{AppID: testAppID}, edits: []edit{set("check_run.app.id", testAppID), del("check_run.app.slug")}},
		{name: "our own run, knowing only our slug", self: &handlers.Identity{AppSlug: testAppSlug}, edits: []edit{set("check_run.app.slug", testAppSlug)}},
		{name: "created", edits: []edit{set("action", "created")}},
		{name: "requested", edits: []edit{set("action", "requested")}},
		{name: "missing action", edits: []edit{del("action")}},
		// The payload is only validated once there is a failure to accept.
		{name: "success without installation", edits: []edit{set("check_run.conclusion", "success"), del("installation")}},
		{name: "our own failure without installation", edits: []edit{set("check_run.app.id", testAppID), del("installation")}},

		// Incomplete payloads.
		{name: "missing installation", edits: []edit{del("installation")}, err: payloadErr, msg: "installation is missing"},
		{name: "null installation", edits: []edit{set("installation", nil)}, err: payloadErr, msg: "installation is missing"},
		{name: "installation id 0", edits: []edit{set("installation.id", 0)}, err: payloadErr, msg: "installation is missing"},
		{name: "missing repository", edits: []edit{del("repository")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository id", edits: []edit{del("repository.id")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository name", edits: []edit{del("repository.name")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository owner", edits: []edit{del("repository.owner.login")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing head sha", edits: []edit{del("check_run.head_sha")}, err: payloadErr, msg: "head sha is missing"},
		{name: "empty head sha", edits: []edit{set("check_run.head_sha", "")}, err: payloadErr, msg: "head sha is missing"},
		{name: "missing delivery id", noID: true, err: payloadErr, msg: "X-GitHub-Delivery"},

		// Undecodable payloads.
		{name: "malformed JSON", raw: []byte(`{"action":"completed","check_run":{`), err: payloadErr},
		{name: "empty body", raw: []byte{}, err: payloadErr},
		{name: "top-level array", raw: []byte(`[]`), err: payloadErr},
		{name: "check run id as a string", edits: []edit{set("check_run.id", "128620228")}, err: payloadErr},
		{name: "app id as a string", edits: []edit{set("check_run.app.id", "29310")}, err: payloadErr},
		{name: "pull requests as an object", edits: []edit{set("check_run.pull_requests", map[string]any{"number": 2})}, err: payloadErr},
		{name: "pull request number as a string", edits: []edit{set("check_run.pull_requests", []any{map[string]any{"number": "2"}})}, err: payloadErr},
		{name: "conclusion as a number", edits: []edit{set("check_run.conclusion", 1)}, err: payloadErr},

		// The sink's answer.
		{name: "sink error", sinkErr: errSinkDown, want: same, err: sinkErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var base []edit
			if !tc.asIs {
				base = []edit{
					set("installation", map[string]any{"id": 1}),
					set("check_run.conclusion", "failure"),
					set("check_run.app.slug", "octocoders-linter"),
				}
			}
			payload := buildPayload(t, tc.raw, completedFixture, base, tc.edits)
			sink := &fakeSink{err: tc.sinkErr}
			h := &handlers.CheckRun{Sink: sink, Self: selfFor(tc.self)}

			err := h.Handle(testContext(), checkRunEvent, deliveryFor(tc.noID), payload)
			checkErr(t, err, tc.err)
			checkMsg(t, err, tc.msg)
			expectSink(t, sink, nil, edited(fixtureRunFailure, tc.want))
		})
	}
}

func TestCheckRunActions(t *testing.T) {
	same := func(*session.Trigger) {}
	// rerequested is the Trigger for rerequestedFixture on one of our runs.
	rerequested := func(tr *session.Trigger) {
		tr.Repo = session.Repo{ID: 526, Owner: "github", Name: "hello-world", DefaultBranch: "master"}
		tr.InstallationID = 1
		tr.Number = 0
		tr.Sender = session.Sender{Login: "octocat", ID: 5346, Type: "User"}
	}
	otherApp := []edit{set("check_run.app.id", 25811), set("check_run.app.slug", "electron-cation")}

	tests := []struct {
		name    string
		fixture string // default actionFixture
		// edits apply after the run is made ours (testAppID, testAppSlug)
		// with external_id testSessionID and, for actionFixture, the
		// requested action "retry".
		edits   []edit
		raw     []byte
		self    *handlers.Identity
		noID    bool
		sinkErr error
		// want edits fixtureCheckAction into the one Trigger expected; nil
		// means the sink must not be called.
		want func(*session.Trigger)
		err  wantErr
		msg  string
	}{
		// Buttons on our runs.
		{name: "retry button", want: same},
		// GitHub shows a run's buttons only once it is completed, and
		// Inspect offers none but Retry: cancelling is /inspect cancel.
		{name: "no cancel button", edits: []edit{set("requested_action.identifier", "cancel")}},
		{name: "re-run", fixture: rerequestedFixture, want: rerequested},
		{
			name:    "re-run of a run naming a pull request",
			fixture: rerequestedFixture,
			edits:   []edit{set("check_run.pull_requests", []any{pullRequest(7, 526, 526, "topic", "d6fde92930d4715a2b49857d24b940956b26d2d3")})},
			want:    func(tr *session.Trigger) { rerequested(tr); tr.Number = 7 },
		},
		{name: "re-run ignores a requested action", edits: []edit{set("action", "rerequested"), set("requested_action.identifier", "cancel")}, want: same},
		{name: "ours by app id alone", edits: []edit{set("check_run.app.slug", "renamed")}, want: same},
		{name: "ours by slug alone", edits: []edit{set("check_run.app.id", 1)}, want: same},
		{name: "ours by slug in another case", edits: []edit{set("check_run.app.id", 1), set("check_run.app.slug", "Inspect-App")}, want: same},
		{name: "ours, knowing only our slug", self: &handlers.Identity{AppSlug: testAppSlug}, edits: []edit{del("check_run.app.id")}, want: same},
		{name: "ours, knowing only our id", self: &handlers.Identity{AppID: testAppID}, edits: []edit{del("check_run.app.slug")}, want: same},
		{name: "no pull requests", edits: []edit{set("check_run.pull_requests", []any{})}, want: func(tr *session.Trigger) { tr.Number = 0 }},
		{name: "null pull requests", edits: []edit{set("check_run.pull_requests", nil)}, want: func(tr *session.Trigger) { tr.Number = 0 }},
		{
			name: "several pull requests: the first",
			edits: []edit{set("check_run.pull_requests", []any{
				pullRequest(5, 9384267, 9384267, "a", "5bd5f196a46b8222fb7484f05faba41a73cf34bd"),
				pullRequest(6, 9384267, 9384267, "b", "5bd5f196a46b8222fb7484f05faba41a73cf34bd"),
			})},
			want: func(tr *session.Trigger) { tr.Number = 5 },
		},
		{
			name:  "another bot may press; authorization decides later",
			edits: []edit{set("sender.login", "renovate[bot]"), set("sender.type", "Bot"), set("sender.id", 29139614)},
			want: func(tr *session.Trigger) {
				tr.Sender = session.Sender{Login: "renovate[bot]", ID: 29139614, Type: "Bot"}
			},
		},
		{
			name:  "external id is passed as it is",
			edits: []edit{set("check_run.external_id", " 01J8Z4Q6/attempt-2 ")},
			want:  func(tr *session.Trigger) { tr.SessionID = " 01J8Z4Q6/attempt-2 " },
		},

		// Nothing to do.
		{name: "another app's run (the fixture's), with a retry", edits: otherApp},
		{name: "another app's re-run", fixture: rerequestedFixture, edits: []edit{set("check_run.app.id", 2), del("check_run.app.slug")}},
		{name: "without an identity nothing is ours", self: &handlers.Identity{}},
		{name: "without an identity a slugless, idless run is not ours", self: &handlers.Identity{}, edits: []edit{del("check_run.app.id"), del("check_run.app.slug")}},
		{name: "pressed by our own app", edits: ourBot},
		{name: "re-run by our own app", fixture: rerequestedFixture, edits: ourBot},
		{name: "empty external id", edits: []edit{set("check_run.external_id", "")}},
		{name: "null external id", edits: []edit{set("check_run.external_id", nil)}},
		{name: "missing external id", edits: []edit{del("check_run.external_id")}},
		{name: "the fixture's unknown action", edits: []edit{set("requested_action.identifier", "lgtm|26764")}},
		{name: "action in another case", edits: []edit{set("requested_action.identifier", "Retry")}},
		{name: "empty action identifier", edits: []edit{set("requested_action.identifier", "")}},
		{name: "missing requested action", edits: []edit{del("requested_action")}},
		{name: "created", edits: []edit{set("action", "created")}},
		{name: "requested", edits: []edit{set("action", "requested")}},
		// The payload is only validated once there is a trigger to accept.
		{name: "unknown action without installation", edits: []edit{set("requested_action.identifier", "lgtm"), del("installation")}},
		{name: "another app's run without installation", edits: append(append([]edit{}, otherApp...), del("installation"))},

		// Incomplete payloads.
		{name: "missing installation", edits: []edit{del("installation")}, err: payloadErr, msg: "installation is missing"},
		{name: "installation id 0", edits: []edit{set("installation.id", 0)}, err: payloadErr, msg: "installation is missing"},
		{name: "re-run without installation", fixture: rerequestedFixture, edits: []edit{del("installation")}, err: payloadErr, msg: "installation is missing"},
		{name: "missing repository", edits: []edit{del("repository")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository id", edits: []edit{del("repository.id")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository name", edits: []edit{del("repository.name")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository owner", edits: []edit{del("repository.owner")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing sender", edits: []edit{del("sender")}, err: payloadErr, msg: "sender is missing"},
		{name: "sender without login", edits: []edit{del("sender.login")}, err: payloadErr, msg: "sender is missing"},
		{name: "missing delivery id", noID: true, err: payloadErr, msg: "X-GitHub-Delivery"},

		// Undecodable payloads.
		{name: "malformed JSON", raw: []byte(`{"action":"requested_action","requested_action":{"identifier":"retry"`), err: payloadErr},
		{name: "external id as a number", edits: []edit{set("check_run.external_id", 7)}, err: payloadErr},
		{name: "identifier as a list", edits: []edit{set("requested_action.identifier", []any{"retry"})}, err: payloadErr},
		{name: "pull request number as a string", edits: []edit{set("check_run.pull_requests", []any{map[string]any{"number": "26764"}})}, err: payloadErr},

		// The sink's answer.
		{name: "sink error", sinkErr: errSinkDown, want: same, err: sinkErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fixture := tc.fixture
			if fixture == "" {
				fixture = actionFixture
			}
			base := []edit{
				set("check_run.app.id", testAppID),
				set("check_run.app.slug", testAppSlug),
				set("check_run.external_id", testSessionID),
			}
			if fixture == actionFixture {
				base = append(base, set("requested_action.identifier", "retry"))
			}
			payload := buildPayload(t, tc.raw, fixture, base, tc.edits)
			sink := &fakeSink{err: tc.sinkErr}
			h := &handlers.CheckRun{Sink: sink, Self: selfFor(tc.self)}

			err := h.Handle(testContext(), checkRunEvent, deliveryFor(tc.noID), payload)
			checkErr(t, err, tc.err)
			checkMsg(t, err, tc.msg)
			expectSink(t, sink, edited(fixtureCheckAction, tc.want), nil)
		})
	}
}
