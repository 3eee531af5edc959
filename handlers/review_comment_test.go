package handlers_test

import (
	"slices"
	"testing"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

const (
	reviewEvent = "pull_request_review_comment"
	// reviewFixture is a created one-line review comment on README.md line
	// 265 (right side) of PR #2 of Codertocat/Hello-World, from
	// installation 1.
	reviewFixture = "pull_request_review_comment.created.json"
	// reviewFixtureBody is the fixture's own comment, which holds no command.
	reviewFixtureBody = "Maybe you should use more emoji on this line."
)

// fixtureReview is the Trigger for reviewFixture with the body
// "/inspect fix it", as read off the fixture.
func fixtureReview() session.Trigger {
	return session.Trigger{
		DeliveryID:     testDelivery,
		Event:          reviewEvent,
		Kind:           session.KindReviewComment,
		Repo:           hello,
		InstallationID: 1,
		Number:         2,
		IsPR:           true,
		CommentID:      284312630,
		Sender:         codertocat,
		Command:        policy.Parsed{Kind: policy.Command, Sub: policy.Run, Instructions: "fix it"},
		Review: &session.ReviewComment{
			Path:      "README.md",
			Line:      265,
			StartLine: 0,
			Side:      "RIGHT",
			DiffHunk:  "@@ -1 +1 @@\n-# Hello-World",
			CommitID:  "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
			InReplyTo: 0,
		},
	}
}

func TestPullRequestReviewCommentHandles(t *testing.T) {
	if got := (&handlers.PullRequestReviewComment{}).Handles(); !slices.Equal(got, []string{reviewEvent}) {
		t.Errorf("Handles() = %q, want [%s]", got, reviewEvent)
	}
}

func TestPullRequestReviewCommentFixture(t *testing.T) {
	want := fixtureReview()
	checkFixture(t, reviewFixture, map[string]any{
		"action":                    "created",
		"repository.id":             want.Repo.ID,
		"repository.owner.login":    want.Repo.Owner,
		"repository.name":           want.Repo.Name,
		"repository.default_branch": want.Repo.DefaultBranch,
		"installation.id":           want.InstallationID,
		"pull_request.number":       want.Number,
		"comment.id":                want.CommentID,
		"comment.body":              reviewFixtureBody,
		"comment.path":              want.Review.Path,
		"comment.line":              want.Review.Line,
		"comment.original_line":     want.Review.Line,
		"comment.start_line":        nil,
		"comment.side":              want.Review.Side,
		"comment.diff_hunk":         want.Review.DiffHunk,
		"comment.commit_id":         want.Review.CommitID,
		"sender.login":              want.Sender.Login,
		"sender.id":                 want.Sender.ID,
		"sender.type":               want.Sender.Type,
	})
	if _, ok := loadFixture(t, reviewFixture)["comment"].(map[string]any)["in_reply_to_id"]; ok {
		t.Errorf("%s: the comment is a reply; fixtureReview assumes it is not", reviewFixture)
	}
}

func TestPullRequestReviewComment(t *testing.T) {
	same := func(*session.Trigger) {}

	tests := []struct {
		name    string
		edits   []edit // applied after the body is set to "/inspect fix it"
		raw     []byte
		word    string // default "/inspect"
		self    *handlers.Identity
		noID    bool
		sinkErr error
		// want edits fixtureReview into the one Trigger expected; nil means
		// the sink must not be called.
		want func(*session.Trigger)
		err  wantErr
		msg  string
	}{
		// Commands.
		{name: "command on one line", want: same},
		{
			name:  "command on a range of lines",
			edits: []edit{set("comment.start_line", 260), set("comment.start_side", "RIGHT")},
			want:  func(tr *session.Trigger) { tr.Review.StartLine = 260 },
		},
		{
			name:  "left side of the diff",
			edits: []edit{set("comment.side", "LEFT")},
			want:  func(tr *session.Trigger) { tr.Review.Side = "LEFT" },
		},
		{
			name:  "outdated comment: the original line",
			edits: []edit{set("comment.line", nil), set("comment.original_line", 12)},
			want:  func(tr *session.Trigger) { tr.Review.Line = 12 },
		},
		{
			name:  "no line: the original line",
			edits: []edit{del("comment.line"), set("comment.original_line", 13)},
			want:  func(tr *session.Trigger) { tr.Review.Line = 13 },
		},
		{
			name:  "the line wins over the original line",
			edits: []edit{set("comment.line", 270), set("comment.original_line", 1)},
			want:  func(tr *session.Trigger) { tr.Review.Line = 270 },
		},
		{
			name:  "neither line",
			edits: []edit{set("comment.line", nil), set("comment.original_line", nil)},
			want:  func(tr *session.Trigger) { tr.Review.Line = 0 },
		},
		{
			name:  "reply in a thread",
			edits: []edit{set("comment.in_reply_to_id", 284312000)},
			want:  func(tr *session.Trigger) { tr.Review.InReplyTo = 284312000 },
		},
		{
			name:  "another commit and path",
			edits: []edit{set("comment.commit_id", "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"), set("comment.path", "docs/a b.md")},
			want: func(tr *session.Trigger) {
				tr.Review.CommitID = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"
				tr.Review.Path = "docs/a b.md"
			},
		},
		{
			name:  "instructions continue on the next lines",
			edits: []edit{body("/inspect\nrename this\nand its callers")},
			want:  func(tr *session.Trigger) { tr.Command.Instructions = "rename this\nand its callers" },
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
		{name: "custom command word", word: "/bot", edits: []edit{body("/bot fix it")}, want: same},

		// Nothing to do.
		{name: "edited comment", edits: []edit{set("action", "edited")}},
		{name: "deleted comment", edits: []edit{set("action", "deleted")}},
		{name: "missing action", edits: []edit{del("action")}},
		{name: "comment by our own app", edits: ourBot},
		{name: "our own app, login in another case", edits: []edit{set("sender.login", "INSPECT-APP[bot]"), set("sender.type", "Bot")}},
		{name: "comment performed via our app", edits: []edit{set("comment.performed_via_github_app", map[string]any{"id": testAppID, "slug": testAppSlug})}},
		{name: "the fixture's comment has no command", edits: []edit{body(reviewFixtureBody)}},
		{name: "empty body", edits: []edit{body("")}},
		{name: "command word mid-line", edits: []edit{body("please run /inspect fix it")}},
		{name: "command in a suggestion block", edits: []edit{body("```suggestion\n/inspect fix it\n```")}},
		{name: "default word ignored under a custom word", word: "/bot"},
		// The payload is only validated once there is a command to accept.
		{name: "no command and no installation", edits: []edit{body("nice"), del("installation")}},
		{name: "edited and no pull request", edits: []edit{set("action", "edited"), del("pull_request")}},

		// Incomplete payloads.
		{name: "missing installation", edits: []edit{del("installation")}, err: payloadErr, msg: "installation is missing"},
		{name: "null installation", edits: []edit{set("installation", nil)}, err: payloadErr, msg: "installation is missing"},
		{name: "installation id 0", edits: []edit{set("installation.id", 0)}, err: payloadErr, msg: "installation is missing"},
		{name: "missing repository", edits: []edit{del("repository")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository id", edits: []edit{del("repository.id")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository name", edits: []edit{del("repository.name")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing repository owner", edits: []edit{del("repository.owner")}, err: payloadErr, msg: "repository is missing"},
		{name: "missing pull request", edits: []edit{del("pull_request")}, err: payloadErr, msg: "pull request number is missing"},
		{name: "missing pull request number", edits: []edit{del("pull_request.number")}, err: payloadErr, msg: "pull request number is missing"},
		{name: "missing comment id", edits: []edit{del("comment.id")}, err: payloadErr, msg: "comment id is missing"},
		{name: "missing sender", edits: []edit{del("sender")}, err: payloadErr, msg: "sender is missing"},
		{name: "sender without login", edits: []edit{del("sender.login")}, err: payloadErr, msg: "sender is missing"},
		{name: "missing delivery id", noID: true, err: payloadErr, msg: "X-GitHub-Delivery"},

		// Undecodable payloads.
		{name: "malformed JSON", raw: []byte(`{"action":"created","comment":{"body":"/inspect fix it"`), err: payloadErr},
		{name: "empty payload", raw: []byte{}, err: payloadErr},
		{name: "top-level array", raw: []byte(`[]`), err: payloadErr},
		{name: "line as a string", edits: []edit{set("comment.line", "265")}, err: payloadErr},
		{name: "start line as a string", edits: []edit{set("comment.start_line", "260")}, err: payloadErr},
		{name: "reply id as a string", edits: []edit{set("comment.in_reply_to_id", "1")}, err: payloadErr},
		{name: "body as a number", edits: []edit{set("comment.body", 7)}, err: payloadErr},
		{name: "pull request number as a string", edits: []edit{set("pull_request.number", "2")}, err: payloadErr},

		// The sink's answer.
		{name: "sink error", sinkErr: errSinkDown, want: same, err: sinkErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			payload := buildPayload(t, tc.raw, reviewFixture, []edit{body("/inspect fix it")}, tc.edits)
			word := tc.word
			if word == "" {
				word = "/inspect"
			}
			sink := &fakeSink{err: tc.sinkErr}
			h := &handlers.PullRequestReviewComment{Sink: sink, CommandWord: word, Self: selfFor(tc.self)}

			err := h.Handle(testContext(), reviewEvent, deliveryFor(tc.noID), payload)
			checkErr(t, err, tc.err)
			checkMsg(t, err, tc.msg)
			expectSink(t, sink, edited(fixtureReview, tc.want), nil)
		})
	}
}
