package handlers_test

import (
	"slices"
	"testing"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/session"
)

const (
	statusEvent = "status"
	// statusFixture is a successful "default" status on commit 6113728 of
	// Codertocat/Hello-World, with no installation.
	statusFixture = "status.payload.json"
)

// fixtureStatusFailure is the CheckFailure for statusFixture made a
// failure from installation 1.
func fixtureStatusFailure() session.CheckFailure {
	return session.CheckFailure{
		DeliveryID:     testDelivery,
		Event:          statusEvent,
		Repo:           hello,
		InstallationID: 1,
		HeadSHA:        "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
		Name:           "default",
		CheckRunID:     0,
		CheckSuiteID:   0,
		AppSlug:        "",
		Conclusion:     "failure",
		PullRequests:   nil,
		Sender:         codertocat,
	}
}

func TestStatusHandles(t *testing.T) {
	if got := (&handlers.Status{}).Handles(); !slices.Equal(got, []string{"status"}) {
		t.Errorf("Handles() = %q, want [status]", got)
	}
}

func TestStatusFixture(t *testing.T) {
	f := fixtureStatusFailure()
	checkFixture(t, statusFixture, map[string]any{
		"state":                     "success",
		"sha":                       f.HeadSHA,
		"context":                   f.Name,
		"repository.id":             f.Repo.ID,
		"repository.owner.login":    f.Repo.Owner,
		"repository.name":           f.Repo.Name,
		"repository.default_branch": f.Repo.DefaultBranch,
		"sender.login":              f.Sender.Login,
		"sender.id":                 f.Sender.ID,
		"sender.type":               f.Sender.Type,
	})
}

func TestStatus(t *testing.T) {
	same := func(*session.CheckFailure) {}

	tests := []struct {
		name string
		// asIs sends the fixture unchanged; otherwise it is first made a
		// failure from installation 1.
		asIs    bool
		edits   []edit
		raw     []byte
		self    *handlers.Identity
		noID    bool
		sinkErr error
		// want edits fixtureStatusFailure into the one CheckFailure
		// expected; nil means the sink must not be called.
		want func(*session.CheckFailure)
		err  wantErr
		msg  string
	}{
		// Failures.
		{name: "failure", want: same},
		{name: "error", edits: []edit{set("state", "error")}, want: func(f *session.CheckFailure) { f.Conclusion = "error" }},
		{name: "another context", edits: []edit{set("context", "ci/jenkins: unit")}, want: func(f *session.CheckFailure) { f.Name = "ci/jenkins: unit" }},
		{name: "no context", edits: []edit{del("context")}, want: func(f *session.CheckFailure) { f.Name = "" }},
		{
			name:  "a CI bot's status",
			edits: []edit{set("sender.login", "jenkins-ci[bot]"), set("sender.type", "Bot"), set("sender.id", 424243)},
			want: func(f *session.CheckFailure) {
				f.Sender = session.Sender{Login: "jenkins-ci[bot]", ID: 424243, Type: "Bot"}
			},
		},
		{
			name:  "without an identity nothing is our own",
			self:  &handlers.Identity{},
			edits: ourBot,
			want: func(f *session.CheckFailure) {
				f.Sender = session.Sender{Login: testAppSlug + "[bot]", ID: 21031067, Type: "Bot"}
			},
		},

		// Nothing to repair.
		{name: "the fixture is a success", asIs: true},
		{name: "success", edits: []edit{set("state", "success")}},
		{name: "pending", edits: []edit{set("state", "pending")}},
		{name: "state in another case", edits: []edit{set("state", "Failure")}},
		{name: "missing state", edits: []edit{del("state")}},
		{name: "our own app's status", edits: ourBot},
		{name: "our own app's error", edits: append([]edit{set("state", "error")}, ourBot...)},
		// The payload is only validated once there is a failure to accept.
		{name: "success without installation", edits: []edit{set("state", "success"), del("installation")}},
		{name: "pending without sha", edits: []edit{set("state", "pending"), del("sha")}},

		// Incomplete payloads.
		{name: "missing installation", edits: []edit{del("installation")}, err: payloadErr, msg: "installation is missing"},
		{name: "null installation", edits: []edit{set("installation", nil)}, err: payloadErr, msg: "installation is missing"},
		{name: "installation id 0", edits: []edit{set("installation.id", 0)}, err: payloadErr, msg: "installation is missing"},
		{name: "missing repository", edits: []edit{del("repository")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository id", edits: []edit{del("repository.id")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository name", edits: []edit{del("repository.name")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository owner", edits: []edit{del("repository.owner")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing sha", edits: []edit{del("sha")}, err: payloadErr, msg: "head sha is missing"},
		{name: "missing delivery id", noID: true, err: payloadErr, msg: "X-GitHub-Delivery"},

		// Undecodable payloads.
		{name: "malformed JSON", raw: []byte(`{"state":"failure","sha":`), err: payloadErr},
		{name: "empty body", raw: []byte{}, err: payloadErr},
		{name: "state as a number", edits: []edit{set("state", 1)}, err: payloadErr},
		{name: "sha as an object", edits: []edit{set("sha", map[string]any{"id": "6113728"})}, err: payloadErr},

		// The sink's answer.
		{name: "sink error", sinkErr: errSinkDown, want: same, err: sinkErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var base []edit
			if !tc.asIs {
				base = []edit{set("installation", map[string]any{"id": 1}), set("state", "failure")}
			}
			payload := buildPayload(t, tc.raw, statusFixture, base, tc.edits)
			sink := &fakeSink{err: tc.sinkErr}
			h := &handlers.Status{Sink: sink, Self: selfFor(tc.self)}

			err := h.Handle(testContext(), statusEvent, deliveryFor(tc.noID), payload)
			checkErr(t, err, tc.err)
			checkMsg(t, err, tc.msg)
			expectSink(t, sink, nil, edited(fixtureStatusFailure, tc.want))
		})
	}
}
