package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
)

// userID is the stand-in's alice, whom signIn signs in.
const userID = 5000

// isRefresh tells a token request that spends a refresh token.
func isRefresh(body []byte) bool { return strings.Contains(string(body), "grant_type=refresh_token") }

// Two replicas asked for one user's expired token at once: one refresh
// reaches GitHub (which retires the old pair when it is used), the other
// replica waits for its tokens, and the user stays signed in with one
// token that works. Replica A's refresh is held at GitHub until replica
// B has either waited for it or refreshed on its own, so the race is the
// same every run.
func TestReplicasRefreshAUsersTokenOnce(t *testing.T) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			w := newWorldOn(t, driver, func(o *Options) { o.RefreshPoll = time.Millisecond })
			w.signIn(t)
			a, b := w.web, w.replica(t)
			w.clock.Advance(9 * time.Hour)
			arrived, release := w.gh.HoldNextWith(http.MethodPost, "/login/oauth/access_token", isRefresh)
			defer release()
			bWaits := make(chan struct{})
			b.testHookWaitingForRefresh = func() { close(bWaits) }

			type answer struct {
				token string
				ok    bool
				err   error
			}
			ask := func(s *Server) <-chan answer {
				out := make(chan answer, 1)
				go func() {
					token, ok, err := s.UserToken(context.Background(), userID)
					out <- answer{token, ok, err}
				}()
				return out
			}
			fromA := ask(a)
			<-arrived // A's refresh is at GitHub
			fromB := ask(b)
			var gotB answer
			bDone := false
			select {
			case <-bWaits:
			case gotB = <-fromB: // B did not wait: it spent the refresh token itself
				bDone = true
			}
			release()
			gotA := <-fromA
			if !bDone {
				gotB = <-fromB
			}
			for name, got := range map[string]answer{"A": gotA, "B": gotB} {
				if !got.ok || got.err != nil || got.token == "" {
					t.Errorf("replica %s: ok %v, err %v: the user lost their sign-in", name, got.ok, got.err)
				}
			}
			if gotA.token != gotB.token {
				t.Errorf("the replicas hold different tokens")
			}
			if n := w.gh.RefreshGrants(); n != 1 {
				t.Errorf("%d refreshes reached GitHub, want 1", n)
			}
			if _, err := w.st.GetWebUser(context.Background(), userID); err != nil {
				t.Errorf("the user after the refresh: %v", err)
			}
			if me, err := a.gh.me(context.Background(), gotB.token); err != nil || me.GetLogin() != "alice" {
				t.Errorf("the refreshed token at GitHub: %v, %v", me.GetLogin(), err)
			}
		})
	}
}

// failingTokenEndpoint fails the token endpoint's requests while fail is
// set, as a network that never reaches GitHub does.
type failingTokenEndpoint struct {
	fail atomic.Bool
}

func (f *failingTokenEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.fail.Load() && strings.HasSuffix(r.URL.Path, "/login/oauth/access_token") {
		if r.Body != nil {
			_ = r.Body.Close() // nothing is sent
		}
		return nil, errors.New("connection reset by peer")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A refresh that GitHub does not answer, or answers 5xx, keeps the user:
// the request fails, the tokens stay as they were, and the next request
// refreshes them.
func TestARefreshGitHubDoesNotAnswerKeepsTheUser(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(w *world, net *failingTokenEndpoint)
	}{
		{"502", func(w *world, _ *failingTokenEndpoint) {
			w.gh.FailNext(http.MethodPost, "/login/oauth/access_token", http.StatusBadGateway)
		}},
		{"transport", func(_ *world, net *failingTokenEndpoint) { net.fail.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := &failingTokenEndpoint{}
			w := newWorldWith(t, func(o *Options) { o.HTTP = &http.Client{Transport: net} })
			w.signIn(t)
			ctx := context.Background()
			before, err := w.st.GetWebUser(ctx, userID)
			if err != nil {
				t.Fatal(err)
			}
			w.clock.Advance(9 * time.Hour)
			tc.breakIt(w, net)
			if _, ok, err := w.web.UserToken(ctx, userID); ok || err == nil {
				t.Errorf("a refresh that failed: ok %v, err %v; want an error", ok, err)
			}
			after, err := w.st.GetWebUser(ctx, userID)
			if err != nil || after.Version != before.Version || !after.RefreshClaimedUntil.IsZero() {
				t.Fatalf("the user after a failed refresh: %+v, %v; want their tokens kept and unclaimed", after, err)
			}
			net.fail.Store(false)
			if code, body := w.get(t, "/sessions/visible-1"); code != 200 || !strings.Contains(body, "do it") {
				t.Fatalf("the next page: %d", code)
			}
			if n := w.gh.RefreshGrants(); n != 1 {
				t.Errorf("%d refreshes, want the next page's one", n)
			}
		})
	}
}

// GitHub refusing the refresh token itself (the user revoked the App's
// authorization) signs the user out: they are forgotten, with every
// sign-in of theirs.
func TestARefusedRefreshSignsTheUserOut(t *testing.T) {
	w := newWorld(t)
	w.signIn(t)
	w.gh.RevokeUserAuthorization("alice")
	w.clock.Advance(9 * time.Hour)
	ctx := context.Background()
	if _, ok, err := w.web.UserToken(ctx, userID); ok || err != nil {
		t.Fatalf("a refused refresh: ok %v, err %v; want signed out", ok, err)
	}
	if _, err := w.st.GetWebUser(ctx, userID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the user after a refused refresh: %v", err)
	}
}

// An App whose user tokens never expire (GitHub's grant has no
// expires_in and no refresh token) keeps its users signed in past eight
// hours, without a refresh.
func TestTokensThatNeverExpireAreKept(t *testing.T) {
	w := newWorld(t)
	w.gh.SetUserTokensExpire(false)
	w.signIn(t)
	w.clock.Advance(9 * time.Hour) // within the sign-in's day
	if code, body := w.get(t, "/sessions/visible-1"); code != 200 || !strings.Contains(body, "do it") {
		t.Fatalf("the session page nine hours later: %d\n%s", code, body)
	}
	if n := len(w.gh.RequestsMatching(http.MethodPost, "/login/oauth/access_token")); n != 1 {
		t.Errorf("%d token requests, want the sign-in's one", n)
	}
	if _, err := w.st.GetWebUser(context.Background(), userID); err != nil {
		t.Errorf("the user nine hours later: %v", err)
	}
}
