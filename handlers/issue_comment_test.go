package handlers_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

const (
	testAppID    = 424242
	testAppSlug  = "inspect-app"
	testDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	commentEvent = "issue_comment"
	// commentFixture is a created comment on issue #1 of
	// Codertocat/Hello-World, from installation 1.
	commentFixture = "issue_comment.created.with-installation.json"
)

// edit changes a decoded payload.
type edit func(t *testing.T, m map[string]any)

func set(path string, v any) edit {
	return func(t *testing.T, m map[string]any) { t.Helper(); setPath(t, m, path, v) }
}

func del(path string) edit {
	return func(t *testing.T, m map[string]any) { t.Helper(); deletePath(t, m, path) }
}

func body(s string) edit { return set("comment.body", s) }

// fixtureTrigger is the Trigger for commentFixture with the body
// "/inspect fix it", as read off the fixture.
func fixtureTrigger() session.Trigger {
	return session.Trigger{
		DeliveryID: testDelivery,
		Event:      commentEvent,
		Repo: session.Repo{
			ID:            186853002,
			Owner:         "Codertocat",
			Name:          "Hello-World",
			DefaultBranch: "master",
		},
		InstallationID: 1,
		Number:         1,
		IsPR:           false,
		CommentID:      492700400,
		Sender:         session.Sender{Login: "Codertocat", ID: 21031067, Type: "User"},
		Command:        policy.Parsed{Kind: policy.Command, Sub: policy.Run, Instructions: "fix it"},
	}
}

// wantErr is the kind of error a case expects.
type wantErr int

const (
	noErr wantErr = iota
	payloadErr
	sinkErr
)

var errSinkDown = errors.New("sink: database is down")

// checkErr checks err against want; sinkErr means errSinkDown, unchanged.
func checkErr(t *testing.T, err error, want wantErr) {
	t.Helper()
	switch want {
	case noErr:
		if err != nil {
			t.Fatalf("Handle: %v, want nil", err)
		}
	case payloadErr:
		if err == nil || !handlers.IsPayloadError(err) {
			t.Fatalf("Handle: %v, want a payload error", err)
		}
		var pe *handlers.PayloadError
		if !errors.As(err, &pe) || pe.Err == nil {
			t.Fatalf("Handle: %#v, want a *PayloadError with a cause", err)
		}
		if !strings.HasPrefix(err.Error(), "malformed payload: ") {
			t.Errorf("Handle: error %q lacks the payload prefix", err)
		}
	case sinkErr:
		if err != errSinkDown || !errors.Is(err, errSinkDown) {
			t.Fatalf("Handle: %v, want the sink's error unchanged", err)
		}
		if handlers.IsPayloadError(err) {
			t.Fatalf("Handle: sink error %v reported as a payload error", err)
		}
	}
}

func TestIssueCommentHandles(t *testing.T) {
	h := &handlers.IssueComment{}
	if got := h.Handles(); !slices.Equal(got, []string{"issue_comment"}) {
		t.Errorf("Handles() = %q, want [issue_comment]", got)
	}
}

