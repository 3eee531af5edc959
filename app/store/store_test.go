package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
	"github.com/inspecthq/inspect/session"
)

// forEachDriver runs one test suite against SQLite and PostgreSQL.
func forEachDriver(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			fn(t, storetest.Open(t, driver))
		})
	}
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newSession(id string, commentID int64) *store.Session {
	return &store.Session{
		ID: id, RepoID: 1, RepoOwner: "o", RepoName: "r", InstallationID: 9, Number: 7, IsPR: true,
		TriggerKind: session.KindComment, CommentID: commentID, DeliveryID: "d-" + id, RequesterLogin: "alice",
		RequesterID: 5, RequesterType: "User", Instructions: "fix it",
	}
}

func acceptance(delivery string, commentID int64, sessionID string) store.Acceptance {
	return store.Acceptance{
		DeliveryID: delivery, Event: "issue_comment", At: t0, CommentID: commentID,
		Session: newSession(sessionID, commentID),
		Work:    []store.NewWork{{Kind: store.PrepareSession}},
	}
}

func TestAcceptDeduplicates(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		res, err := s.Accept(ctx, acceptance("d1", 100, "s1"))
		if err != nil || res != store.Accepted {
			t.Fatalf("first: %v %v", res, err)
		}
		res, err = s.Accept(ctx, acceptance("d1", 100, "s1-again"))
		if err != nil || res != store.DuplicateDelivery {
			t.Fatalf("same delivery: %v %v", res, err)
		}
		res, err = s.Accept(ctx, acceptance("d2", 100, "s2"))
		if err != nil || res != store.DuplicateComment {
			t.Fatalf("same comment, new delivery: %v %v", res, err)
		}
		if seen, err := s.DeliverySeen(ctx, "d2"); err != nil || !seen {
			t.Errorf("second delivery should still be recorded: %v %v", seen, err)
		}
		n, err := s.CountSessions(ctx)
		if err != nil || n != 1 {
			t.Errorf("sessions = %d (%v), want 1", n, err)
		}
		counts, err := s.WorkCounts(ctx)
		if err != nil || counts["pending"] != 1 {
			t.Errorf("work = %v (%v), want one pending", counts, err)
		}
	})
}

func TestAcceptConcurrentCopiesMakeOne(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const copies = 24
		var wg sync.WaitGroup
		results := make([]store.AcceptResult, copies)
		errs := make([]error, copies)
		for i := range copies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Half are redeliveries of one id, half new ids for the same comment.
				delivery := "same"
				if i%2 == 1 {
					delivery = fmt.Sprintf("other-%d", i)
				}
				results[i], errs[i] = s.Accept(ctx, acceptance(delivery, 555, fmt.Sprintf("s%d", i)))
			}()
		}
		wg.Wait()
		accepted := 0
		for i := range copies {
			if errs[i] != nil {
				t.Fatalf("copy %d: %v", i, errs[i])
			}
			if results[i] == store.Accepted {
				accepted++
			}
		}
		if accepted != 1 {
			t.Errorf("accepted %d copies, want exactly 1", accepted)
		}
		if n, _ := s.CountSessions(ctx); n != 1 {
			t.Errorf("sessions = %d, want 1", n)
		}
	})
}

func TestGroupCommitKeepsEachResult(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const n = 64
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.Accept(ctx, acceptance(fmt.Sprintf("d%d", i), int64(1000+i), fmt.Sprintf("s%d", i)))
				if err == nil && res != store.Accepted {
					err = fmt.Errorf("delivery %d: %v", i, res)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if got, _ := s.CountSessions(ctx); got != n {
			t.Errorf("sessions = %d, want %d", got, n)
		}
	})
}

func TestOneBadAcceptanceDoesNotFailItsBatch(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("first", 1, "taken")); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var badErr error
		goodErrs := make([]error, 8)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A session id that already exists is a genuine error.
			_, badErr = s.Accept(ctx, acceptance("bad", 2, "taken"))
		}()
		for i := range goodErrs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, goodErrs[i] = s.Accept(ctx, acceptance(fmt.Sprintf("good%d", i), int64(10+i), fmt.Sprintf("g%d", i)))
			}()
		}
		wg.Wait()
		if badErr == nil {
			t.Error("the duplicate session id should fail")
		}
		for i, err := range goodErrs {
			if err != nil {
				t.Errorf("good %d failed with its batch: %v", i, err)
			}
		}
		if seen, _ := s.DeliverySeen(ctx, "bad"); seen {
			t.Error("the failed acceptance must leave nothing behind")
		}
	})
}

