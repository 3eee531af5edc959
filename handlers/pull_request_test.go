package handlers_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/session"
)

var (
	_ handlers.FateSink = (*fakeFates)(nil)
	_ interface {
		Handles() []string
	} = (*handlers.PullRequest)(nil)
)

// fakeFates records what the handlers hand over.
type fakeFates struct {
	err       error
	mu        sync.Mutex
	news      []session.PullRequestNews
	commits   []session.DefaultBranchCommits
	backfills []int64
}

func (f *fakeFates) AcceptPullRequestNews(_ context.Context, n session.PullRequestNews) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.news = append(f.news, n)
	return f.err
}

func (f *fakeFates) AcceptDefaultBranchCommits(_ context.Context, c session.DefaultBranchCommits) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, c)
	return f.err
}

func (f *fakeFates) BackfillInstallation(_ context.Context, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backfills = append(f.backfills, id)
	return f.err
}

var self = func() handlers.Identity { return handlers.Identity{AppID: 42, AppSlug: "inspect-app"} }

// pull_request closed (GitHub's example payload), merged or not, and
// reopened become news naming who did it and when; other actions none.
func TestPullRequestEventsBecomeNews(t *testing.T) {
	fates := &fakeFates{}
	h := &handlers.PullRequest{Fates: fates, Self: self}
	closed := loadFixture(t, "pull_request.closed.json")
	if err := h.Handle(testContext(), "pull_request", "d1", encode(t, closed)); err != nil {
		t.Fatal(err)
	}
	setPath(t, closed, "pull_request.merged", true)
	setPath(t, closed, "pull_request.merged_at", "2019-05-15T15:21:18Z")
	setPath(t, closed, "pull_request.body", "Reverts Codertocat/Hello-World#1")
	setPath(t, closed, "pull_request.merged_by", map[string]any{"login": "inspect-app[bot]", "id": 9, "type": "Bot"})
	if err := h.Handle(testContext(), "pull_request", "d2", encode(t, closed)); err != nil {
		t.Fatal(err)
	}
	setPath(t, closed, "action", "reopened")
	if err := h.Handle(testContext(), "pull_request", "d3", encode(t, closed)); err != nil {
		t.Fatal(err)
	}
	setPath(t, closed, "action", "synchronize")
	if err := h.Handle(testContext(), "pull_request", "d4", encode(t, closed)); err != nil {
		t.Fatal(err)
	}
	if len(fates.news) != 3 {
		t.Fatalf("news: %+v", fates.news)
	}
	unmerged, merged, reopened := fates.news[0], fates.news[1], fates.news[2]
	if unmerged.Kind != session.NewsClosed || unmerged.Merged || unmerged.Number != 2 || unmerged.Repo.ID != 186853002 ||
		unmerged.InstallationID == 0 || unmerged.Actor.Login != "Codertocat" || unmerged.At.IsZero() || unmerged.Body != "" {
		t.Errorf("closed: %+v", unmerged)
	}
	if !merged.Merged || merged.MergeSHA != "c4295bd74fb0f4fda03689c3df3f2803b658fd85" || merged.Actor.Login != "inspect-app[bot]" ||
		!merged.ByInspect || merged.Body == "" {
		t.Errorf("merged: %+v", merged)
	}
	if reopened.Kind != session.NewsReopened {
		t.Errorf("reopened: %+v", reopened)
	}
	// A store that cannot write is the delivery's failure, redelivered.
	fates.err = &handlers.StoreError{Err: errors.New("down")}
	setPath(t, closed, "action", "closed")
	if err := h.Handle(testContext(), "pull_request", "d5", encode(t, closed)); !handlers.IsStoreError(err) {
		t.Errorf("a failed store: %v", err)
	}
	deletePath(t, closed, "installation")
	if err := h.Handle(testContext(), "pull_request", "d6", encode(t, closed)); !handlers.IsPayloadError(err) {
		t.Errorf("no installation: %v", err)
	}
}

