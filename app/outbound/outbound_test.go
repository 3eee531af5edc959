package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/fakeclock"
	"github.com/inspecthq/inspect/internal/storetest"
	"github.com/inspecthq/inspect/runner/retryafter"
)

// t0 is on a whole second, as X-RateLimit-Reset is.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fakeTime is a clock whose sleeps advance it at once, recording them.
type fakeTime struct {
	*fakeclock.Clock
	mu    sync.Mutex
	slept []time.Duration
}

func newFakeTime() *fakeTime { return &fakeTime{Clock: fakeclock.New(t0)} }

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	f.slept = append(f.slept, d)
	f.mu.Unlock()
	f.Advance(d)
	return nil
}

func (f *fakeTime) sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.slept...)
}

// counter is a test server that counts the requests it answers.
type counter struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD path"
}

func newServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *counter {
	c := &counter{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.seen = append(c.seen, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *counter) limiter(cfg Config) *Limiter { return New(cfg, c.Client().Transport) }

// client is a go-github client for one installation through l, as the app
// builds them; each call makes a fresh one, so go-github's own memory of
// rate limits (per client) never hides what the limiter does.
func (c *counter) client(t *testing.T, l *Limiter, inst int64) *github.Client {
	t.Helper()
	gh := github.NewClient(&http.Client{Transport: l.Transport(inst, nil)})
	u, err := url.Parse(c.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	gh.BaseURL = u
	return gh
}

func ok(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id": 1}`)
}

func comment(ctx context.Context, gh *github.Client, owner string) error {
	_, _, err := gh.Issues.CreateComment(ctx, owner, "r", 1, &github.IssueComment{Body: github.String("hi")})
	return err
}

// getConcurrently sends callers GETs of issues at once through hc, each
// reading its body whole; the WaitGroup is done when all have.
func getConcurrently(t *testing.T, hc *http.Client, base string, callers int) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := hc.Get(fmt.Sprintf("%s/repos/o/r/issues/%d", base, i))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}()
	}
	return &wg
}

// No more than MaxConcurrent requests are in flight at once, however many
// callers there are; the place is held until the body is read.
func TestConcurrencyCapHolds(t *testing.T) {
	const limit, callers = 4, 40
	var inFlight, peak atomic.Int32
	arrived := make(chan struct{}, callers)
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		arrived <- struct{}{}
		<-release
		inFlight.Add(-1)
		ok(w, r)
	})
	l := srv.limiter(Config{MaxConcurrent: limit})
	hc := &http.Client{Transport: l.Transport(9, nil)}
	wg := getConcurrently(t, hc, srv.URL, callers)
	for range limit {
		<-arrived
	}
	// Every place is taken, and the other callers wait for one.
	if got := l.sem.inUse(); got != limit {
		t.Fatalf("%d places taken with %d requests at the server", got, limit)
	}
	close(release)
	wg.Wait()
	if p := peak.Load(); p != limit {
		t.Fatalf("peak in flight %d, want %d", p, limit)
	}
	if srv.count() != callers {
		t.Fatalf("server saw %d requests, want %d", srv.count(), callers)
	}
	if got := l.sem.inUse(); got != 0 {
		t.Fatalf("%d places still taken after every body was read", got)
	}
}

