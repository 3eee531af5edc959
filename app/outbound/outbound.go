// Package outbound keeps the app's REST requests to GitHub inside
// GitHub's documented limits, as an http.RoundTripper around each
// installation's authenticated transport:
//
//   - at most MaxConcurrent requests in flight per replica, a share
//     that SetMaxConcurrent changes as replicas come and go;
//   - content-creating requests (POST, PATCH, PUT, DELETE) take a slot
//     from a budget of sliding windows per installation (shared across
//     replicas when Slots is store-backed), served round-robin by
//     repository so one busy repository cannot starve the others;
//   - after GitHub says stop (Retry-After, or X-RateLimit-Remaining: 0 with
//     X-RateLimit-Reset), the installation's requests wait or fail fast on
//     this replica instead of reaching GitHub again;
//   - GETs are revalidated with the ETag GitHub sent, since a 304 does not
//     count against the primary limit; ETags are the token's, so the
//     cache is keyed by a hash of the token as well as the installation.
//
// A request that would wait longer than MaxWait fails at once with the
// go-github rate-limit error GitHub itself would have caused, so callers
// (the worker's ghclient.ClassifyError) postpone the work until the reset instead
// of holding a worker. The package starts no goroutines.
package outbound

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/runner/retryafter"
)

// Slots is the budget for content-creating requests. Take records one
// request for key at clock's time and returns 0, or records nothing and
// returns how long until there is room. It reads clock once it is the
// key's turn (behind a shared budget's lock), so the event is stamped as
// late as the request that follows it.
type Slots interface {
	Take(ctx context.Context, key string, clock func() time.Time) (time.Duration, error)
}

// SlotsFunc adapts a function to Slots, e.g. a store-backed budget.
type SlotsFunc func(ctx context.Context, key string, clock func() time.Time) (time.Duration, error)

// Take calls f.
func (f SlotsFunc) Take(ctx context.Context, key string, clock func() time.Time) (time.Duration, error) {
	return f(ctx, key, clock)
}

// Config is a limiter's settings; zero values turn a part off.
type Config struct {
	// MaxConcurrent caps requests in flight from this replica (0: no cap).
	MaxConcurrent int
	// ETagCacheEntries bounds the conditional-request cache (0: off).
	ETagCacheEntries int
	// MaxWait is the longest a request waits in line for a slot or a
	// block to lift; past it, the request fails with a rate-limit error.
	MaxWait time.Duration
	// Slots is the write budget (it carries its own windows); nil: writes
	// are not limited. The app's is the store's, shared by the replicas.
	Slots Slots
	// Clock is the time (nil: time.Now).
	Clock func() time.Time
	// Sleep waits d or until ctx is done (nil: a timer). Tests pass one
	// that advances a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger reports blocks GitHub asked for (zero value: silent).
	Logger zerolog.Logger
}

// Limiter is one replica's discipline, shared by all its installations'
// clients. It is safe for concurrent use.
type Limiter struct {
	cfg   Config
	base  http.RoundTripper
	slots Slots
	sem   *places    // nil: no concurrency cap
	cache *etagCache // nil: no conditional requests

	mu    sync.Mutex
	insts map[int64]*installation

	// testHookQueued, when set, is called after a write joins a queue to
	// wait for its turn, so tests can line requests up without sleeping.
	testHookQueued func()
	// testHookFull, when set, is called when a request finds every
	// in-flight place taken and waits for one.
	testHookFull func()
}

// New builds a limiter. base is the transport that carries requests to
// GitHub: Transport uses it when given no next, and Base hands it out so
// token minting can bypass the limiter.
func New(cfg Config, base http.RoundTripper) *Limiter {
	if base == nil {
		base = http.DefaultTransport
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = retryafter.Sleep
	}
	l := &Limiter{cfg: cfg, base: base, slots: cfg.Slots, insts: map[int64]*installation{}}
	if cfg.MaxConcurrent > 0 {
		l.sem = newPlaces(cfg.MaxConcurrent)
	}
	if cfg.ETagCacheEntries > 0 {
		l.cache = newETagCache(cfg.ETagCacheEntries, maxCacheBytes)
	}
	return l
}

// Base is the transport under the limiter (never nil).
func (l *Limiter) Base() http.RoundTripper {
	if l == nil {
		return http.DefaultTransport
	}
	return l.base
}

// slotKey is the Slots key of an installation's writes; installation 0 is
// the App itself (its JWT-authenticated requests).
func slotKey(installationID int64) string {
	if installationID == 0 {
		return "app"
	}
	return "installation:" + strconv.FormatInt(installationID, 10)
}

// UserTransport is Transport for the requests made with a user's access
// token (a session's PR opened as its requester): GitHub counts those per
// user, so they have a budget of their own, "user:ID" in the store, and
// in-process state apart from every installation's (kept under the negated
// user id, which no installation has).
func (l *Limiter) UserTransport(userID int64, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = l.Base()
	}
	if l == nil {
		return next
	}
	return &transport{l: l, id: -userID, key: "user:" + strconv.FormatInt(userID, 10), next: next}
}

// Transport disciplines one installation's requests, sending them through
// next (the installation-token transport; nil: Base). A nil limiter
// returns next unchanged.
func (l *Limiter) Transport(installationID int64, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = l.Base()
	}
	if l == nil {
		return next
	}
	return &transport{l: l, id: installationID, key: slotKey(installationID), next: next}
}