// A review submitted names its reviewer, state and id; human comments on
// a pull request (its thread and its diff) are news before any command in
// them is read; a bot's are not.
func TestReviewsAndCommentsBecomeNews(t *testing.T) {
	fates := &fakeFates{}
	h := &handlers.PullRequest{Fates: fates, Self: self}
	review := loadFixture(t, "pull_request.closed.json")
	setPath(t, review, "action", "submitted")
	setPath(t, review, "review", map[string]any{"id": 77, "state": "changes_requested", "submitted_at": "2019-05-15T15:20:38Z",
		"user": map[string]any{"login": "mara", "id": 5, "type": "User"}})
	if err := h.Handle(testContext(), "pull_request_review", "d1", encode(t, review)); err != nil {
		t.Fatal(err)
	}
	sink := &fakeSink{}
	ic := &handlers.IssueComment{Sink: sink, Fates: fates, CommandWord: "/inspect", Self: self}
	comment := loadFixture(t, "issue_comment.created.with-installation.json")
	setPath(t, comment, "issue.pull_request", map[string]any{"url": "x"})
	setPath(t, comment, "comment.body", "/inspect please also fix the docs")
	if err := ic.Handle(testContext(), "issue_comment", "d2", encode(t, comment)); err != nil {
		t.Fatal(err)
	}
	setPath(t, comment, "comment.body", "LGTM")
	setPath(t, comment, "sender.type", "Bot")
	setPath(t, comment, "sender.login", "ci[bot]")
	if err := ic.Handle(testContext(), "issue_comment", "d3", encode(t, comment)); err != nil {
		t.Fatal(err)
	}
	rc := &handlers.PullRequestReviewComment{Sink: sink, Fates: fates, CommandWord: "/inspect", Self: self}
	if err := rc.Handle(testContext(), "pull_request_review_comment", "d4", encode(t, loadFixture(t, "pull_request_review_comment.created.json"))); err != nil {
		t.Fatal(err)
	}
	if len(fates.news) != 3 {
		t.Fatalf("news: %+v", fates.news)
	}
	r, c, d := fates.news[0], fates.news[1], fates.news[2]
	if r.Kind != session.NewsReview || r.ReviewState != "changes_requested" || r.ItemID != 77 || r.Actor.Login != "mara" || r.At.IsZero() {
		t.Errorf("review: %+v", r)
	}
	if c.Kind != session.NewsThreadComment || c.ItemID == 0 || c.Number == 0 {
		t.Errorf("thread comment: %+v", c)
	}
	if d.Kind != session.NewsReviewComment || d.ItemID == 0 || d.At.IsZero() {
		t.Errorf("review comment: %+v", d)
	}
	if triggers, _ := sink.recorded(); len(triggers) != 1 {
		t.Errorf("the command in the comment still triggers once: %d", len(triggers))
	}
}

// The App installed, or repositories added to it, asks for a backfill.
func TestInstallationAsksForABackfill(t *testing.T) {
	fates := &fakeFates{}
	h := &handlers.Installation{Fates: fates}
	for event, file := range map[string]string{"installation": "installation.created.json", "installation_repositories": "installation_repositories.added.json"} {
		if err := h.Handle(testContext(), event, "d", encode(t, loadFixture(t, file))); err != nil {
			t.Fatal(err)
		}
	}
	deleted := loadFixture(t, "installation.created.json")
	setPath(t, deleted, "action", "deleted")
	if err := h.Handle(testContext(), "installation", "d", encode(t, deleted)); err != nil {
		t.Fatal(err)
	}
	if len(fates.backfills) != 2 || fates.backfills[0] == 0 {
		t.Errorf("backfills: %v", fates.backfills)
	}
}

// A push to the default branch hands its commits (messages and paths) on,
// for the reverts among them.
func TestPushHandsTheDefaultBranchsCommitsOn(t *testing.T) {
	fates := &fakeFates{}
	h := &handlers.Push{Sink: &fakeSink{}, Fates: fates}
	push := loadFixture(t, "push.payload.json")
	setPath(t, push, "ref", "refs/heads/"+push["repository"].(map[string]any)["default_branch"].(string))
	setPath(t, push, "installation", map[string]any{"id": 1})
	setPath(t, push, "deleted", false)
	setPath(t, push, "commits", []any{map[string]any{"id": "abc", "message": "Revert \"x\"\n\nThis reverts commit 0123456789abcdef0123456789abcdef01234567.",
		"timestamp": "2019-05-15T15:20:30-05:00", "added": []any{}, "modified": []any{"a.go"}, "removed": []any{}}})
	if err := h.Handle(testContext(), "push", "d", encode(t, push)); err != nil {
		t.Fatal(err)
	}
	if len(fates.commits) != 1 || len(fates.commits[0].Commits) != 1 || fates.commits[0].Commits[0].Paths[0] != "a.go" ||
		fates.commits[0].Commits[0].At.IsZero() {
		t.Errorf("commits: %+v", fates.commits)
	}
}
