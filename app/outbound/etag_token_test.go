package outbound

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v62/github"
)

// tokenTransport adds its token below the limiter, as ghinstallation's
// installation transport does, and says which it will add (Token).
type tokenTransport struct {
	token string
	next  http.RoundTripper
}

func (t *tokenTransport) Token(context.Context) (string, error) { return t.token, nil }

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "token "+t.token)
	return t.next.RoundTrip(r)
}

// GitHub's ETags are the token's: a response's ETag is a hash of what it
// says and of the Authorization it answered, and only that ETag earns a
// 304. Two tokens of one installation asking in turn (an hourly rotation
// overlapping, a minted token beside the installation's) each keep their
// own 304s, whether the token is set above the limiter (go-github's
// WithAuthToken) or below it (the installation transport); and the cache
// holds a hash of each token, never the token.
func TestETagsAreKeptPerToken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(c *counter, l *Limiter, token string) *github.Client
	}{
		{"token above the limiter", func(c *counter, l *Limiter, token string) *github.Client {
			return github.NewClient(&http.Client{Transport: l.Transport(9, nil)}).WithAuthToken(token)
		}},
		{"token below the limiter", func(c *counter, l *Limiter, token string) *github.Client {
			return github.NewClient(&http.Client{Transport: l.Transport(9, &tokenTransport{token: token, next: c.Client().Transport})})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var statuses []int
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				const body = `{"number": 7, "title": "same"}`
				sum := sha256.Sum256([]byte(r.Header.Get("Authorization") + body))
				etag := `"` + hex.EncodeToString(sum[:8]) + `"`
				code := http.StatusOK
				if r.Header.Get("If-None-Match") == etag {
					code = http.StatusNotModified
				}
				mu.Lock()
				statuses = append(statuses, code)
				mu.Unlock()
				w.Header().Set("ETag", etag)
				if code == http.StatusNotModified {
					w.WriteHeader(code)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, body)
			})
			l := srv.limiter(Config{ETagCacheEntries: 8})
			base, err := url.Parse(srv.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			tokens := []string{"ghs_first0123456789", "ghs_second012345678"}
			for range 2 {
				for _, token := range tokens {
					gh := tc.client(srv, l, token)
					gh.BaseURL = base
					if issue, _, err := gh.Issues.Get(ctx, "o", "r", 7); err != nil || issue.GetTitle() != "same" {
						t.Fatalf("GET as %s: %v, %v", token[:10], issue.GetTitle(), err)
					}
				}
			}
			mu.Lock()
			got := fmt.Sprint(statuses)
			mu.Unlock()
			if want := fmt.Sprint([]int{200, 200, 304, 304}); got != want {
				t.Errorf("GitHub answered %s, want %s: each token revalidates its own ETag", got, want)
			}
			l.cache.mu.Lock()
			defer l.cache.mu.Unlock()
			for k := range l.cache.byKey {
				for _, token := range tokens {
					if strings.Contains(fmt.Sprintf("%+v", k), token) {
						t.Errorf("a cache key holds the token: %+v", k)
					}
				}
			}
		})
	}
}
