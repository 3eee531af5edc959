package handlers_test

import (
	"slices"
	"testing"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/session"
)

const (
	checkSuiteEvent = "check_suite"
	// suiteFixture is a successful suite of octocoders-linter (app 29310,
	// no slug in the payload) on PR #2 of Codertocat/Hello-World, with no
	// installation.
	suiteFixture = "check_suite.completed.json"
)

// fixtureSuiteFailure is the CheckFailure for suiteFixture made a failure
// of octocoders-linter from installation 1.
func fixtureSuiteFailure() session.CheckFailure {
	return session.CheckFailure{
		DeliveryID:     testDelivery,
		Event:          checkSuiteEvent,
		Repo:           hello,
		InstallationID: 1,
		HeadSHA:        "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
		Name:           "",
		CheckRunID:     0,
		CheckSuiteID:   118578147,
		AppSlug:        "octocoders-linter",
		Conclusion:     "failure",
		PullRequests:   []session.PullRef{helloPR},
		Sender:         codertocat,
	}
}

func TestCheckSuiteHandles(t *testing.T) {
	if got := (&handlers.CheckSuite{}).Handles(); !slices.Equal(got, []string{"check_suite"}) {
		t.Errorf("Handles() = %q, want [check_suite]", got)
	}
}

func TestCheckSuiteFixture(t *testing.T) {
	f := fixtureSuiteFailure()
	checkFixture(t, suiteFixture, map[string]any{
		"action":                                   "completed",
		"repository.id":                            f.Repo.ID,
		"repository.owner.login":                   f.Repo.Owner,
		"repository.name":                          f.Repo.Name,
		"repository.default_branch":                f.Repo.DefaultBranch,
		"check_suite.id":                           f.CheckSuiteID,
		"check_suite.head_sha":                     f.HeadSHA,
		"check_suite.app.id":                       29310,
		"check_suite.pull_requests.0.number":       helloPR.Number,
		"check_suite.pull_requests.0.head.ref":     helloPR.HeadRef,
		"check_suite.pull_requests.0.head.sha":     helloPR.HeadSHA,
		"check_suite.pull_requests.0.head.repo.id": helloPR.HeadRepoID,
		"check_suite.pull_requests.0.base.repo.id": helloPR.BaseRepoID,
		"sender.login":                             f.Sender.Login,
		"sender.id":                                f.Sender.ID,
		"sender.type":                              f.Sender.Type,
	})
	if n := len(fixtureValue(t, loadFixture(t, suiteFixture), "check_suite.pull_requests").([]any)); n != 1 {
		t.Errorf("%s names %d pull requests, want 1", suiteFixture, n)
	}
}