func TestLeaseTakeoverExactlyOnce(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d", 1, "s")); err != nil {
			t.Fatal(err)
		}
		lease := time.Minute
		dead, err := s.Claim(ctx, "worker-a", t0, lease)
		if err != nil || dead == nil {
			t.Fatalf("claim: %v %v", dead, err)
		}
		if w, err := s.Claim(ctx, "worker-b", t0.Add(59*time.Second), lease); err != nil || w != nil {
			t.Fatalf("a held lease must not be claimable: %v %v", w, err)
		}
		// worker-a dies. Once its lease expires, exactly one of two racers takes over.
		after := t0.Add(lease + time.Millisecond)
		var wg sync.WaitGroup
		got := make([]*store.Work, 2)
		for i, owner := range []string{"worker-b", "worker-c"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := s.Claim(ctx, owner, after, lease)
				if err != nil {
					t.Error(err)
				}
				got[i] = w
			}()
		}
		wg.Wait()
		var taker *store.Work
		for _, w := range got {
			if w != nil {
				if taker != nil {
					t.Fatal("two workers took over the same work")
				}
				taker = w
			}
		}
		if taker == nil || taker.ID != dead.ID || taker.Attempts != 2 {
			t.Fatalf("takeover = %+v, want work %d on attempt 2", taker, dead.ID)
		}
		// The dead worker wakes up: its lease is fenced off.
		if err := s.Complete(ctx, dead, after); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("stale complete = %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, taker, after); err != nil {
			t.Errorf("complete: %v", err)
		}
		if w, err := s.Claim(ctx, "worker-d", after.Add(time.Hour), lease); err != nil || w != nil {
			t.Errorf("completed work claimed again: %v %v", w, err)
		}
	})
}

func TestRetryWaitsUntilRunAfter(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d", 1, "s")); err != nil {
			t.Fatal(err)
		}
		w, _ := s.Claim(ctx, "a", t0, time.Minute)
		if err := s.Retry(ctx, w, t0, t0.Add(10*time.Second), "github 502"); err != nil {
			t.Fatal(err)
		}
		if next, err := s.NextRunAfter(ctx); err != nil || !next.Equal(t0.Add(10*time.Second)) {
			t.Errorf("next = %v (%v)", next, err)
		}
		if w2, _ := s.Claim(ctx, "a", t0.Add(9*time.Second), time.Minute); w2 != nil {
			t.Error("claimed before run_after")
		}
		if w2, _ := s.Claim(ctx, "a", t0.Add(10*time.Second), time.Minute); w2 == nil || w2.Attempts != 2 {
			t.Errorf("retry claim = %+v", w2)
		}
	})
}

func TestDoneIsFinal(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d", 1, "s")); err != nil {
			t.Fatal(err)
		}
		_, err := s.MutateSession(ctx, "s", t0, func(x *store.Session) error { return x.End("", "", "") })
		if err == nil {
			t.Fatal("done without an outcome must fail")
		}
		sess, err := s.MutateSession(ctx, "s", t0, func(x *store.Session) error {
			return x.End(session.Refused, "insufficient_permission", "")
		})
		if err != nil || sess.Outcome != session.Refused {
			t.Fatalf("%+v %v", sess, err)
		}
		_, err = s.MutateSession(ctx, "s", t0, func(x *store.Session) error { *x = store.Fixture(session.Preparing, *x); return nil })
		if !errors.Is(err, session.ErrLeftDone) {
			t.Errorf("leaving done = %v", err)
		}
		_, err = s.MutateSession(ctx, "s", t0, func(x *store.Session) error { x.Outcome = session.Changed; return nil })
		if !errors.Is(err, session.ErrLeftDone) {
			t.Errorf("changing the outcome = %v", err)
		}
		if _, err := s.GetSession(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing session = %v", err)
		}
	})
}

