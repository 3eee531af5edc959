package readtoken

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// fakeGitHub mints numbered tokens and records which are revoked, each
// presented as itself.
type fakeGitHub struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	n       int
	expires time.Time
	asked   []string // "installation/repo" per mint
	revoked []string // "installation:token" per revocation
}

func newFakeGitHub(t *testing.T, expires time.Time) *fakeGitHub {
	f := &fakeGitHub{t: t, expires: expires}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		var opts github.InstallationTokenOptions
		if err := json.NewDecoder(r.Body).Decode(&opts); err != nil {
			t.Errorf("decoding the mint's options: %v", err)
		}
		if opts.Permissions == nil || opts.Permissions.GetContents() != "read" {
			t.Errorf("minted with permissions %+v, want contents: read alone", opts.Permissions)
		}
		f.mu.Lock()
		f.n++
		tok := fmt.Sprintf("ghs_%d", f.n)
		f.asked = append(f.asked, fmt.Sprintf("%s/%v", r.PathValue("id"), opts.RepositoryIDs))
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_at": f.expires.Format(time.RFC3339)}) // the client reads it
	})
	mux.HandleFunc("DELETE /installation/token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.revoked = append(f.revoked, r.Header.Get("X-Installation")+":"+r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// headers adds fixed headers to each request.
type headers struct{ set map[string]string }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (f *fakeGitHub) client(set map[string]string) *github.Client {
	c := github.NewClient(&http.Client{Transport: headers{set: set}})
	u, err := url.Parse(f.srv.URL + "/")
	if err != nil {
		f.t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

func (f *fakeGitHub) App(context.Context) (*github.Client, error) {
	return f.client(map[string]string{"Authorization": "app-jwt"}), nil
}

func (f *fakeGitHub) WithToken(_ context.Context, installationID int64, token string) (*github.Client, error) {
	return f.client(map[string]string{"Authorization": token, "X-Installation": fmt.Sprint(installationID)}), nil
}

func TestReadTokensMintedForAnAttemptAreRevokedOnceWithThemselves(t *testing.T) {
	ctx := context.Background()
	gh := newFakeGitHub(t, time.Now().Add(time.Hour))
	tokens := New(gh)

	first, expires, err := tokens.MintFor(ctx, "att-1", 100, 7)
	if err != nil || first != "ghs_1" || expires.IsZero() {
		t.Fatalf("MintFor = %q, %v, %v; want ghs_1 with its expiry", first, expires, err)
	}
	if _, _, err := tokens.MintFor(ctx, "att-1", 200, 8); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tokens.MintFor(ctx, "att-2", 100, 7); err != nil {
		t.Fatal(err)
	}
	if want := []string{"100/[7]", "200/[8]", "100/[7]"}; !slices.Equal(gh.asked, want) {
		t.Errorf("minted for %v, want %v", gh.asked, want)
	}

	tokens.RevokeAttempt(ctx, "att-1")
	if want := []string{"100:ghs_1", "200:ghs_2"}; !slices.Equal(gh.revoked, want) {
		t.Fatalf("revoked %v, want att-1's two tokens, each with itself", gh.revoked)
	}
	tokens.RevokeAttempt(ctx, "att-1")
	if len(gh.revoked) != 2 {
		t.Errorf("revoking att-1 again revoked %v; its tokens were already taken", gh.revoked[2:])
	}
	tokens.RevokeAttempt(ctx, "att-2")
	if want := []string{"100:ghs_1", "200:ghs_2", "100:ghs_3"}; !slices.Equal(gh.revoked, want) {
		t.Errorf("revoked %v, want %v", gh.revoked, want)
	}
}

func TestRevokeLeavesAnExpiredTokenAlone(t *testing.T) {
	ctx := context.Background()
	gh := newFakeGitHub(t, time.Now().Add(-time.Minute))
	tokens := New(gh)
	tok, expires, err := tokens.Mint(ctx, 100, 7)
	if err != nil {
		t.Fatal(err)
	}
	tokens.Revoke(ctx, 100, tok, expires)
	if len(gh.revoked) != 0 {
		t.Errorf("revoked %v; an expired token is as good as revoked", gh.revoked)
	}
	tokens.Revoke(ctx, 100, tok, time.Time{})
	if want := []string{"100:ghs_1"}; !slices.Equal(gh.revoked, want) {
		t.Errorf("revoked %v, want %v (no expiry known: revoke)", gh.revoked, want)
	}
}