// Writes beyond the window's budget fail fast with go-github's secondary
// limit error (through go-github's client, which hands transport errors
// back in a *url.Error), without reaching GitHub; reads are not counted.
func TestCreatesLimitedPerWindow(t *testing.T) {
	ctx := context.Background()
	srv := newServer(t, ok)
	clock := newFakeTime()
	l := srv.limiter(Config{Slots: NewMemorySlots([]Window{{Limit: 3, Window: time.Minute}}), Clock: clock.Now, Sleep: clock.Sleep})
	for i := range 3 {
		if err := comment(ctx, srv.client(t, l, 9), "o"); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	clock.Advance(20 * time.Second)
	err := comment(ctx, srv.client(t, l, 9), "o")
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) {
		t.Fatalf("4th write: %T %v, want *github.AbuseRateLimitError", err, err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("go-github no longer wraps transport errors in *url.Error: %T", err)
	}
	if d := abuse.GetRetryAfter(); d != 40*time.Second {
		t.Fatalf("RetryAfter %v, want 40s (the first write ages out at 1m)", d)
	}
	if abuse.Response.Header.Get(HeaderLimiter) == "" || abuse.Response.Request == nil {
		t.Fatalf("synthetic response lacks its marker or request: %+v", abuse.Response)
	}
	if srv.count() != 3 {
		t.Fatalf("server saw %d requests, want 3", srv.count())
	}
	// Reads still go, and another installation has its own budget.
	if _, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1); err != nil {
		t.Fatal(err)
	}
	if err := comment(ctx, srv.client(t, l, 10), "o"); err != nil {
		t.Fatal(err)
	}
	// Once the first write ages out there is room again.
	clock.Advance(40 * time.Second)
	if err := comment(ctx, srv.client(t, l, 9), "o"); err != nil {
		t.Fatal(err)
	}
	if len(clock.sleeps()) != 0 {
		t.Fatalf("slept %v with MaxWait 0", clock.sleeps())
	}
}

// Within MaxWait a write waits for its slot instead of failing.
func TestCreatesWaitWithinMaxWait(t *testing.T) {
	ctx := context.Background()
	srv := newServer(t, ok)
	clock := newFakeTime()
	l := srv.limiter(Config{Slots: NewMemorySlots([]Window{{Limit: 2, Window: time.Minute}}), MaxWait: time.Minute, Clock: clock.Now, Sleep: clock.Sleep})
	for range 2 {
		if err := comment(ctx, srv.client(t, l, 9), "o"); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(15 * time.Second)
	if err := comment(ctx, srv.client(t, l, 9), "o"); err != nil {
		t.Fatalf("write within MaxWait: %v", err)
	}
	if got := clock.sleeps(); len(got) != 1 || got[0] != 45*time.Second {
		t.Fatalf("slept %v, want one 45s wait", got)
	}
	if srv.count() != 3 {
		t.Fatalf("server saw %d requests, want 3", srv.count())
	}
}

// With the store as the budget, two replicas (two limiters) share one
// installation's windows.
func TestCreatesSharedThroughTheStore(t *testing.T) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := storetest.Open(t, driver)
			windows := []store.RateLimit{{Limit: 3, Window: time.Minute}, {Limit: 4, Window: time.Hour}}
			slots := SlotsFunc(func(ctx context.Context, key string, clock func() time.Time) (time.Duration, error) {
				return st.TakeRateSlot(ctx, key, clock, windows)
			})
			srv := newServer(t, ok)
			clock := newFakeTime()
			replicas := []*Limiter{
				srv.limiter(Config{Slots: slots, Clock: clock.Now, Sleep: clock.Sleep}),
				srv.limiter(Config{Slots: slots, Clock: clock.Now, Sleep: clock.Sleep}),
			}
			for i := range 3 {
				if err := comment(ctx, srv.client(t, replicas[i%2], 9), "o"); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			var abuse *github.AbuseRateLimitError
			if err := comment(ctx, srv.client(t, replicas[1], 9), "o"); !errors.As(err, &abuse) || abuse.GetRetryAfter() != time.Minute {
				t.Fatalf("4th write across replicas: %v, want a secondary limit with RetryAfter 1m", err)
			}
			clock.Advance(time.Minute)
			if err := comment(ctx, srv.client(t, replicas[0], 9), "o"); err != nil {
				t.Fatal(err)
			}
			// The hour's budget (4) is spent now, whatever the minute says.
			clock.Advance(time.Minute)
			if err := comment(ctx, srv.client(t, replicas[1], 9), "o"); !errors.As(err, &abuse) || abuse.GetRetryAfter() != 58*time.Minute {
				t.Fatalf("5th write in the hour: %v, want RetryAfter 58m", err)
			}
			if srv.count() != 4 {
				t.Fatalf("server saw %d writes, want 4", srv.count())
			}
		})
	}
}