type transport struct {
	l    *Limiter
	id   int64
	key  string
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	l := t.l
	ctx := req.Context()
	// The wait budget runs from arrival, so time queued for a turn counts
	// as waiting too.
	deadline := l.cfg.Clock().Add(l.cfg.MaxWait)
	resource := resourceOf(req)
	write := isWrite(req.Method) && !isTokenMint(req.URL.Path)
	st := l.acquire(t.id)
	defer l.release(t.id, st)

	fail := func(err error) (*http.Response, error) {
		// A RoundTripper must close the body even when it sends nothing.
		if req.Body != nil {
			_ = req.Body.Close() // nothing was sent; the refusal is what matters
		}
		return nil, err
	}
	if write && l.slots != nil {
		// A held installation's writes take no slot: it would be spent on
		// nothing if the hold outlasts MaxWait.
		if err := l.awaitUnblocked(ctx, t, st, req, resource, deadline); err != nil {
			return fail(err)
		}
		if err := l.takeSlot(ctx, t, st, req, deadline); err != nil {
			return fail(err)
		}
	}
	// Slots first, then the in-flight cap: a write waiting for its slot
	// must not hold a place that reads could use.
	for {
		// (Again for writes: a response seen while this one waited for its
		// slot may have asked us to stop.)
		if err := l.awaitUnblocked(ctx, t, st, req, resource, deadline); err != nil {
			return fail(err)
		}
		if err := l.acquireInFlight(ctx); err != nil {
			return fail(err)
		}
		// Checked again with the place held: when GitHub says stop, the
		// requests queued for places must not all go out regardless.
		if !l.held(st, resource) {
			break
		}
		l.releaseInFlight()
	}

	out := req
	var cached *cacheEntry
	var key cacheKey
	cacheable := false
	if l.cache != nil {
		switch {
		case write:
			// Not needed for correctness (a cached body is only used on
			// the server's 304), but the entry is likely stale now.
			l.cache.dropPath(t.id, req.URL.Path)
		case req.Method == http.MethodGet && !conditional(req):
			var token string
			if token, cacheable = tokenIdentity(req, t.next); !cacheable {
				break
			}
			key = cacheKey{inst: t.id, token: token, method: req.Method, url: req.URL.String(), accept: req.Header.Get("Accept")}
			if cached = l.cache.get(key); cached != nil {
				out = req.Clone(ctx) // a RoundTripper must not change its request
				if cached.etag != "" {
					out.Header.Set("If-None-Match", cached.etag)
				}
				if cached.lastModified != "" {
					out.Header.Set("If-Modified-Since", cached.lastModified)
				}
			}
		}
	}

	resp, err := t.next.RoundTrip(out)
	if err != nil {
		l.releaseInFlight()
		return nil, err
	}
	l.observe(t, st, resource, resp)
	if cached != nil && resp.StatusCode == http.StatusNotModified {
		discard(resp.Body)
		l.releaseInFlight()
		return cached.response(req, resp), nil
	}
	if cacheable && storable(resp) {
		return l.keep(key, t.id, req, resp)
	}
	resp.Body = &inFlightBody{ReadCloser: resp.Body, done: l.releaseInFlight}
	return resp, nil
}

// isWrite says whether method creates content, as GitHub's secondary
// limits count it.
func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// isTokenMint tells POST /app/installations/{id}/access_tokens, which
// creates no content (GitHub does not count it) and which a session's
// fetch must not queue behind its own comments for.
func isTokenMint(p string) bool {
	rest, ok := strings.CutPrefix(apiPath(p), "/app/installations/")
	if !ok {
		return false
	}
	id, tail, _ := strings.Cut(rest, "/")
	return id != "" && tail == "access_tokens"
}

// conditional says the caller made its own conditional request, which the
// cache leaves alone.
func conditional(req *http.Request) bool {
	return req.Header.Get("If-None-Match") != "" || req.Header.Get("If-Modified-Since") != "" || req.Header.Get("Range") != ""
}

// apiPath is the request's path as GitHub's REST routes spell it: without
// Enterprise Server's /api/v3 prefix.
func apiPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "/api/v3"); ok && (rest == "" || rest[0] == '/') {
		return rest
	}
	return p
}

// repoOf is the owner/repo a request is about ("" for other routes), the
// unit of fair share between an installation's writes.
func repoOf(p string) string {
	rest, ok := strings.CutPrefix(apiPath(p), "/repos/")
	if !ok {
		return ""
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return ""
	}
	// GitHub's names are case-insensitive.
	return strings.ToLower(parts[0] + "/" + parts[1])
}

func (l *Limiter) acquireInFlight(ctx context.Context) error {
	if l.sem == nil {
		return nil
	}
	return l.sem.take(ctx, l.testHookFull)
}

func (l *Limiter) releaseInFlight() {
	if l.sem != nil {
		l.sem.give()
	}
}

// SetMaxConcurrent changes how many requests this replica may have in
// flight (at least 1): its share of the fleet's github.outbound
// .max_concurrent, which GitHub counts across every replica (decision
// 0054). A limiter built without a cap stays without one.
func (l *Limiter) SetMaxConcurrent(n int) {
	if l == nil || l.sem == nil {
		return
	}
	l.sem.setLimit(max(n, 1))
}

// inFlightBody holds the request's in-flight place until its body is read
// to the end or closed: GitHub counts a request as in flight while it
// streams the response.
type inFlightBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *inFlightBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *inFlightBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// discard reads a small body to its end (so the connection is reused)
// and closes it.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10)) // a 304 has no body to speak of
	_ = body.Close()                                         // read already; nothing to report
}

// wait sleeps d through the configured Sleep, reporting ctx's error when
// the sleep ends because ctx did.
func (l *Limiter) wait(ctx context.Context, d time.Duration) error {
	if err := l.cfg.Sleep(ctx, d); err != nil {
		return err
	}
	return ctx.Err()
}
