package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

// claimAllReady claims and completes every work item ready at now, and
// returns their kinds.
func claimAllReady(t *testing.T, s *store.Store, now time.Time) []store.WorkKind {
	t.Helper()
	ctx := context.Background()
	var kinds []store.WorkKind
	for {
		w, err := s.Claim(ctx, "w", now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if w == nil {
			return kinds
		}
		kinds = append(kinds, w.Kind)
		if err := s.Complete(ctx, w, now); err != nil {
			t.Fatal(err)
		}
	}
}

// A baseline is made once per key: the first session attempt makes it
// (its attempt, kind baseline with no session, and the work that starts
// it), a second attempt with the same key links it as it is; its claim
// runs it, its result finishes it and brings the waiting report forward,
// once. A failed one is replaced by the next attempt's.
func TestABaselineIsMadeOncePerKeyAndReused(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d1", 100, "s1")); err != nil {
			t.Fatal(err)
		}
		deadline := t0.Add(time.Hour)
		for _, id := range []string{"a1", "a2"} {
			if err := s.CreateAttempt(ctx, store.Attempt{ID: id, SessionID: "s1", Deadline: deadline, Spec: "{}"}, "code-"+id, t0); err != nil {
				t.Fatal(err)
			}
		}
		key := store.Baseline{CacheDigest: "sha256:k1", InstallationID: 9, RepoID: 1, BaseSHA: "abc"}
		first, created, err := s.LinkBaseline(ctx, "a1", key, store.Attempt{ID: "b1", RepoID: 1, Deadline: deadline, Spec: "{}"}, "code-b1", t0)
		if err != nil || !created || first.State != store.BaselineWaiting || first.AttemptID != "b1" || first.ForAttempt != "a1" || first.InstallationID != 9 {
			t.Fatalf("first link: %+v created %v, %v", first, created, err)
		}
		b, err := s.GetAttempt(ctx, "b1")
		if err != nil || b.Kind != "baseline" || b.SessionID != "" || b.RepoID != 1 || b.BaselineDigest != "sha256:k1" || b.State != store.AttemptStarted {
			t.Fatalf("the baseline attempt: %+v, %v", b, err)
		}
		if sess, err := s.GetSession(ctx, "s1"); err != nil || sess.AttemptID != "a2" {
			t.Fatalf("the baseline attempt became the session's: %q, %v", sess.AttemptID, err)
		}
		again, created, err := s.LinkBaseline(ctx, "a2", key, store.Attempt{ID: "b2", RepoID: 1, Deadline: deadline, Spec: "{}"}, "code-b2", t0)
		if err != nil || created || again.AttemptID != "b1" || again.ForAttempt != "a1" {
			t.Fatalf("second link: %+v created %v, %v", again, created, err)
		}
		if _, err := s.GetAttempt(ctx, "b2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a second baseline attempt was made: %v", err)
		}
		for _, id := range []string{"a1", "a2"} {
			if a, err := s.GetAttempt(ctx, id); err != nil || a.BaselineDigest != "sha256:k1" {
				t.Errorf("%s links %q, %v", id, a.BaselineDigest, err)
			}
		}
		// The one dispatch is queued; a report postponed past now waits.
		if kinds := claimAllReady(t, s, t0); !containsKind(kinds, store.DispatchBaseline) || countKind(kinds, store.DispatchBaseline) != 1 {
			t.Errorf("ready work %v, want one dispatch_baseline", kinds)
		}
		if _, err := s.MutateSession(ctx, "s1", t0, func(*store.Session) error { return nil },
			store.NewWork{Kind: store.ReportSession, SessionID: "s1", RunAfter: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if kinds := claimAllReady(t, s, t0); containsKind(kinds, store.ReportSession) {
			t.Fatalf("the postponed report ran: %v", kinds)
		}

		if _, err := s.ClaimAttempt(ctx, "b1", "code-b1", "token-b1", t0); err != nil {
			t.Fatal(err)
		}
		if got, err := s.BaselineOfAttempt(ctx, "b1"); err != nil || got.State != store.BaselineRunning {
			t.Fatalf("after the claim: %+v, %v", got, err)
		}
		first2, err := s.RecordBaselineResult(ctx, "b1", `{"evidence":{}}`, store.BaselineDone, "", `{"tests":{}}`, t0.Add(time.Minute))
		if err != nil || !first2 {
			t.Fatalf("the result: %v, %v", first2, err)
		}
		if again, err := s.RecordBaselineResult(ctx, "b1", `{}`, store.BaselineFailed, "late", "", t0.Add(2*time.Minute)); err != nil || again {
			t.Fatalf("a repeated result counted: %v, %v", again, err)
		}
		got, err := s.GetBaseline(ctx, "sha256:k1")
		if err != nil || got.State != store.BaselineDone || got.Result != `{"tests":{}}` || got.Why != "" {
			t.Fatalf("after the result: %+v, %v", got, err)
		}
		if b, err := s.GetAttempt(ctx, "b1"); err != nil || b.State != store.AttemptEnded || b.Result != `{"evidence":{}}` {
			t.Errorf("the baseline attempt after its result: %+v, %v", b, err)
		}
		if kinds := claimAllReady(t, s, t0.Add(time.Minute)); !containsKind(kinds, store.ReportSession) {
			t.Errorf("the waiting report was not brought forward: %v", kinds)
		}

		// A failed one is made anew by the next attempt with the key.
		key2 := store.Baseline{CacheDigest: "sha256:k2", InstallationID: 9, RepoID: 1, BaseSHA: "def"}
		if _, _, err := s.LinkBaseline(ctx, "a1", key2, store.Attempt{ID: "b3", RepoID: 1, Deadline: t0.Add(time.Minute), Spec: "{}"}, "code-b3", t0); err != nil {
			t.Fatal(err)
		}
		lost, err := s.LostBaselines(ctx, t0.Add(2*time.Minute))
		if err != nil || len(lost) != 1 || lost[0].AttemptID != "b3" {
			t.Fatalf("lost baselines: %+v, %v", lost, err)
		}
		if ok, err := s.FailBaseline(ctx, "sha256:k2", "b3", "it never reported", t0.Add(2*time.Minute)); err != nil || !ok {
			t.Fatalf("failing it: %v, %v", ok, err)
		}
		if ok, err := s.FailBaseline(ctx, "sha256:k2", "b3", "again", t0.Add(2*time.Minute)); err != nil || ok {
			t.Fatalf("failing it twice: %v, %v", ok, err)
		}
		if lost, err := s.LostBaselines(ctx, t0.Add(2*time.Minute)); err != nil || len(lost) != 0 {
			t.Fatalf("a failed baseline is still lost: %+v, %v", lost, err)
		}
		anew, created, err := s.LinkBaseline(ctx, "a2", key2, store.Attempt{ID: "b4", RepoID: 1, Deadline: deadline, Spec: "{}"}, "code-b4", t0.Add(3*time.Minute))
		if err != nil || !created || anew.AttemptID != "b4" || anew.State != store.BaselineWaiting || anew.Why != "" || anew.ForAttempt != "a2" {
			t.Fatalf("after a failure: %+v created %v, %v", anew, created, err)
		}
	})
}