// gateSlots grants a slot only when the test says so, so the test sees
// the order writes are served in.
type gateSlots struct {
	calls chan struct{}
	grant chan time.Duration
}

func (g *gateSlots) Take(ctx context.Context, _ string, _ func() time.Time) (time.Duration, error) {
	select {
	case g.calls <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case d := <-g.grant:
		return d, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// A repository with many writes queued does not starve another: the turn
// to ask for a slot goes round-robin between repositories.
func TestWritesShareFairlyBetweenRepos(t *testing.T) {
	ctx := context.Background()
	arrived := make(chan string, 32)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		ok(w, r)
	})
	gate := &gateSlots{calls: make(chan struct{}), grant: make(chan time.Duration)}
	l := srv.limiter(Config{Slots: gate})
	queued := make(chan struct{}, 32)
	l.testHookQueued = func() { queued <- struct{}{} }
	var wg sync.WaitGroup
	write := func(owner string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := comment(ctx, srv.client(t, l, 9), owner); err != nil {
				t.Error(err)
			}
		}()
	}
	write("a") // takes the turn and asks
	<-gate.calls
	for range 19 {
		write("a")
	}
	for range 19 {
		<-queued
	}
	write("b")
	write("b")
	<-queued
	<-queued
	var order []string
	gate.grant <- 0
	order = append(order, <-arrived)
	for range 21 {
		<-gate.calls
		gate.grant <- 0
		order = append(order, <-arrived)
	}
	wg.Wait()
	var bAt []int
	for i, p := range order {
		if p == "/repos/b/r/issues/1/comments" {
			bAt = append(bAt, i)
		}
	}
	// a's first write held the turn before b queued; then a and b alternate.
	if len(bAt) != 2 || bAt[0] != 2 || bAt[1] != 4 {
		t.Fatalf("b's writes served at %v of %d, want [2 4]: %v", bAt, len(order), order)
	}
}

// A 403 with Retry-After holds the installation on this replica: the next
// request fails fast (or waits, within MaxWait) and GitHub does not see it.
func TestRetryAfterHonoured(t *testing.T) {
	ctx := context.Background()
	var limited atomic.Bool
	limited.Store(true)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if limited.CompareAndSwap(true, false) {
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"message": "You have exceeded a secondary rate limit.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`)
			return
		}
		ok(w, r)
	})
	clock := newFakeTime()
	l := srv.limiter(Config{Clock: clock.Now, Sleep: clock.Sleep})
	// GitHub's own answer comes back as is: go-github makes its error.
	_, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1)
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.Response.Header.Get(HeaderLimiter) != "" {
		t.Fatalf("first request: %v, want GitHub's own secondary limit", err)
	}
	clock.Advance(10 * time.Second)
	_, _, err = srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1)
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 50*time.Second || abuse.Response.Header.Get(HeaderLimiter) == "" {
		t.Fatalf("second request: %v, want the limiter's secondary limit with RetryAfter 50s", err)
	}
	if srv.count() != 1 {
		t.Fatalf("server saw %d requests during the hold, want 1", srv.count())
	}
	// Another installation is not held.
	if _, _, err := srv.client(t, l, 10).Issues.Get(ctx, "o", "r", 1); err != nil {
		t.Fatal(err)
	}
	// A limiter that may wait a minute waits out the rest, then sends.
	waiting := srv.limiter(Config{Clock: clock.Now, Sleep: clock.Sleep, MaxWait: time.Minute})
	limited.Store(true)
	if _, _, err := srv.client(t, waiting, 9).Issues.Get(ctx, "o", "r", 1); !errors.As(err, &abuse) {
		t.Fatalf("setting up the hold: %v", err)
	}
	before := srv.count()
	if _, _, err := srv.client(t, waiting, 9).Issues.Get(ctx, "o", "r", 1); err != nil {
		t.Fatalf("within MaxWait: %v", err)
	}
	if got := clock.sleeps(); len(got) != 1 || got[0] != time.Minute {
		t.Fatalf("slept %v, want one 1m wait", got)
	}
	if srv.count() != before+1 {
		t.Fatalf("server saw %d requests after the wait, want %d", srv.count(), before+1)
	}
}