func TestRepoConfigCache(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, found, err := s.CachedRepoConfig(ctx, 1, t0); err != nil || found {
			t.Fatalf("empty cache: %v %v", found, err)
		}
		entries := []store.RepoConfigEntry{
			{RepoID: 1, FullName: "acme/web", Status: store.ConfigFile, Source: "acme/web@main", Content: "enabled: false\n", FetchedAt: t0},
			{RepoID: 2, FullName: "acme/api", Status: store.ConfigDefaults, FetchedAt: t0},
			{RepoID: 3, FullName: "acme/cli", Status: store.ConfigFile, Source: "acme/.github@main", FetchedAt: t0},
			{RepoID: 4, FullName: "other/x", Status: store.ConfigDefaults, FetchedAt: t0},
		}
		for _, e := range entries {
			if err := s.PutRepoConfig(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		got, found, err := s.CachedRepoConfig(ctx, 1, t0)
		if err != nil || !found || got.Content != "enabled: false\n" || !got.FetchedAt.Equal(t0) {
			t.Fatalf("got %+v %v %v", got, found, err)
		}
		// Replacing keeps one row.
		entries[0].Content = "enabled: true\n"
		if err := s.PutRepoConfig(ctx, entries[0]); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := s.CachedRepoConfig(ctx, 1, t0); got.Content != "enabled: true\n" {
			t.Errorf("not replaced: %q", got.Content)
		}
		if err := s.ForgetOwnerDefaults(ctx, "ACME"); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[int64]bool{1: true, 2: false, 3: false, 4: true} {
			if _, found, _ := s.CachedRepoConfig(ctx, id, t0); found != want {
				t.Errorf("repo %d cached = %v, want %v", id, found, want)
			}
		}
	})
}

func TestConfigMemoSeesOtherReplicasWithinTTL(t *testing.T) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, driver)
			a, err := store.Open(ctx, driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := store.Open(ctx, driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, found, _ := a.CachedRepoConfig(ctx, 1, t0); found {
				t.Fatal("empty cache")
			}
			// Replica b refreshes the config; a's own writes would drop its
			// memo at once, b's are seen once the memo expires.
			if err := b.PutRepoConfig(ctx, store.RepoConfigEntry{RepoID: 1, FullName: "o/r", Status: store.ConfigFile, Content: "enabled: false\n", FetchedAt: t0}); err != nil {
				t.Fatal(err)
			}
			if _, found, _ := b.CachedRepoConfig(ctx, 1, t0); !found {
				t.Error("the writing replica must see its own write at once")
			}
			if _, found, _ := a.CachedRepoConfig(ctx, 1, t0.Add(store.ConfigMemoTTL-time.Millisecond)); found {
				t.Error("within the TTL the memo answers (this is what saves the read)")
			}
			if e, found, _ := a.CachedRepoConfig(ctx, 1, t0.Add(store.ConfigMemoTTL)); !found || e.Content != "enabled: false\n" {
				t.Errorf("after the TTL the other replica's write must be seen: %+v %v", e, found)
			}
		})
	}
}

func TestRepoConfigOlderFetchNeverOverwritesNewer(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		newer := store.RepoConfigEntry{RepoID: 9, FullName: "my_org/web", Status: store.ConfigFile, Content: "enabled: true\n", FetchedAt: t0.Add(time.Minute)}
		older := store.RepoConfigEntry{RepoID: 9, FullName: "my_org/web", Status: store.ConfigFile, Content: "enabled: false\n", FetchedAt: t0}
		if err := s.PutRepoConfig(ctx, newer); err != nil {
			t.Fatal(err)
		}
		if err := s.PutRepoConfig(ctx, older); err != nil {
			t.Fatal(err)
		}
		if e, _, _ := s.CachedRepoConfig(ctx, 9, t0); e.Content != "enabled: true\n" {
			t.Errorf("a fetch that started earlier overwrote a newer one: %q", e.Content)
		}
		// Owners with underscores (Enterprise Managed Users) are matched
		// literally, and "_" is no wildcard.
		if err := s.PutRepoConfig(ctx, store.RepoConfigEntry{RepoID: 10, FullName: "myXorg/api", Status: store.ConfigDefaults, FetchedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutRepoConfig(ctx, store.RepoConfigEntry{RepoID: 11, FullName: "my_org/api", Status: store.ConfigDefaults, FetchedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.ForgetOwnerDefaults(ctx, "my_org"); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[int64]bool{9: true, 10: true, 11: false} {
			if _, found, _ := s.CachedRepoConfig(ctx, id, t0.Add(time.Hour)); found != want {
				t.Errorf("repo %d cached = %v, want %v", id, found, want)
			}
		}
	})
}

func TestReleaseDoesNotCountTheAttempt(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d", 1, "s")); err != nil {
			t.Fatal(err)
		}
		w, _ := s.Claim(ctx, "shutting-down", t0, time.Minute)
		if err := s.Release(ctx, w, t0); err != nil {
			t.Fatal(err)
		}
		again, err := s.Claim(ctx, "next", t0, time.Minute)
		if err != nil || again == nil || again.Attempts != 1 {
			t.Fatalf("released work = %+v (%v), want claimable at once on attempt 1", again, err)
		}
	})
}