func containsKind(kinds []store.WorkKind, k store.WorkKind) bool { return countKind(kinds, k) > 0 }

func countKind(kinds []store.WorkKind, k store.WorkKind) int {
	n := 0
	for _, got := range kinds {
		if got == k {
			n++
		}
	}
	return n
}

// A baseline's attempt run by a replica's local executor is found by that
// replica, while it is pending: reconcile fails it when the replica dies.
func TestPendingBaselinesAreFoundByTheirReplica(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d1", 100, "s1")); err != nil {
			t.Fatal(err)
		}
		deadline := t0.Add(time.Hour)
		for i, id := range []string{"a1", "a2"} {
			if err := s.CreateAttempt(ctx, store.Attempt{ID: id, SessionID: "s1", Deadline: deadline, Spec: "{}"}, "code-"+id, t0); err != nil {
				t.Fatal(err)
			}
			key := store.Baseline{CacheDigest: "sha256:k" + id, InstallationID: 9, RepoID: 1, BaseSHA: "abc"}
			if _, _, err := s.LinkBaseline(ctx, id, key, store.Attempt{ID: "b" + id, RepoID: 1, Deadline: deadline, Spec: "{}"}, "code-b"+id, t0); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if err := s.SetAttemptHost(ctx, "b"+id, "replica-1", t0); err != nil {
					t.Fatal(err)
				}
			}
		}
		hosts, err := s.PendingBaselineHosts(ctx)
		if err != nil || len(hosts) != 1 || len(hosts["replica-1"]) != 1 || hosts["replica-1"][0].AttemptID != "ba1" || hosts["replica-1"][0].CacheDigest != "sha256:ka1" {
			t.Fatalf("pending baselines by replica = %+v, %v; want replica-1's ba1 alone (ba2 has no host)", hosts, err)
		}
		if _, err := s.FailBaseline(ctx, "sha256:ka1", "ba1", "its replica died", t0); err != nil {
			t.Fatal(err)
		}
		if hosts, err := s.PendingBaselineHosts(ctx); err != nil || len(hosts) != 0 {
			t.Errorf("a failed baseline is still pending: %+v, %v", hosts, err)
		}
	})
}