// Requests waiting for an in-flight place when GitHub says stop do not go
// out once a place frees: the hold is checked again with the place held.
func TestHoldStopsRequestsWaitingForAPlace(t *testing.T) {
	ctx := context.Background()
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/repos/o/r/issues/1" {
			arrived <- struct{}{}
			<-release
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		ok(w, r)
	})
	clock := newFakeTime()
	l := srv.limiter(Config{MaxConcurrent: 1, Clock: clock.Now, Sleep: clock.Sleep})
	full := make(chan struct{}, 1)
	l.testHookFull = func() { full <- struct{}{} }
	first := make(chan error, 1)
	go func() {
		_, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1)
		first <- err
	}()
	second := make(chan error, 1)
	<-arrived // the first holds the only place
	go func() {
		_, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 2)
		second <- err
	}()
	<-full
	close(release)
	var er *github.ErrorResponse // go-github's type for a 429
	if err := <-first; !errors.As(err, &er) || er.Response.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("first: %v, want GitHub's 429", err)
	}
	var abuse *github.AbuseRateLimitError
	if err := <-second; !errors.As(err, &abuse) || abuse.Response.Header.Get(HeaderLimiter) == "" {
		t.Fatalf("second: %v, want the limiter's hold", err)
	}
	if srv.count() != 1 {
		t.Fatalf("server saw %d requests, want 1", srv.count())
	}
}

// X-RateLimit-Remaining 0 holds the installation's requests for that
// resource until X-RateLimit-Reset, failing them with go-github's primary
// limit error; other resources still go.
func TestRateLimitResetHonoured(t *testing.T) {
	ctx := context.Background()
	reset := t0.Add(2 * time.Minute)
	var spent atomic.Bool
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		if r.URL.Path == "/search/issues" {
			w.Header().Set("X-RateLimit-Resource", "search")
			w.Header().Set("X-RateLimit-Remaining", "29")
			_, _ = io.WriteString(w, `{"total_count": 0}`)
			return
		}
		w.Header().Set("X-RateLimit-Resource", "core")
		if spent.CompareAndSwap(false, true) {
			w.Header().Set("X-RateLimit-Remaining", "0") // this one was the last
		} else {
			w.Header().Set("X-RateLimit-Remaining", "4999")
		}
		ok(w, r)
	})
	clock := newFakeTime()
	l := srv.limiter(Config{Clock: clock.Now, Sleep: clock.Sleep})
	if _, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1); err != nil {
		t.Fatal(err)
	}
	_, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1)
	var rate *github.RateLimitError
	if !errors.As(err, &rate) || !rate.Rate.Reset.Time.Equal(reset) || rate.Rate.Limit != 5000 {
		t.Fatalf("during the hold: %v, want *github.RateLimitError resetting at %v", err, reset)
	}
	if err.Error() == "" || rate.Response.Header.Get(HeaderLimiter) != "primary" {
		t.Fatalf("synthetic response: %+v", rate.Response)
	}
	if srv.count() != 1 {
		t.Fatalf("server saw %d requests, want 1", srv.count())
	}
	if _, _, err := srv.client(t, l, 9).Search.Issues(ctx, "is:open", nil); err != nil {
		t.Fatalf("search has its own budget: %v", err)
	}
	clock.Advance(2 * time.Minute)
	if _, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
}