func TestAttemptClaimIsSingleUseAndTokensAreChecked(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		acc := acceptance("d", 1, "s")
		if _, err := s.Accept(ctx, acc); err != nil {
			t.Fatal(err)
		}
		for _, step := range []session.Transition{session.Admit, session.Dispatch} {
			if _, err := s.MutateSession(ctx, "s", t0, func(x *store.Session) error { return x.Move(step) }); err != nil {
				t.Fatal(err)
			}
		}
		a := store.Attempt{ID: "a1", SessionID: "s", Deadline: t0.Add(time.Hour)}
		if err := s.CreateAttempt(ctx, a, "claim-code-0123456789", t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimAttempt(ctx, "a1", "wrong-code-0123456789", "tok", t0); !errors.Is(err, store.ErrClaimRefused) {
			t.Errorf("wrong code: %v", err)
		}
		if _, err := s.ClaimAttempt(ctx, "a1", "claim-code-0123456789", "token-abcdefghijklmnop", t0); err != nil {
			t.Fatalf("claim: %v", err)
		}
		if _, err := s.ClaimAttempt(ctx, "a1", "claim-code-0123456789", "token-2", t0); !errors.Is(err, store.ErrClaimRefused) {
			t.Errorf("second claim: %v", err)
		}
		if _, err := s.AuthenticateAttempt(ctx, "a1", "token-abcdefghijklmnop"); err != nil {
			t.Errorf("token: %v", err)
		}
		if _, err := s.AuthenticateAttempt(ctx, "a1", "token-2"); !errors.Is(err, store.ErrBadToken) {
			t.Errorf("wrong token: %v", err)
		}
		first, err := s.RecordResult(ctx, "a1", `{"x":1}`, nil, t0)
		if err != nil || !first {
			t.Fatalf("result: %v %v", first, err)
		}
		if again, err := s.RecordResult(ctx, "a1", `{"x":2}`, nil, t0); err != nil || again {
			t.Errorf("a second upload must change nothing: %v %v", again, err)
		}
		sess, _ := s.GetSession(ctx, "s")
		if sess.State() != session.Reporting || sess.AttemptID != "a1" {
			t.Errorf("session = %s attempt %q", sess.State(), sess.AttemptID)
		}
		got, _ := s.GetAttempt(ctx, "a1")
		if got.Result != `{"x":1}` || got.State != store.AttemptEnded {
			t.Errorf("attempt = %+v", got)
		}
	})
}

// Attempts are found again by session and number (a Buildkite build's
// meta-data), and an executor's state is recorded only when it changes.
func TestAttemptsByNumberAndExternalState(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d", 1, "s")); err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"a1", "a2"} {
			a := store.Attempt{ID: id, SessionID: "s", Number: i + 1, Deadline: t0.Add(time.Hour)}
			if err := s.CreateAttempt(ctx, a, "claim-code-0123456789-"+id, t0); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.AttemptByNumber(ctx, "s", 2)
		if err != nil || got.ID != "a2" || got.Number != 2 {
			t.Fatalf("attempt 2 = %+v (%v)", got, err)
		}
		if _, err := s.AttemptByNumber(ctx, "s", 3); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("attempt 3: %v", err)
		}
		if _, err := s.AttemptByNumber(ctx, "other", 1); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another session's: %v", err)
		}
		for i, c := range []struct {
			state   string
			changed bool
		}{{"running", true}, {"running", false}, {"passed", true}} {
			changed, err := s.SetAttemptExternalState(ctx, "a2", c.state, t0)
			if err != nil || changed != c.changed {
				t.Errorf("step %d (%s): changed = %v (%v), want %v", i, c.state, changed, err, c.changed)
			}
		}
		if a, _ := s.GetAttempt(ctx, "a2"); a.ExternalState != "passed" {
			t.Errorf("external state = %q", a.ExternalState)
		}
		if a, _ := s.GetAttempt(ctx, "a1"); a.ExternalState != "" || a.Number != 1 {
			t.Errorf("attempt 1 = %+v", a)
		}
	})
}