func TestIssueComment(t *testing.T) {
	self := handlers.Identity{AppID: testAppID, AppSlug: testAppSlug}
	same := func(*session.Trigger) {}

	tests := []struct {
		name    string
		fixture string // default commentFixture
		edits   []edit // applied after the body is set to "/inspect fix it"
		raw     []byte // when non-nil, the payload instead of the fixture
		word    string // default "/inspect"
		self    *handlers.Identity
		noID    bool // no X-GitHub-Delivery
		sinkErr error
		// want edits fixtureTrigger into the one Trigger expected; nil means
		// the sink must not be called.
		want func(*session.Trigger)
		err  wantErr
		msg  string // a payload error's message contains this
	}{
		// Commands.
		{name: "command on an issue", want: same},
		{
			name:  "command on a pull request",
			edits: []edit{set("issue.pull_request", map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"})},
			want:  func(tr *session.Trigger) { tr.IsPR = true },
		},
		{
			name:  "empty pull_request object still marks a pull request",
			edits: []edit{set("issue.pull_request", map[string]any{})},
			want:  func(tr *session.Trigger) { tr.IsPR = true },
		},
		{
			name:  "null pull_request is an issue",
			edits: []edit{set("issue.pull_request", nil)},
			want:  same,
		},
		{
			name:  "instructions continue on the next lines",
			edits: []edit{body("/inspect\nfix the tests\nand the docs")},
			want:  func(tr *session.Trigger) { tr.Command.Instructions = "fix the tests\nand the docs" },
		},
		{
			name:  "status subcommand",
			edits: []edit{body("/inspect status")},
			want:  func(tr *session.Trigger) { tr.Command = policy.Parsed{Kind: policy.Command, Sub: policy.Status} },
		},
		{
			name:  "help is a reply",
			edits: []edit{body("/inspect help")},
			want: func(tr *session.Trigger) {
				tr.Command = policy.Parsed{Kind: policy.Reply, Sub: policy.Help}
			},
		},
		{
			name:  "bare command word is a reply",
			edits: []edit{body("/inspect")},
			want: func(tr *session.Trigger) {
				tr.Command = policy.Parsed{Kind: policy.Reply, Sub: policy.Help}
			},
		},
		{
			name:  "second command is counted as ignored",
			edits: []edit{body("/inspect fix it\n/inspect cancel")},
			want:  func(tr *session.Trigger) { tr.Command.Ignored = 1 },
		},
		{
			name:  "another bot may trigger; authorization decides later",
			edits: []edit{set("sender.login", "dependabot[bot]"), set("sender.type", "Bot"), set("sender.id", 49699333)},
			want: func(tr *session.Trigger) {
				tr.Sender = session.Sender{Login: "dependabot[bot]", ID: 49699333, Type: "Bot"}
			},
		},
		{
			name:  "comment made through another app",
			edits: []edit{set("comment.performed_via_github_app", map[string]any{"id": testAppID + 1, "slug": "other"})},
			want:  same,
		},
		{
			name:  "without an identity nothing is our own",
			self:  &handlers.Identity{},
			edits: []edit{set("sender.login", testAppSlug+"[bot]"), set("sender.type", "Bot"), set("comment.performed_via_github_app", map[string]any{"id": testAppID})},
			want: func(tr *session.Trigger) {
				tr.Sender = session.Sender{Login: testAppSlug + "[bot]", ID: 21031067, Type: "Bot"}
			},
		},
		{
			name:  "custom command word",
			word:  "/bot",
			edits: []edit{body("/bot fix it")},
			want:  same,
		},
		{
			// "/bot help" is help only when parsed with the configured word
			// (with "/inspect" it is no command); render names the word.
			name:  "custom command word help is parsed with that word",
			word:  "/bot",
			edits: []edit{body("/bot help")},
			want: func(tr *session.Trigger) {
				tr.Command = policy.Parsed{Kind: policy.Reply, Sub: policy.Help}
			},
		},

		// Nothing to do.
		{name: "edited comment", fixture: "issue_comment.edited.json", edits: []edit{set("installation", map[string]any{"id": 1})}},
		{name: "edited action on a created fixture", edits: []edit{set("action", "edited")}},
		{name: "deleted comment", edits: []edit{set("action", "deleted")}},
		{name: "missing action", edits: []edit{del("action")}},
		{name: "comment by our own app", edits: []edit{set("sender.login", testAppSlug+"[bot]"), set("sender.type", "Bot")}},
		{name: "our own app, login in another case", edits: []edit{set("sender.login", "Inspect-App[bot]"), set("sender.type", "Bot")}},
		{name: "comment performed via our app", edits: []edit{set("comment.performed_via_github_app", map[string]any{"id": testAppID, "slug": testAppSlug})}},
		{name: "fixture body has no command", edits: []edit{body("You are totally right! I'll get this fixed right away.")}},
		{name: "command word mid-line", edits: []edit{body("please run /inspect fix it")}},
		{name: "quoted command", edits: []edit{body("> /inspect x")}},
		{name: "command in a code block", edits: []edit{body("```\n/inspect fix it\n```")}},
		{name: "command word in another case", edits: []edit{body("/Inspect fix it")}},
		{name: "default word ignored under a custom word", word: "/bot"},
		{name: "invalid command word matches nothing", word: "inspect"},
		// The payload is only validated once there is a command to accept.
		{name: "no command and no installation", edits: []edit{body("thanks!"), del("installation")}},
		{name: "edited and no installation", fixture: "issue_comment.edited.json", edits: []edit{body("/inspect fix it")}},

		// Incomplete payloads.
		{name: "missing installation", edits: []edit{del("installation")}, err: payloadErr, msg: "installation is missing"},
		{name: "null installation", edits: []edit{set("installation", nil)}, err: payloadErr, msg: "installation is missing"},
		{name: "installation id 0", edits: []edit{set("installation.id", 0)}, err: payloadErr, msg: "installation is missing"},
		{name: "fixture without installation", fixture: "issue_comment.created.json", err: payloadErr, msg: "installation is missing"},
		{name: "missing repository", edits: []edit{del("repository")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository id", edits: []edit{del("repository.id")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository name", edits: []edit{del("repository.name")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository owner", edits: []edit{del("repository.owner")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing issue", edits: []edit{del("issue")}, err: payloadErr, msg: "issue number is missing"},
		{name: "missing comment id", edits: []edit{del("comment.id")}, err: payloadErr, msg: "comment id is missing"},
		{name: "missing sender", edits: []edit{del("sender")}, err: payloadErr, msg: "sender is missing"},
		{name: "sender without login", edits: []edit{del("sender.login")}, err: payloadErr, msg: "sender is missing"},
		{name: "missing delivery id", noID: true, err: payloadErr, msg: "X-GitHub-Delivery"},

		// Undecodable payloads.
		{name: "malformed JSON", raw: []byte(`{"action":"created","comment":`), err: payloadErr},
		{name: "empty body", raw: []byte{}, err: payloadErr},
		{name: "not JSON", raw: []byte("action=created"), err: payloadErr},
		{name: "top-level array", raw: []byte(`[]`), err: payloadErr},
		{name: "comment id as a string", edits: []edit{set("comment.id", "492700400")}, err: payloadErr},
		{name: "issue number as a string", edits: []edit{set("issue.number", "1")}, err: payloadErr},
		{name: "installation as a number", edits: []edit{set("installation", 1)}, err: payloadErr},
		{name: "body as a number", edits: []edit{set("comment.body", 7)}, err: payloadErr},

		// The sink's answer.
		{name: "sink error", sinkErr: errSinkDown, want: same, err: sinkErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			payload := tc.raw
			if payload == nil {
				fixture := tc.fixture
				if fixture == "" {
					fixture = commentFixture
				}
				m := loadFixture(t, fixture)
				setPath(t, m, "comment.body", "/inspect fix it")
				for _, e := range tc.edits {
					e(t, m)
				}
				payload = encode(t, m)
			}
			word := tc.word
			if word == "" {
				word = "/inspect"
			}
			id := self
			if tc.self != nil {
				id = *tc.self
			}
			delivery := testDelivery
			if tc.noID {
				delivery = ""
			}
			sink := &fakeSink{err: tc.sinkErr}
			h := &handlers.IssueComment{Sink: sink, CommandWord: word, Self: func() handlers.Identity { return id }}

			err := h.Handle(testContext(), commentEvent, delivery, payload)
			checkErr(t, err, tc.err)
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Handle: %q, want it to mention %q", err, tc.msg)
			}

			triggers, pushes := sink.recorded()
			expectCalls(t, "AcceptConfigPush", pushes, nil)
			expectCalls(t, "AcceptTrigger", triggers, edited(fixtureTrigger, tc.want))
		})
	}
}

// TestIssueCommentFixtureTrigger reads the expected Trigger's fields off the
// fixture itself, so fixtureTrigger cannot drift from the data.
func TestIssueCommentFixtureTrigger(t *testing.T) {
	m := loadFixture(t, commentFixture)
	num := func(path string) int64 {
		t.Helper()
		v := any(m)
		for _, k := range strings.Split(path, ".") {
			v = v.(map[string]any)[k]
		}
		n, err := v.(json.Number).Int64()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return n
	}
	want := fixtureTrigger()
	for path, got := range map[string]int64{
		"repository.id":   want.Repo.ID,
		"installation.id": want.InstallationID,
		"issue.number":    int64(want.Number),
		"comment.id":      want.CommentID,
		"sender.id":       want.Sender.ID,
	} {
		if n := num(path); n != got {
			t.Errorf("fixture %s = %d, fixtureTrigger has %d", path, n, got)
		}
	}
}