// A 429 naming no time holds for a minute; a 403 for a missing
// permission holds nothing.
func TestSecondaryWithoutTimeAndPlainForbidden(t *testing.T) {
	ctx := context.Background()
	status := atomic.Int32{}
	var secondary atomic.Bool
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if s := int(status.Swap(0)); s != 0 {
			w.WriteHeader(s)
			if secondary.Load() {
				_, _ = io.WriteString(w, `{"message": "You have exceeded a secondary rate limit.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`)
				return
			}
			_, _ = io.WriteString(w, `{"message": "Resource not accessible by integration"}`)
			return
		}
		ok(w, r)
	})
	clock := newFakeTime()
	l := srv.limiter(Config{Clock: clock.Now, Sleep: clock.Sleep})
	status.Store(http.StatusForbidden)
	if _, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1); err == nil {
		t.Fatal("the 403 came back as success")
	}
	if _, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1); err != nil {
		t.Fatalf("a permission 403 held the installation: %v", err)
	}
	status.Store(http.StatusTooManyRequests)
	_, _, _ = srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1)
	_, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1)
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != time.Minute {
		t.Fatalf("after a bare 429: %v, want a 1m hold", err)
	}
	if srv.count() != 3 {
		t.Fatalf("server saw %d requests, want 3", srv.count())
	}
	// A 403 that says it is a secondary limit, naming no time, holds too.
	clock.Advance(time.Minute)
	secondary.Store(true)
	status.Store(http.StatusForbidden)
	if _, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1); !errors.As(err, &abuse) || abuse.Response.Header.Get(HeaderLimiter) != "" {
		t.Fatalf("GitHub's secondary 403: %v", err)
	}
	clock.Advance(30 * time.Second)
	_, _, err = srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1)
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 30*time.Second || abuse.Response.Header.Get(HeaderLimiter) == "" {
		t.Fatalf("after a bare secondary 403: %v, want the rest of a 1m hold", err)
	}
	if srv.count() != 4 {
		t.Fatalf("server saw %d requests, want 4", srv.count())
	}
}