// A repo that wants snapshots is due at once, gets one build at a time,
// then waits for its refresh interval, or a push brings it forward.
func TestSnapshotScheduleOneBuildPerRepo(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.WantSnapshots(ctx, 7, "acme/widgets", 1, t0); err != nil {
			t.Fatal(err)
		}
		schedule := func(at time.Time) int {
			n, err := s.ScheduleSnapshotBuilds(ctx, at, 30*time.Minute, 20*time.Minute, 10)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := schedule(t0); n != 1 {
			t.Fatalf("first schedule queued %d, want 1", n)
		}
		w, err := s.Claim(ctx, "w", t0, time.Minute)
		if err != nil || w == nil || w.Kind != store.BuildSnapshot || w.Payload != "7" {
			t.Fatalf("work = %+v (%v)", w, err)
		}
		// A push while it builds: brought forward, but not started twice.
		if err := s.SnapshotSoon(ctx, 7, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if n := schedule(t0.Add(2 * time.Minute)); n != 0 {
			t.Fatalf("queued %d while building", n)
		}
		if err := s.FinishSnapshotBuild(ctx, 7, store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("a", 64)}, t0.Add(3*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if n := schedule(t0.Add(3 * time.Minute)); n != 1 {
			t.Fatalf("the push's build was not queued after the first ended: %d", n)
		}
		if err := s.FinishSnapshotBuild(ctx, 7, store.SnapshotOutcome{Error: "setup failed"}, t0.Add(4*time.Minute)); err != nil {
			t.Fatal(err)
		}
		r, err := s.GetSnapshotRepo(ctx, 7)
		if err != nil || r.LastError != "setup failed" || r.LastDigest != "sha256:"+strings.Repeat("a", 64) || !r.BuildingUntil.IsZero() {
			t.Fatalf("repo = %+v (%v)", r, err)
		}
		if n := schedule(t0.Add(10 * time.Minute)); n != 0 {
			t.Fatalf("queued %d before the refresh interval", n)
		}
		if n := schedule(t0.Add(34 * time.Minute)); n != 1 {
			t.Fatalf("refresh: queued %d", n)
		}
		// Two repos due, one build at a time across the fleet: one is
		// queued now, the other when the first finishes.
		if err := s.WantSnapshots(ctx, 8, "acme/gadgets", 1, t0); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(70 * time.Minute)
		if n, err := s.ScheduleSnapshotBuilds(ctx, at, 30*time.Minute, 20*time.Minute, 1); err != nil || n != 1 {
			t.Fatalf("queued %d (%v), want 1 of 2", n, err)
		}
		if err := s.StartSnapshotBuild(ctx, 7, at.Add(time.Hour), at); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.ScheduleSnapshotBuilds(ctx, at.Add(30*time.Minute), 30*time.Minute, 20*time.Minute, 1); n != 0 {
			t.Fatalf("queued %d while one builds (started late, lease moved on)", n)
		}
		if err := s.ForgetSnapshots(ctx, 7); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetSnapshotRepo(ctx, 7); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("forgotten repo: %v", err)
		}
	})
}

