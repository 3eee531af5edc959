package handlers_test

import (
	"slices"
	"testing"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

const (
	issuesEvent = "issues"
	// issuesFixture is the label "bug" added to issue #1 of
	// Codertocat/Hello-World, with no installation.
	issuesFixture = "issues.labeled.json"
)

// fixtureLabel is the Trigger for issuesFixture from installation 1, as
// read off the fixture.
func fixtureLabel() session.Trigger {
	return session.Trigger{
		DeliveryID: testDelivery,
		Event:      issuesEvent,
		Kind:       session.KindLabel,
		Repo: session.Repo{
			ID:            186853002,
			Owner:         "Codertocat",
			Name:          "Hello-World",
			DefaultBranch: "master",
		},
		InstallationID: 1,
		Number:         1,
		IsPR:           false,
		CommentID:      0,
		Sender:         session.Sender{Login: "Codertocat", ID: 21031067, Type: "User"},
		Command:        policy.Parsed{Kind: policy.Command, Sub: policy.Run},
		Label:          "bug",
		IssueTitle:     "Spelling error in the README file",
	}
}

func TestIssuesHandles(t *testing.T) {
	if got := (&handlers.Issues{}).Handles(); !slices.Equal(got, []string{"issues"}) {
		t.Errorf("Handles() = %q, want [issues]", got)
	}
}

func TestIssuesFixture(t *testing.T) {
	want := fixtureLabel()
	checkFixture(t, issuesFixture, map[string]any{
		"action":                    "labeled",
		"repository.id":             want.Repo.ID,
		"repository.owner.login":    want.Repo.Owner,
		"repository.name":           want.Repo.Name,
		"repository.default_branch": want.Repo.DefaultBranch,
		"issue.number":              want.Number,
		"issue.title":               want.IssueTitle,
		"label.name":                want.Label,
		"sender.login":              want.Sender.Login,
		"sender.id":                 want.Sender.ID,
		"sender.type":               want.Sender.Type,
	})
}

func TestIssues(t *testing.T) {
	same := func(*session.Trigger) {}
	unlabel := func(tr *session.Trigger) {
		tr.Kind = session.KindUnlabel
		tr.Command = policy.Parsed{Kind: policy.Command, Sub: policy.Cancel}
	}
	prObject := map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}

	tests := []struct {
		name    string
		asIs    bool   // the fixture unchanged, without installation 1 added
		edits   []edit // applied after installation 1 is added
		raw     []byte // when non-nil, the payload instead of the fixture
		self    *handlers.Identity
		noID    bool
		sinkErr error
		// want edits fixtureLabel into the one Trigger expected; nil means
		// the sink must not be called.
		want func(*session.Trigger)
		err  wantErr
		msg  string
	}{
		// Triggers.
		{name: "label added", want: same},
		{name: "label removed", edits: []edit{set("action", "unlabeled")}, want: unlabel},
		{
			// The sink matches the label against the repo's cached config.
			name:  "any label is handed on",
			edits: []edit{set("label.name", "inspect")},
			want:  func(tr *session.Trigger) { tr.Label = "inspect" },
		},
		{
			name:  "removed label is named",
			edits: []edit{set("action", "unlabeled"), set("label.name", "inspect: fix")},
			want:  func(tr *session.Trigger) { unlabel(tr); tr.Label = "inspect: fix" },
		},
		{
			name:  "another bot may trigger; authorization decides later",
			edits: []edit{set("sender.login", "renovate[bot]"), set("sender.type", "Bot"), set("sender.id", 29139614)},
			want: func(tr *session.Trigger) {
				tr.Sender = session.Sender{Login: "renovate[bot]", ID: 29139614, Type: "Bot"}
			},
		},
		{
			name:  "a user with our bot's login is not our bot",
			edits: []edit{set("sender.login", testAppSlug+"[bot]")},
			want:  func(tr *session.Trigger) { tr.Sender.Login = testAppSlug + "[bot]" },
		},
		{
			name:  "without an identity nothing is our own",
			self:  &handlers.Identity{},
			edits: []edit{set("sender.login", testAppSlug+"[bot]"), set("sender.type", "Bot")},
			want: func(tr *session.Trigger) {
				tr.Sender = session.Sender{Login: testAppSlug + "[bot]", ID: 21031067, Type: "Bot"}
			},
		},
		{name: "null pull_request is an issue", edits: []edit{set("issue.pull_request", nil)}, want: same},
		{
			name:  "the title is passed as it is",
			edits: []edit{set("issue.title", "  Fix <b>it</b>\n")},
			want:  func(tr *session.Trigger) { tr.IssueTitle = "  Fix <b>it</b>\n" },
		},

		// Nothing to do.
		{name: "opened", edits: []edit{set("action", "opened")}},
		{name: "edited", edits: []edit{set("action", "edited")}},
		{name: "closed", edits: []edit{set("action", "closed")}},
		{name: "assigned", edits: []edit{set("action", "assigned")}},
		{name: "action in another case", edits: []edit{set("action", "Labeled")}},
		{name: "missing action", edits: []edit{del("action")}},
		{name: "labelled by our own app", edits: []edit{set("sender.login", testAppSlug+"[bot]"), set("sender.type", "Bot")}},
		{name: "unlabelled by our own app", edits: []edit{set("action", "unlabeled"), set("sender.login", testAppSlug+"[bot]"), set("sender.type", "Bot")}},
		{name: "our own app, login in another case", edits: []edit{set("sender.login", "Inspect-App[bot]"), set("sender.type", "bot")}},
		{name: "label on a pull request", edits: []edit{set("issue.pull_request", prObject)}},
		{name: "empty pull_request object still marks a pull request", edits: []edit{set("issue.pull_request", map[string]any{})}},
		{name: "label removed from a pull request", edits: []edit{set("action", "unlabeled"), set("issue.pull_request", prObject)}},
		// The payload is only validated once there is a trigger to accept.
		{name: "pull request and no installation", edits: []edit{set("issue.pull_request", prObject), del("installation")}},
		{name: "opened and no label", edits: []edit{set("action", "opened"), del("label")}},
		{name: "our own app and no installation", edits: []edit{set("sender.login", testAppSlug+"[bot]"), set("sender.type", "Bot"), del("installation")}},

		// Incomplete payloads.
		{name: "fixture without installation", asIs: true, err: payloadErr, msg: "installation is missing"},
		{name: "null installation", edits: []edit{set("installation", nil)}, err: payloadErr, msg: "installation is missing"},
		{name: "installation id 0", edits: []edit{set("installation.id", 0)}, err: payloadErr, msg: "installation is missing"},
		{name: "missing repository", edits: []edit{del("repository")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository id", edits: []edit{del("repository.id")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository name", edits: []edit{del("repository.name")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository owner", edits: []edit{del("repository.owner")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing issue", edits: []edit{del("issue")}, err: payloadErr, msg: "issue number is missing"},
		{name: "missing issue number", edits: []edit{del("issue.number")}, err: payloadErr, msg: "issue number is missing"},
		{name: "missing label", edits: []edit{del("label")}, err: payloadErr, msg: "label name is missing"},
		{name: "null label", edits: []edit{set("label", nil)}, err: payloadErr, msg: "label name is missing"},
		{name: "label without a name", edits: []edit{del("label.name")}, err: payloadErr, msg: "label name is missing"},
		{name: "unlabeled without a label", edits: []edit{set("action", "unlabeled"), del("label")}, err: payloadErr, msg: "label name is missing"},
		{name: "missing sender", edits: []edit{del("sender")}, err: payloadErr, msg: "sender is missing"},
		{name: "sender without login", edits: []edit{del("sender.login")}, err: payloadErr, msg: "sender is missing"},
		{name: "missing delivery id", noID: true, err: payloadErr, msg: "X-GitHub-Delivery"},

		// Undecodable payloads.
		{name: "malformed JSON", raw: []byte(`{"action":"labeled","label":`), err: payloadErr},
		{name: "empty body", raw: []byte{}, err: payloadErr},
		{name: "top-level array", raw: []byte(`[]`), err: payloadErr},
		{name: "issue number as a string", edits: []edit{set("issue.number", "1")}, err: payloadErr},
		{name: "label name as a number", edits: []edit{set("label.name", 7)}, err: payloadErr},
		{name: "label as a string", edits: []edit{set("label", "bug")}, err: payloadErr},
		{name: "pull_request as a string", edits: []edit{set("issue.pull_request", "yes")}, err: payloadErr},

		// The sink's answer.
		{name: "sink error", sinkErr: errSinkDown, want: same, err: sinkErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var base []edit
			if !tc.asIs {
				base = []edit{set("installation", map[string]any{"id": 1})}
			}
			payload := buildPayload(t, tc.raw, issuesFixture, base, tc.edits)
			sink := &fakeSink{err: tc.sinkErr}
			h := &handlers.Issues{Sink: sink, Self: selfFor(tc.self)}

			err := h.Handle(testContext(), issuesEvent, deliveryFor(tc.noID), payload)
			checkErr(t, err, tc.err)
			checkMsg(t, err, tc.msg)
			expectSink(t, sink, edited(fixtureLabel, tc.want), nil)
		})
	}
}
