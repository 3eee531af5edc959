package session_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/session"
)

// storedRows reads one of testdata/stored's files: name, then the bytes
// the code before this package stored.
func storedRows(t *testing.T, file string) [][2]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "stored", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][2]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, row, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("%s: a line without a tab: %q", file, sc.Text())
		}
		rows = append(rows, [2]string{name, row})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s holds no rows", file)
	}
	return rows
}

// roundTrip decodes each stored row into a new T, strictly (a field the
// old code wrote that T does not know fails), and encodes it back as the
// app does (encoding/json.Marshal): the bytes must be the same.
func roundTrip[T any](t *testing.T, file string, check func(name string, v T)) {
	t.Helper()
	for _, r := range storedRows(t, file) {
		name, stored := r[0], r[1]
		t.Run(strings.TrimSuffix(file, ".tsv")+"/"+name, func(t *testing.T) {
			var v T
			dec := json.NewDecoder(strings.NewReader(stored))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("decoding the stored row: %v\n%s", err, stored)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, []byte(stored)) {
				t.Errorf("encoded back differently:\n got %s\nwant %s", got, stored)
			}
			if check != nil {
				check(name, v)
			}
		})
	}
}

func TestStoredTriggersRoundTrip(t *testing.T) {
	kinds := map[string]session.TriggerKind{
		"comment-run": session.KindComment, "comment-status": session.KindComment, "comment-reply": session.KindComment,
		"review-comment-cancel": session.KindReviewComment, "review-comment-minimal": session.KindReviewComment,
		"label": session.KindLabel, "unlabel": session.KindUnlabel,
		"check-action-retry": session.KindCheckAction, "check-action-branch": session.KindCheckAction,
		"dashboard-branch": session.KindDashboard, "zero": session.KindComment,
	}
	seen := 0
	roundTrip(t, "trigger.tsv", func(name string, tr session.Trigger) {
		want, ok := kinds[name]
		if !ok {
			t.Fatalf("no kind expected for row %q", name)
		}
		seen++
		if tr.Kind != want {
			t.Errorf("kind %q, want %q", tr.Kind, want)
		}
	})
	if seen != len(kinds) {
		t.Errorf("checked %d rows, want %d", seen, len(kinds))
	}
}

// TestStoredTriggersDecodeToWhatTheyMeant pins a few decoded values, so a
// tag that round-trips into the wrong field is caught too.
func TestStoredTriggersDecodeToWhatTheyMeant(t *testing.T) {
	rows := map[string]string{}
	for _, r := range storedRows(t, "trigger.tsv") {
		rows[r[0]] = r[1]
	}
	var review session.Trigger
	if err := json.Unmarshal([]byte(rows["review-comment-cancel"]), &review); err != nil {
		t.Fatal(err)
	}
	wantReview := &session.ReviewComment{Path: "README.md", Line: 3, StartLine: 1, Side: "RIGHT",
		DiffHunk: "@@ -1 +1 @@\n-# Hello-World\n+# Hello World", CommitID: "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", InReplyTo: 29724690}
	if !reflect.DeepEqual(review.Review, wantReview) || review.CommentID != 29724692 || !review.Target().IsPullRequest() || review.Target().Number() != 1 {
		t.Errorf("review trigger decoded as %+v (review %+v)", review, review.Review)
	}
	var branch session.Trigger
	if err := json.Unmarshal([]byte(rows["dashboard-branch"]), &branch); err != nil {
		t.Fatal(err)
	}
	if tg := branch.Target(); !tg.IsBranch() || tg.BranchName() != "release/1.2" || tg.HasThread() {
		t.Errorf("dashboard trigger's target is %v", tg)
	}
	var label session.Trigger
	if err := json.Unmarshal([]byte(rows["label"]), &label); err != nil {
		t.Fatal(err)
	}
	if label.Label != "inspect" || label.IssueTitle != "Spelling error in the README file" || !label.Target().IsIssue() || label.Sender.ID != 583231 || label.Repo.FullName() != "octocat/Hello-World" {
		t.Errorf("label trigger decoded as %+v", label)
	}
}

func TestStoredCheckFailuresRoundTrip(t *testing.T) {
	roundTrip(t, "check_failure.tsv", func(name string, f session.CheckFailure) {
		if name == "check-run" && (len(f.PullRequests) != 1 || f.PullRequests[0].HeadRepoID != 186853002 || f.CheckRunID != 128620228) {
			t.Errorf("check-run decoded as %+v", f)
		}
	})
}

func TestStoredConfigPushesRoundTrip(t *testing.T) {
	roundTrip(t, "config_push.tsv", func(name string, p session.ConfigPush) {
		if name == "org-wide" && (!p.OrgWide || p.Repo.Name != ".github") {
			t.Errorf("org-wide decoded as %+v", p)
		}
	})
}

// TestStoredTriggerKinds holds the column's spelling of every kind a
// session row names, both ways.
func TestStoredTriggerKinds(t *testing.T) {
	want := map[string]session.TriggerKind{
		"comment": session.KindComment, "review_comment": session.KindReviewComment, "label": session.KindLabel,
		"repair": session.KindRepair, "retry": session.KindRetry, "dashboard": session.KindDashboard,
	}
	rows := storedRows(t, "trigger_kind.tsv")
	if len(rows) != len(want) {
		t.Fatalf("%d stored kinds, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		k, ok := want[r[0]]
		if !ok {
			t.Fatalf("stored kind %q is not known", r[0])
		}
		if got := session.KindFromStoredName(r[1]); got != k {
			t.Errorf("KindFromStoredName(%q) = %q, want %q", r[1], got, k)
		}
		if got := k.StoredName(); got != r[1] {
			t.Errorf("%q.StoredName() = %q, want %q", k, got, r[1])
		}
	}
	// A name from a newer replica is kept, so writing the row back keeps it.
	if got := session.KindFromStoredName("from_the_future").StoredName(); got != "from_the_future" {
		t.Errorf("an unknown stored kind came back as %q", got)
	}
}