// A GET is revalidated with its ETag; GitHub's 304 is answered from the
// cache with the body, fresh rate-limit headers and X-Inspect-Cache.
func TestETagRevalidation(t *testing.T) {
	ctx := context.Background()
	var statuses []int
	var mu sync.Mutex
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusOK
		switch {
		case r.Method != http.MethodGet:
		case r.Header.Get("If-None-Match") == `"v1"`:
			code = http.StatusNotModified
		default:
			w.Header().Set("ETag", `"v1"`)
		}
		mu.Lock()
		statuses = append(statuses, code)
		remaining := 5000 - len(statuses)
		mu.Unlock()
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		w.Header().Set("X-RateLimit-Limit", "5000")
		if code == http.StatusNotModified {
			w.WriteHeader(code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"number": 7, "title": "cached"}`)
	})
	l := srv.limiter(Config{ETagCacheEntries: 8})
	gh := srv.client(t, l, 9)
	first, _, err := gh.Issues.Get(ctx, "o", "r", 7)
	if err != nil {
		t.Fatal(err)
	}
	second, resp, err := gh.Issues.Get(ctx, "o", "r", 7)
	if err != nil {
		t.Fatal(err)
	}
	if second.GetTitle() != "cached" || first.GetTitle() != "cached" {
		t.Fatalf("bodies: %q then %q", first.GetTitle(), second.GetTitle())
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderCache) != "hit" {
		t.Fatalf("revalidated response: %d, %s=%q", resp.StatusCode, HeaderCache, resp.Header.Get(HeaderCache))
	}
	if resp.Rate.Remaining != 4998 {
		t.Fatalf("rate remaining %d, want the 304's 4998", resp.Rate.Remaining)
	}
	// Another installation does not share the entry.
	if _, resp, err := srv.client(t, l, 10).Issues.Get(ctx, "o", "r", 7); err != nil || resp.Header.Get(HeaderCache) != "" {
		t.Fatalf("installation 10: %v, cache %q", err, resp.Header.Get(HeaderCache))
	}
	// A write to the path drops the entry.
	if _, _, err := gh.Issues.Edit(ctx, "o", "r", 7, &github.IssueRequest{Title: github.String("x")}); err != nil {
		t.Fatal(err)
	}
	if _, resp, err := gh.Issues.Get(ctx, "o", "r", 7); err != nil || resp.Header.Get(HeaderCache) != "" {
		t.Fatalf("after a write: %v, cache %q", err, resp.Header.Get(HeaderCache))
	}
	mu.Lock()
	defer mu.Unlock()
	want := []int{200, 304, 200, 200, 200}
	if fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Fatalf("server answered %v, want %v", statuses, want)
	}
}

// The cache keeps at most its entries, least recently used out first.
func TestETagCacheBounds(t *testing.T) {
	c := newETagCache(2, 10)
	put := func(u string, n int) {
		c.put(&cacheEntry{key: cacheKey{inst: 1, url: u}, path: pathKey{1, u}, body: make([]byte, n)})
	}
	put("a", 1)
	put("b", 1)
	c.get(cacheKey{inst: 1, url: "a"})
	put("c", 1)
	if c.get(cacheKey{inst: 1, url: "b"}) != nil || c.get(cacheKey{inst: 1, url: "a"}) == nil {
		t.Fatal("evicted the wrong entry")
	}
	put("d", 10) // over the byte bound with a and d together
	if c.ll.Len() != 1 || c.bytes != 10 {
		t.Fatalf("%d entries, %d bytes after a large put", c.ll.Len(), c.bytes)
	}
	c.dropPath(1, "d")
	if c.ll.Len() != 0 || c.bytes != 0 || len(c.byPath) != 0 || len(c.byKey) != 0 {
		t.Fatalf("dropPath left %d entries", c.ll.Len())
	}
}

// A request cancelled while it waits (for a slot, for its turn, for an
// in-flight place) returns at once with the context's error, and sends
// nothing.
func TestCancelledWhileWaiting(t *testing.T) {
	srv := newServer(t, ok)
	sleeping := make(chan struct{}, 1)
	blockingSleep := func(ctx context.Context, d time.Duration) error {
		sleeping <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	l := srv.limiter(Config{Slots: NewMemorySlots([]Window{{Limit: 1, Window: time.Hour}}), MaxWait: 2 * time.Hour, Sleep: blockingSleep, MaxConcurrent: 1})
	queued := make(chan struct{}, 1)
	l.testHookQueued = func() { queued <- struct{}{} }
	if err := comment(context.Background(), srv.client(t, l, 9), "o"); err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, f func(ctx context.Context) error) chan error {
		done := make(chan error, 1)
		go func() { done <- f(ctx) }()
		return done
	}
	// Waiting for a slot (holding the turn).
	ctx1, cancel1 := context.WithCancel(context.Background())
	slotWait := run(ctx1, func(ctx context.Context) error { return comment(ctx, srv.client(t, l, 9), "o") })
	<-sleeping
	// Waiting for the turn behind it.
	ctx2, cancel2 := context.WithCancel(context.Background())
	turnWait := run(ctx2, func(ctx context.Context) error { return comment(ctx, srv.client(t, l, 9), "p") })
	<-queued
	cancel2()
	if err := <-turnWait; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting for the turn: %v, want context.Canceled", err)
	}
	cancel1()
	if err := <-slotWait; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting for a slot: %v, want context.Canceled", err)
	}
	// Waiting for an in-flight place: hold the only one with an unread body.
	hc := &http.Client{Transport: l.Transport(9, nil)}
	held, err := hc.Get(srv.URL + "/repos/o/r")
	if err != nil {
		t.Fatal(err)
	}
	ctx3, cancel3 := context.WithCancel(context.Background())
	placeWait := run(ctx3, func(ctx context.Context) error {
		_, _, err := srv.client(t, l, 9).Issues.Get(ctx, "o", "r", 1)
		return err
	})
	cancel3()
	if err := <-placeWait; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting for a place: %v, want context.Canceled", err)
	}
	_ = held.Body.Close()
	if srv.count() != 2 {
		t.Fatalf("server saw %d requests, want 2 (the first write and the held GET)", srv.count())
	}
	// Nothing is left queued or held.
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.insts) != 0 || l.sem.inUse() != 0 {
		t.Fatalf("left behind: %d installations, %d places", len(l.insts), l.sem.inUse())
	}
}

// The default sleep ends with its context.
func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := retryafter.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep: %v", err)
	}
	if err := retryafter.Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Fatal(err)
	}
}

func TestRepoOf(t *testing.T) {
	for path, want := range map[string]string{
		"/repos/Owner/Repo/issues/1/comments":        "owner/repo",
		"/api/v3/repos/o/r/pulls":                    "o/r",
		"/repos/o/r":                                 "o/r",
		"/repos/o":                                   "",
		"/app/installations/1/access_tokens":         "",
		"/api/v3x/repos/o/r":                         "",
		"/repositories/123/issues":                   "",
		"/api/v3/repos/o/r/check-runs/1/annotations": "o/r",
	} {
		if got := repoOf(path); got != want {
			t.Errorf("repoOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestMemorySlots(t *testing.T) {
	ctx := context.Background()
	s := NewMemorySlots([]Window{{Limit: 2, Window: time.Minute}, {Limit: 3, Window: time.Hour}, {Limit: 0, Window: time.Second}})
	for i, c := range []struct {
		at   time.Duration
		wait time.Duration
	}{{0, 0}, {time.Second, 0}, {2 * time.Second, 58 * time.Second}, {time.Minute, 0}, {2 * time.Minute, 58 * time.Minute}, {time.Hour, 0}} {
		wait, err := s.Take(ctx, "k", func() time.Time { return t0.Add(c.at) })
		if err != nil || wait != c.wait {
			t.Fatalf("take %d at %v: wait %v (%v), want %v", i, c.at, wait, err, c.wait)
		}
	}
}

func TestTokenMintsAreNotContentCreating(t *testing.T) {
	for p, want := range map[string]bool{
		"/app/installations/7/access_tokens":        true,
		"/api/v3/app/installations/7/access_tokens": true,
		"/app/installations/7":                      false,
		"/repos/o/r/issues/1/comments":              false,
		"/app/installations//access_tokens":         false,
		"/app/installations/7/access_tokens/evil":   false,
	} {
		if got := isTokenMint(p); got != want {
			t.Errorf("isTokenMint(%q) = %v, want %v", p, got, want)
		}
	}
}

// Writes with a user's token have that user's budget: not the
// installation's of the same number, nor another user's.
func TestUserWritesHaveABudgetOfTheirOwn(t *testing.T) {
	ctx := context.Background()
	srv := newServer(t, ok)
	clock := newFakeTime()
	l := srv.limiter(Config{Slots: NewMemorySlots([]Window{{Limit: 1, Window: time.Minute}}), Clock: clock.Now, Sleep: clock.Sleep})
	asUser := func(id int64) *github.Client {
		gh := github.NewClient(&http.Client{Transport: l.UserTransport(id, nil)})
		u, err := url.Parse(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		gh.BaseURL = u
		return gh
	}
	if err := comment(ctx, asUser(9), "o"); err != nil {
		t.Fatalf("user 9's first write: %v", err)
	}
	var abuse *github.AbuseRateLimitError
	if err := comment(ctx, asUser(9), "o"); !errors.As(err, &abuse) {
		t.Fatalf("user 9's second write in the window: %v, want held", err)
	}
	if err := comment(ctx, srv.client(t, l, 9), "o"); err != nil {
		t.Fatalf("installation 9's write: %v (a user's budget is not its)", err)
	}
	if err := comment(ctx, asUser(10), "o"); err != nil {
		t.Fatalf("user 10's write: %v", err)
	}
}
