package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
	"github.com/inspecthq/inspect/session"
)

// A user's sealed tokens are kept and replaced; a sign-in is found until
// it expires; forgetting the user ends every sign-in of theirs.
func TestWebUsersAndLogins(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := store.WebUser{UserID: 5, Login: "alice", TokenSealed: "t1", RefreshSealed: "r1",
			ExpiresAt: t0.Add(8 * time.Hour), RefreshExpiresAt: t0.Add(180 * 24 * time.Hour), UpdatedAt: t0}
		if err := s.PutWebUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		u.TokenSealed, u.ExpiresAt = "t2", t0.Add(9*time.Hour)
		if err := s.PutWebUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetWebUser(ctx, 5)
		if err != nil || got.TokenSealed != "t2" || !got.ExpiresAt.Equal(t0.Add(9*time.Hour)) || got.Login != "alice" {
			t.Fatalf("user = %+v, %v", got, err)
		}
		for _, l := range []store.WebLogin{
			{IDHash: "h1", UserID: 5, CSRF: "c1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
			{IDHash: "h2", UserID: 5, CSRF: "c2", CreatedAt: t0, ExpiresAt: t0.Add(2 * time.Hour)},
		} {
			if err := s.CreateWebLogin(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		if l, err := s.GetWebLogin(ctx, "h1", t0.Add(time.Minute)); err != nil || l.CSRF != "c1" || l.UserID != 5 {
			t.Errorf("login h1 = %+v, %v", l, err)
		}
		if _, err := s.GetWebLogin(ctx, "h1", t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an expired login: %v, want ErrNotFound", err)
		}
		if err := s.ForgetWebUser(ctx, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetWebLogin(ctx, "h2", t0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a forgotten user's login: %v", err)
		}
		if _, err := s.GetWebUser(ctx, 5); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a forgotten user: %v", err)
		}
	})
}

// The sessions list: only the readable repositories, narrowed by each
// filter, newest first, in pages that neither repeat nor skip.
func TestListSessionsFiltersAndPages(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for i := range 7 {
			sess := newSession(fmt.Sprintf("s%d", i), int64(100+i))
			sess.RepoID = int64(1 + i%2) // s0, s2, s4, s6 in repo 1
			if i == 4 {
				sess.RequesterLogin = "bob"
			}
			a := store.Acceptance{DeliveryID: fmt.Sprint("d", i), Event: "issue_comment", At: t0.Add(time.Duration(i) * time.Minute),
				CommentID: int64(100 + i), Session: sess}
			if _, err := s.Accept(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(list []store.Session) (out []string) {
			for _, x := range list {
				out = append(out, x.ID)
			}
			return out
		}
		page1, err := s.ListSessions(ctx, store.SessionFilter{RepoIDs: []int64{1}}, 3)
		if err != nil || fmt.Sprint(ids(page1)) != "[s6 s4 s2]" {
			t.Fatalf("page 1 = %v, %v", ids(page1), err)
		}
		page2, err := s.ListSessions(ctx, store.SessionFilter{RepoIDs: []int64{1}, Before: &page1[2]}, 3)
		if err != nil || fmt.Sprint(ids(page2)) != "[s0]" {
			t.Errorf("page 2 = %v, %v", ids(page2), err)
		}
		if got, _ := s.ListSessions(ctx, store.SessionFilter{RepoIDs: []int64{1, 2}, Requester: "bob"}, 10); fmt.Sprint(ids(got)) != "[s4]" {
			t.Errorf("bob's = %v", ids(got))
		}
		if got, _ := s.ListSessions(ctx, store.SessionFilter{RepoIDs: []int64{1}, RepoID: 2}, 10); len(got) != 0 {
			t.Errorf("a repo filter outside the readable ones = %v", ids(got))
		}
		if got, _ := s.ListSessions(ctx, store.SessionFilter{RepoIDs: []int64{1, 2}, State: session.Queued, Trigger: "comment"}, 10); len(got) != 7 {
			t.Errorf("queued comments = %v", ids(got))
		}
		if got, _ := s.ListSessions(ctx, store.SessionFilter{RepoIDs: []int64{1, 2}, Outcome: session.Changed}, 10); len(got) != 0 {
			t.Errorf("changed = %v", ids(got))
		}
		if got, _ := s.ListSessions(ctx, store.SessionFilter{}, 10); len(got) != 0 {
			t.Errorf("no readable repos = %v", ids(got))
		}
	})
}

// A refresh is claimed by one caller at a time, across store handles
// (replicas) on one database: the claim's holder writes its refresh over
// the version it read, a loser reads the new version, an expired claim
// can be taken over, and a user is forgotten for a refused refresh only
// while their tokens are still the refused version.
func TestWebUserRefreshIsClaimedOnceAcrossReplicas(t *testing.T) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := storetest.DSN(t, driver)
			var replicas [2]*store.Store
			for i := range replicas {
				s, err := store.Open(ctx, driver, dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() }) // a close error after the test has no reader
				replicas[i] = s
			}
			a, b := replicas[0], replicas[1]
			if err := a.PutWebUser(ctx, store.WebUser{UserID: 5, Login: "alice", TokenSealed: "t1", RefreshSealed: "r1",
				ExpiresAt: t0, RefreshExpiresAt: t0.Add(time.Hour), UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			u, err := b.GetWebUser(ctx, 5)
			if err != nil || u.Version != 1 {
				t.Fatalf("user = %+v, %v; want version 1", u, err)
			}
			if ok, err := a.ClaimWebUserRefresh(ctx, 5, 1, t0, time.Minute); !ok || err != nil {
				t.Fatalf("first claim: %v %v", ok, err)
			}
			if ok, err := b.ClaimWebUserRefresh(ctx, 5, 1, t0.Add(time.Second), time.Minute); ok || err != nil {
				t.Fatalf("a second claim while the first holds: %v %v", ok, err)
			}
			refreshed := store.WebUser{UserID: 5, TokenSealed: "t2", RefreshSealed: "r2", ExpiresAt: t0.Add(8 * time.Hour), UpdatedAt: t0}
			if ok, err := a.RefreshedWebUser(ctx, refreshed, 1); !ok || err != nil {
				t.Fatalf("writing the refresh: %v %v", ok, err)
			}
			if ok, err := b.RefreshedWebUser(ctx, refreshed, 1); ok || err != nil {
				t.Fatalf("a second write over version 1: %v %v", ok, err)
			}
			u, err = b.GetWebUser(ctx, 5)
			if err != nil || u.Version != 2 || u.TokenSealed != "t2" || !u.RefreshClaimedUntil.IsZero() || u.Login != "alice" {
				t.Fatalf("after the refresh: %+v, %v", u, err)
			}
			if ok, err := b.ForgetWebUserVersion(ctx, 5, 1); ok || err != nil {
				t.Fatalf("forgetting over a refused version 1 once version 2 is stored: %v %v", ok, err)
			}
			// A claim that outlived its lease (its replica died) is taken over.
			if ok, err := a.ClaimWebUserRefresh(ctx, 5, 2, t0, time.Minute); !ok || err != nil {
				t.Fatalf("claim of version 2: %v %v", ok, err)
			}
			if ok, err := b.ClaimWebUserRefresh(ctx, 5, 2, t0.Add(time.Minute), time.Minute); !ok || err != nil {
				t.Fatalf("taking over an expired claim: %v %v", ok, err)
			}
			if err := b.ReleaseWebUserRefresh(ctx, 5, 2); err != nil {
				t.Fatal(err)
			}
			if ok, err := a.ClaimWebUserRefresh(ctx, 5, 2, t0.Add(time.Minute), time.Minute); !ok || err != nil {
				t.Fatalf("claim after a release: %v %v", ok, err)
			}
			if err := a.CreateWebLogin(ctx, store.WebLogin{IDHash: "h", UserID: 5, CSRF: "c", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if ok, err := b.ForgetWebUserVersion(ctx, 5, 2); !ok || err != nil {
				t.Fatalf("forgetting version 2: %v %v", ok, err)
			}
			if _, err := a.GetWebLogin(ctx, "h", t0); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a forgotten user's sign-in: %v", err)
			}
		})
	}
}
