package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
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
