package gather

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

func TestClip(t *testing.T) {
	long := strings.Repeat("a", contextTextBytes+10)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short text is kept", "hello\nworld", "hello\nworld"},
		{"invalid UTF-8 is dropped", "ok\xffok", "okok"},
		{"hidden characters are stripped", "a\u200bb\u202ec", "abc"},
		{"exactly the limit is kept", long[:contextTextBytes], long[:contextTextBytes]},
		{"over the limit is cut and says so", long, long[:contextTextBytes] + "\n…(cut)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clip(tc.in); got != tc.want {
				t.Errorf("clip(%.40q) = %.60q, want %.60q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLogTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		max    int
		want   string
	}{
		{"a short log is all kept", []string{"one\ntwo\n"}, 16, "one\ntwo\n"},
		{"a cut log starts at a whole line", []string{"first line\nsecond\nthird\n"}, 12, "third\n"},
		{"a cut at a line keeps the next whole line", []string{"first line\nsecond\nthird\n"}, 14, "second\nthird\n"},
		{"a cut across writes keeps the newest bytes", []string{"aaaa\n", "bbbb\n", "cc\n"}, 8, "cc\n"},
		{"a cut with no newline left keeps the bytes", []string{"0123456789"}, 4, "6789"},
		{"a cut through a rune drops its remains", []string{"x\n\xe2\x82\xacz"}, 3, "z"},
		{"exactly max is not a cut", []string{"ab\ncd"}, 5, "ab\ncd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := io.MultiReader(readers(tc.writes)...)
			if got := logTail(r, tc.max); got != tc.want {
				t.Errorf("logTail = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("a read error leaves the log out", func(t *testing.T) {
		r := io.MultiReader(strings.NewReader("some log\n"), iotest.ErrReader(errors.New("reset")))
		if got := logTail(r, 100); got != "" {
			t.Errorf("logTail = %q, want empty", got)
		}
	})
}

func readers(parts []string) []io.Reader {
	var rs []io.Reader
	for _, p := range parts {
		rs = append(rs, strings.NewReader(p))
	}
	return rs
}

func TestTailWriterKeepsTheLastBytes(t *testing.T) {
	tw := &tailWriter{max: 5}
	for _, p := range []string{"abc", "defg", "h"} {
		if n, err := tw.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if string(tw.buf) != "defgh" || !tw.dropped {
		t.Errorf("buf %q dropped %v, want \"defgh\" true", tw.buf, tw.dropped)
	}
}

func comment(id int64, login, typ, body string) *github.IssueComment {
	return &github.IssueComment{ID: github.Int64(id), Body: github.String(body), HTMLURL: github.String(fmt.Sprintf("https://github.test/c/%d", id)),
		User: &github.User{Login: github.String(login), Type: github.String(typ)}}
}

func TestPickWriterComments(t *testing.T) {
	roles := map[string]string{"alice": "write", "bob": "read", "carol": "maintain", "dave": "none"}
	thread := []*github.IssueComment{
		comment(1, "alice", "User", "first, by a writer"),
		comment(2, "bob", "User", "a reader's"),
		comment(3, "Alice", "User", "the request"),
		comment(4, "carol", "User", "   "),
		comment(5, "inspect[bot]", "Bot", "our progress"),
		comment(6, "dependabot[bot]", "Bot", "another bot's"),
		comment(7, "dave", "User", "a stranger's"),
		comment(8, "carol", "User", "a maintainer's"),
		comment(9, "ALICE", "User", "the writer again"),
	}
	var asked []string
	items, err := pickWriterComments(thread, 3, func(login string) (string, error) {
		asked = append(asked, login)
		return roles[strings.ToLower(login)], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		if it.Kind != contract.ContextComment || !it.Untrusted || it.Source == "" {
			t.Errorf("item %+v: want an untrusted comment with its URL", it)
		}
		got = append(got, it.Author+": "+it.Text)
	}
	want := []string{"alice: first, by a writer", "carol: a maintainer's", "ALICE: the writer again"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("comments %q, want %q (oldest first, writers only)", got, want)
	}
	// Newest first, each login once whatever its case, no role asked for
	// the request, an empty comment or a bot.
	if wantAsked := []string{"ALICE", "carol", "dave", "bob"}; strings.Join(asked, ",") != strings.Join(wantAsked, ",") {
		t.Errorf("roles asked for %q, want %q", asked, wantAsked)
	}
}

func TestPickWriterCommentsBounds(t *testing.T) {
	t.Run("the newest comments are kept", func(t *testing.T) {
		var thread []*github.IssueComment
		for i := range maxContextComments + 5 {
			thread = append(thread, comment(int64(i+1), "alice", "User", fmt.Sprint("c", i)))
		}
		items, err := pickWriterComments(thread, 0, func(string) (string, error) { return "write", nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != maxContextComments || items[0].Text != "c5" || items[len(items)-1].Text != fmt.Sprint("c", maxContextComments+4) {
			t.Errorf("%d items from %q to %q, want %d from c5", len(items), items[0].Text, items[len(items)-1].Text, maxContextComments)
		}
	})
	t.Run("roles are read for so many logins only", func(t *testing.T) {
		var thread []*github.IssueComment
		for i := range maxRoleLookups + 3 {
			thread = append(thread, comment(int64(i+1), fmt.Sprint("user", i), "User", "hi"))
		}
		lookups := 0
		items, err := pickWriterComments(thread, 0, func(string) (string, error) { lookups++; return "admin", nil })
		if err != nil {
			t.Fatal(err)
		}
		if lookups != maxRoleLookups || len(items) != maxRoleLookups || items[0].Author != "user3" {
			t.Errorf("%d lookups, %d items, first by %s; want %d, %d, user3", lookups, len(items), items[0].Author, maxRoleLookups, maxRoleLookups)
		}
	})
	t.Run("a role that cannot be read fails the gathering", func(t *testing.T) {
		boom := errors.New("reading alice's permission: 502")
		_, err := pickWriterComments([]*github.IssueComment{comment(1, "alice", "User", "hi")}, 0, func(string) (string, error) { return "", boom })
		if !errors.Is(err, boom) {
			t.Errorf("err = %v, want %v", err, boom)
		}
	})
}

func TestCheckText(t *testing.T) {
	ann := &github.CheckRunAnnotation{Path: github.String("a.go"), StartLine: github.Int(3), AnnotationLevel: github.String("failure"),
		Title: github.String("vet"), Message: github.String("unused x")}
	for _, tc := range []struct {
		name string
		ch   FailingCheck
		anns []*github.CheckRunAnnotation
		tail string
		want string
	}{
		{"a status with a link", FailingCheck{Name: "ci/jenkins", Description: "build broke", TargetURL: "https://ci.test/1"}, nil, "",
			"Commit status \"ci/jenkins\" failed: build broke\nDetails: https://ci.test/1\n"},
		{"a Buildkite status with its job's log", FailingCheck{Name: "ci/buildkite", Description: "Build #3 failed", TargetURL: "https://buildkite.com/acme/ci/builds/3#b63254c0-3271-4a98-8270-7cfbd6c2f14e"}, nil, "--- FAIL: TestX\n",
			"Commit status \"ci/buildkite\" failed: Build #3 failed\nDetails: https://buildkite.com/acme/ci/builds/3#b63254c0-3271-4a98-8270-7cfbd6c2f14e\n\nEnd of the job's log:\n--- FAIL: TestX\n\n"},
		{"a status without a link", FailingCheck{Name: "lint", Description: "2 errors"}, nil, "",
			"Commit status \"lint\" failed: 2 errors\n"},
		{"a check run's output", FailingCheck{Name: "test", RunID: 7, AppSlug: "circleci", Title: "1 failed", Summary: "TestX"}, nil, "",
			"Check run \"test\" (from circleci) failed.\n\n1 failed\n\nTestX\n"},
		{"a check run with text, annotations and a log", FailingCheck{Name: "go", RunID: 8, AppSlug: "github-actions", Title: "T", Summary: "S", Text: "details"},
			[]*github.CheckRunAnnotation{ann}, "FAIL\n",
			"Check run \"go\" (from github-actions) failed.\n\nT\n\nS\n\ndetails\n\nAnnotations:\n- a.go:3: failure: vet unused x\n\nEnd of the job's log:\nFAIL\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkText(tc.ch, tc.anns, tc.tail); got != tc.want {
				t.Errorf("checkText =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestCheckContextKeepsTheFirstChecks(t *testing.T) {
	var failing []FailingCheck
	for i := range MaxRepairChecks + 4 {
		failing = append(failing, FailingCheck{Name: fmt.Sprintf("status-%d\u200b", i), Description: "red"})
	}
	var gotSHA string
	g := Gatherer{FailingChecks: func(_ context.Context, _ *github.Client, owner, repo, sha string, _ config.Repo) ([]FailingCheck, error) {
		gotSHA = owner + "/" + repo + "@" + sha
		return failing, nil
	}}
	// Statuses need no GitHub reads beyond the listing: no client.
	items, err := g.checkContext(context.Background(), nil, store.Session{RepoOwner: "o", RepoName: "r"}, config.Repo{}, "abc")
	if err != nil {
		t.Fatal(err)
	}
	if gotSHA != "o/r@abc" {
		t.Errorf("listed checks of %s, want o/r@abc", gotSHA)
	}
	if len(items) != MaxRepairChecks {
		t.Fatalf("%d items, want %d", len(items), MaxRepairChecks)
	}
	for i, it := range items {
		if it.Kind != contract.ContextCheckOutput || !it.Untrusted || it.Source != fmt.Sprintf("status-%d", i) {
			t.Errorf("item %d = %+v, want untrusted check output named status-%d (hidden characters cleaned)", i, it, i)
		}
	}
	boom := errors.New("listing check runs: 500")
	g.FailingChecks = func(context.Context, *github.Client, string, string, string, config.Repo) ([]FailingCheck, error) {
		return nil, boom
	}
	if _, err := g.checkContext(context.Background(), nil, store.Session{}, config.Repo{}, "abc"); !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

func TestOpenedByInspect(t *testing.T) {
	pr := func(author, branch string) *github.PullRequest {
		return &github.PullRequest{User: &github.User{Login: github.String(author)}, Head: &github.PullRequestBranch{Ref: github.String(branch)}}
	}
	for _, tc := range []struct {
		name string
		pr   *github.PullRequest
		want bool
	}{
		{"our bot on our branch", pr("inspect[bot]", "inspect/fix-12"), true},
		{"our bot in another case", pr("Inspect[bot]", "inspect/fix-12"), true},
		{"our bot on another branch", pr("inspect[bot]", "feature"), false},
		{"a person on a branch named like ours", pr("alice", "inspect/fix-12"), false},
		{"a pull request with no author", &github.PullRequest{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OpenedByInspect(tc.pr, "inspect[bot]"); got != tc.want {
				t.Errorf("OpenedByInspect = %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeStore is a pull request's sessions and attempts.
type fakeStore struct {
	sessions []store.Session
	attempts map[string]store.Attempt
	asked    string
}

func (f *fakeStore) SessionsForPull(_ context.Context, repoID int64, number int, limit int) ([]store.Session, error) {
	f.asked = fmt.Sprintf("%d#%d limit %d", repoID, number, limit)
	return f.sessions, nil
}

func (f *fakeStore) SessionsForTarget(_ context.Context, repoID int64, number int, limit int) ([]store.Session, error) {
	f.asked = fmt.Sprintf("%d#%d limit %d", repoID, number, limit)
	return f.sessions, nil
}

func (f *fakeStore) GetSession(_ context.Context, id string) (store.Session, error) {
	for _, s := range f.sessions {
		if s.ID == id {
			return s, nil
		}
	}
	return store.Session{}, store.ErrNotFound
}

// SessionTurns: the sessions here took no turns.
func (f *fakeStore) SessionTurns(context.Context, string) ([]session.Turn, error) { return nil, nil }

func (f *fakeStore) GetAttempt(_ context.Context, id string) (store.Attempt, error) {
	a, ok := f.attempts[id]
	if !ok {
		return store.Attempt{}, errors.New("no such attempt")
	}
	return a, nil
}

func TestEarlierSessions(t *testing.T) {
	done := func(id, attempt string) store.Session {
		return store.Fixture(session.Done, store.Session{ID: id, Outcome: session.Changed, RequesterLogin: "alice", Instructions: "do " + id, AttemptID: attempt})
	}
	refused := done("refused", "")
	refused.Outcome = session.Refused
	running := done("running", "")
	running = store.Fixture(session.Running, running)
	noRequest := done("empty", "")
	noRequest.Instructions = ""
	fs := &fakeStore{
		sessions: []store.Session{done("s1", "a1"), refused, running, noRequest, done("s2", "a2"), done("s3", "a3"), done("s4", "missing"), done("current", "")},
		attempts: map[string]store.Attempt{
			"a1": {Result: `{"evidence":{"final_answer":"  all fixed  "}}`},
			"a2": {Result: "not json"},
			"a3": {},
		},
	}
	g := Gatherer{Store: fs}
	items, err := g.earlierSessions(context.Background(), store.Session{ID: "current", RepoID: 9, Number: 4})
	if err != nil {
		t.Fatal(err)
	}
	if fs.asked != "9#4 limit 100" {
		t.Errorf("asked the store for %s", fs.asked)
	}
	var got []string
	for _, it := range items {
		if it.Kind != contract.ContextEarlierSession || !it.Untrusted || it.Author != "alice" {
			t.Errorf("item %+v: want an untrusted earlier session by alice", it)
		}
		got = append(got, it.Text)
	}
	want := []string{
		"Session s1, requested by @alice (changed):\n\ndo s1\n\nThe agent's final answer:\n\nall fixed\n",
		"Session s2, requested by @alice (changed):\n\ndo s2\n",
		"Session s3, requested by @alice (changed):\n\ndo s3\n",
		"Session s4, requested by @alice (changed):\n\ndo s4\n",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("earlier sessions\n%q\nwant\n%q", got, want)
	}
}

func TestEarlierSessionsKeepTheLatest(t *testing.T) {
	fs := &fakeStore{}
	for i := range maxEarlierSessions + 3 {
		fs.sessions = append(fs.sessions, store.Fixture(session.Done, store.Session{ID: fmt.Sprint("s", i), Outcome: session.NoChange, Instructions: "q"}))
	}
	items, err := Gatherer{Store: fs}.earlierSessions(context.Background(), store.Session{ID: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != maxEarlierSessions || !strings.HasPrefix(items[0].Text, "Session s3,") {
		t.Errorf("%d items, first %q; want %d from s3", len(items), items[0].Text, maxEarlierSessions)
	}
}

func TestContextWithNothingToGather(t *testing.T) {
	// The request and our progress comment are the thread's only comments,
	// no review, no checks, not our pull request: no reads at all (a nil
	// client would panic on one).
	sess := store.Session{CommentID: 1, ProgressCommentID: 2}
	items, err := Gatherer{Bot: "inspect[bot]"}.Context(context.Background(), nil, sess, config.Repo{}, "abc", nil, 2)
	if err != nil || items != nil {
		t.Errorf("Context = %v, %v; want nothing", items, err)
	}
}

func TestContextOfAReviewComment(t *testing.T) {
	ti := store.TriggerInfo{Review: &store.ReviewInfo{CommentID: 5, ReviewComment: session.ReviewComment{Path: "a/b.go", StartLine: 3, Line: 7, DiffHunk: "@@ -1 +1 @@\n-x\n+y"}}}
	// The review comment is no issue comment: only the request counts as ours.
	sess := store.Session{CommentID: 5, ProgressCommentID: 6, TriggerInfo: ti.Encode()}
	items, err := Gatherer{}.Context(context.Background(), nil, sess, config.Repo{}, "abc", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.ContextItem{{Kind: contract.ContextReviewComment, Source: "a/b.go, lines 3–7", Text: "@@ -1 +1 @@\n-x\n+y", Untrusted: true}}
	if fmt.Sprint(items) != fmt.Sprint(want) {
		t.Errorf("Context = %+v, want %+v", items, want)
	}
}