func TestCheckSuite(t *testing.T) {
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
		// want edits fixtureSuiteFailure into the one CheckFailure
		// expected; nil means the sink must not be called.
		want func(*session.CheckFailure)
		err  wantErr
		msg  string
	}{
		// Failures.
		{name: "failure", want: same},
		{name: "timed out", edits: []edit{set("check_suite.conclusion", "timed_out")}, want: func(f *session.CheckFailure) { f.Conclusion = "timed_out" }},
		{name: "startup failure", edits: []edit{set("check_suite.conclusion", "startup_failure")}, want: func(f *session.CheckFailure) { f.Conclusion = "startup_failure" }},
		{name: "app without a slug", edits: []edit{del("check_suite.app.slug")}, want: func(f *session.CheckFailure) { f.AppSlug = "" }},
		{name: "no pull requests", edits: []edit{set("check_suite.pull_requests", []any{})}, want: func(f *session.CheckFailure) { f.PullRequests = nil }},
		{name: "null pull requests", edits: []edit{set("check_suite.pull_requests", nil)}, want: func(f *session.CheckFailure) { f.PullRequests = nil }},
		{
			name:  "several pull requests, one from a fork, in order",
			edits: []edit{set("check_suite.pull_requests", []any{pullRequest(2, 186853002, 186853002, "changes", helloPR.HeadSHA), fork})},
			want: func(f *session.CheckFailure) {
				f.PullRequests = []session.PullRef{
					helloPR,
					{Number: 3, HeadRef: "fix", HeadSHA: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", HeadRepoID: 999, BaseRepoID: 186853002},
				}
			},
		},
		{
			name:  "without an identity nothing is our own",
			self:  &handlers.Identity{},
			edits: []edit{del("check_suite.app.id"), del("check_suite.app.slug")},
			want:  func(f *session.CheckFailure) { f.AppSlug = "" },
		},
		{
			name:  "another app whose slug ends with ours",
			edits: []edit{set("check_suite.app.slug", "not-"+testAppSlug)},
			want:  func(f *session.CheckFailure) { f.AppSlug = "not-" + testAppSlug },
		},

		// Nothing to repair.
		{name: "the fixture is a success", asIs: true},
		{name: "success", edits: []edit{set("check_suite.conclusion", "success")}},
		{name: "neutral", edits: []edit{set("check_suite.conclusion", "neutral")}},
		{name: "cancelled", edits: []edit{set("check_suite.conclusion", "cancelled")}},
		{name: "skipped", edits: []edit{set("check_suite.conclusion", "skipped")}},
		{name: "stale", edits: []edit{set("check_suite.conclusion", "stale")}},
		{name: "action required", edits: []edit{set("check_suite.conclusion", "action_required")}},
		{name: "null conclusion", edits: []edit{set("check_suite.conclusion", nil)}},
		{name: "missing conclusion", edits: []edit{del("check_suite.conclusion")}},
		{name: "conclusion in another case", edits: []edit{set("check_suite.conclusion", "FAILURE")}},
		{name: "our own suite, by app id", edits: []edit{set("check_suite.app.id", testAppID)}},
		{name: "our own suite, by slug", edits: []edit{set("check_suite.app.slug", testAppSlug)}},
		{name: "our own suite, knowing only our slug", self: &handlers.Identity{AppSlug: testAppSlug}, edits: []edit{set("check_suite.app.slug", testAppSlug)}},
		{name: "our own suite, knowing only our id", self: &handlers.Identity{AppID: testAppID}, edits: []edit{set("check_suite.app.id", testAppID)}},
		{name: "requested", edits: []edit{set("action", "requested")}},
		{name: "rerequested", edits: []edit{set("action", "rerequested")}},
		{name: "missing action", edits: []edit{del("action")}},
		// The payload is only validated once there is a failure to accept.
		{name: "success without installation", edits: []edit{set("check_suite.conclusion", "success"), del("installation")}},
		{name: "our own failure without head sha", edits: []edit{set("check_suite.app.id", testAppID), del("check_suite.head_sha")}},

		// Incomplete payloads.
		{name: "missing installation", edits: []edit{del("installation")}, err: payloadErr, msg: "installation is missing"},
		{name: "null installation", edits: []edit{set("installation", nil)}, err: payloadErr, msg: "installation is missing"},
		{name: "installation id 0", edits: []edit{set("installation.id", 0)}, err: payloadErr, msg: "installation is missing"},
		{name: "missing repository", edits: []edit{del("repository")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository id", edits: []edit{del("repository.id")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository name", edits: []edit{del("repository.name")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository owner", edits: []edit{del("repository.owner")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing head sha", edits: []edit{del("check_suite.head_sha")}, err: payloadErr, msg: "head sha is missing"},
		{name: "missing delivery id", noID: true, err: payloadErr, msg: "X-GitHub-Delivery"},

		// Undecodable payloads.
		{name: "malformed JSON", raw: []byte(`{"action":"completed","check_suite":`), err: payloadErr},
		{name: "empty body", raw: []byte{}, err: payloadErr},
		{name: "suite id as a string", edits: []edit{set("check_suite.id", "118578147")}, err: payloadErr},
		{name: "pull requests as a string", edits: []edit{set("check_suite.pull_requests", "2")}, err: payloadErr},
		{name: "head repo id as a string", edits: []edit{set("check_suite.pull_requests", []any{map[string]any{"number": 2, "head": map[string]any{"repo": map[string]any{"id": "1"}}}})}, err: payloadErr},

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
					set("check_suite.conclusion", "failure"),
					set("check_suite.app.slug", "octocoders-linter"),
				}
			}
			payload := buildPayload(t, tc.raw, suiteFixture, base, tc.edits)
			sink := &fakeSink{err: tc.sinkErr}
			h := &handlers.CheckSuite{Sink: sink, Self: selfFor(tc.self)}

			err := h.Handle(testContext(), checkSuiteEvent, deliveryFor(tc.noID), payload)
			checkErr(t, err, tc.err)
			checkMsg(t, err, tc.msg)
			expectSink(t, sink, nil, edited(fixtureSuiteFailure, tc.want))
		})
	}
}