// What the snapshots page shows is recorded with each build: a snapshot's
// commit, branch, size and layers stay until the next snapshot; a failure
// replaces the error, the log and the end time only; and over the channel
// only the attempt now building is recorded, once.
func TestSnapshotBuildRecordsFootprintAndLog(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.WantSnapshots(ctx, 7, "acme/widgets", 1, t0); err != nil {
			t.Fatal(err)
		}
		digest, sha := "sha256:"+strings.Repeat("a", 64), strings.Repeat("b", 40)
		okLog := "--- deps: go mod download exited 0 after 2s\n<script>alert(1)</script>\nünïcode ✓\n"
		ok := store.SnapshotOutcome{Digest: digest, SHA: sha, Branch: "main", Size: 3 << 30, Layers: 5, Log: okLog}
		if err := s.FinishSnapshotBuild(ctx, 7, ok, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		r, err := s.GetSnapshotRepo(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		if r.LastDigest != digest || r.LastSHA != sha || r.LastBranch != "main" || r.LastSize != 3<<30 || r.LastLayers != 5 ||
			r.LastLog != okLog || r.LastError != "" || !r.LastBuiltAt.Equal(t0.Add(time.Minute)) || !r.LastFinishedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("after a build: %+v", r)
		}
		failLog := "--- deps: go mod download exited 1 after 1s\nno network\n"
		if err := s.FinishSnapshotBuild(ctx, 7, store.SnapshotOutcome{Error: "setup failed", Log: failLog}, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		r, err = s.GetSnapshotRepo(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		if r.LastDigest != digest || r.LastSHA != sha || r.LastSize != 3<<30 || r.LastLayers != 5 || !r.LastBuiltAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("a failure changed the newest snapshot: %+v", r)
		}
		if r.LastError != "setup failed" || r.LastLog != failLog || !r.LastFinishedAt.Equal(t0.Add(time.Hour)) {
			t.Errorf("the failure was not recorded: error %q log %q finished %s", r.LastError, r.LastLog, r.LastFinishedAt)
		}

		// Over the channel: the attempt that builds the repo now.
		for _, id := range []string{"old-build", "new-build"} {
			a := store.Attempt{ID: id, Kind: "snapshot", RepoID: 7, Deadline: t0.Add(3 * time.Hour), Spec: "{}"}
			if err := s.CreateAttempt(ctx, a, "claim-"+id+"-0123456789", t0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ClaimAttempt(ctx, id, "claim-"+id+"-0123456789", "token-"+id+"-0123456789", t0); err != nil {
				t.Fatal(err)
			}
			if err := s.SetSnapshotAttempt(ctx, 7, id, t0); err != nil {
				t.Fatal(err)
			}
		}
		late := store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("c", 64), SHA: strings.Repeat("c", 40), Branch: "main", Size: 1, Layers: 1, Log: "late"}
		if first, err := s.RecordSnapshotResult(ctx, "old-build", "{}", late, t0.Add(2*time.Hour)); err != nil || !first {
			t.Fatalf("old build's result: first %v, %v", first, err)
		}
		if r, _ := s.GetSnapshotRepo(ctx, 7); r.LastDigest != digest || r.LastLog != failLog {
			t.Errorf("an older attempt's result was recorded on the schedule: %+v", r)
		}
		now := store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("d", 64), SHA: strings.Repeat("d", 40), Branch: "trunk", Size: 1536, Layers: 4, Log: "--- deps: true exited 0 after 0s\n"}
		if first, err := s.RecordSnapshotResult(ctx, "new-build", "{}", now, t0.Add(2*time.Hour)); err != nil || !first {
			t.Fatalf("current build's result: first %v, %v", first, err)
		}
		again := now
		again.Log = "changed"
		if first, err := s.RecordSnapshotResult(ctx, "new-build", "{}", again, t0.Add(3*time.Hour)); err != nil || first {
			t.Fatalf("a repeated result: first %v, %v", first, err)
		}
		r, err = s.GetSnapshotRepo(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		if r.LastDigest != now.Digest || r.LastSHA != now.SHA || r.LastBranch != "trunk" || r.LastSize != 1536 || r.LastLayers != 4 ||
			r.LastLog != now.Log || r.LastError != "" || !r.LastFinishedAt.Equal(t0.Add(2*time.Hour)) || r.BuildingAttempt != "" {
			t.Errorf("after the channel's result: %+v", r)
		}
		// The list the page reads carries the same.
		list, err := s.SnapshotRepos(ctx, []int64{7})
		if err != nil || len(list) != 1 || list[0] != r {
			t.Errorf("SnapshotRepos = %+v (%v), want %+v", list, err, r)
		}
	})
}

// Replicas that start together on a fresh database must not race on the
// schema (PostgreSQL takes turns under an advisory lock).
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := storetest.DSN(t, "postgres")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.Open(context.Background(), "postgres", dsn)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}
