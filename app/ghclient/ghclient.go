// Package ghclient builds Inspect's authenticated GitHub clients: the App's
// own (JWT) client, one cached client per installation, and clients for
// tokens the App minted, all with their REST requests going through the
// outbound limiter, whose store-backed write budget it also wires. It owns
// key parsing and the transport chain, and RoleName, a read go-github
// cannot decode. It must not make requests of its own accord or write to
// GitHub (the writes are app/ghwrite's, what to write is the engine's).
package ghclient

import (
	"container/list"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/outbound"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
)

// GitHubClients hands out authenticated GitHub clients. It takes a context,
// unlike go-githubapp's ClientCreator, so cancellation reaches token minting.
type GitHubClients interface {
	App(ctx context.Context) (*github.Client, error)
	Installation(ctx context.Context, installationID int64) (*github.Client, error)
	// WithToken is a client that presents token, one the app minted for
	// that installation (to revoke it with itself), within the
	// installation's outbound budget.
	WithToken(ctx context.Context, installationID int64, token string) (*github.Client, error)
	// AsUser is a client that presents a user's access token (from the
	// dashboard's sign-in), within that user's own outbound budget.
	AsUser(ctx context.Context, userID int64, token string) (*github.Client, error)
}

// NewGitHubClients builds clients from the App's id and key against apiURL
// (https://api.github.com/ or a GitHub Enterprise Server /api/v3/ base),
// with every REST request of the App and its installations going through
// lim (nil: no outbound discipline). Token minting goes around it, over
// lim's base transport: a token is not content GitHub's write limits
// count, and must not wait behind the writes that need it.
//
// Options change the transport chain (WithBaseTransport).
func NewGitHubClients(apiURL string, appID int64, privateKeyPEM []byte, userAgent string, lim *outbound.Limiter, opts ...Option) (GitHubClients, error) {
	// go-githubapp would only fail at the first token, after the server had
	// already acknowledged webhooks it could never act on; fail at start-up.
	key, err := parsePrivateKey(privateKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("github.private_key: %w", err)
	}
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	baseURL, err := url.Parse(apiURL)
	if err != nil {
		return nil, fmt.Errorf("github.api_url: %w", err)
	}
	c := &clientCreator{
		baseURL: baseURL, appID: appID, key: key, userAgent: userAgent, lim: lim,
		installations: newClientCache(githubapp.DefaultCachingClientCapacity),
	}
	c.base = lim.Base()
	for _, o := range opts {
		o(c)
	}
	// One App client for all: go-github remembers the rate limits it met
	// per client, and the JWT is signed per request anyway.
	c.app = c.newClient(lim.Transport(0, c.appsTransport()), "application")
	return c, nil
}

// Option changes how NewGitHubClients builds its clients.
type Option func(*clientCreator)

// WithBaseTransport wraps the transport every request to GitHub ends in,
// token mints included (under the limiter, the token transport and the
// retries): the metrics' count of GitHub calls.
func WithBaseTransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(c *clientCreator) { c.base = wrap(c.base) }
}

// clientCreator builds clients the way go-githubapp did (its user agents,
// ghinstallation for tokens, the REST base as given), but owns the
// transport chain so the outbound limiter sits, per installation, outside
// the token transport.
type clientCreator struct {
	baseURL   *url.URL
	appID     int64
	key       *rsa.PrivateKey
	userAgent string
	lim       *outbound.Limiter
	// base is the transport under everything: lim's base, maybe wrapped
	// (WithBaseTransport).
	base http.RoundTripper
	app  *github.Client
	// installations keeps one client (and its token) per installation, so
	// a token is minted once an hour per installation, not once per call;
	// ghinstallation refreshes it a minute before it expires.
	installations *clientCache
}

// appsTransport signs App JWTs over the limiter's base transport. Each
// installation gets its own: ghinstallation's token refresh writes to the
// AppsTransport it was built from.
func (c *clientCreator) appsTransport() *ghinstallation.AppsTransport {
	atr := ghinstallation.NewAppsTransportFromPrivateKey(c.base, c.appID, c.key)
	atr.BaseURL = strings.TrimSuffix(c.baseURL.String(), "/")
	return atr
}

func (c *clientCreator) newClient(rt http.RoundTripper, details string) *github.Client {
	gh := github.NewClient(&http.Client{Transport: rt})
	// Not WithEnterpriseURLs: it would add /api/v3/ to any host but
	// api.github.com's, and api_url already is the REST base.
	u := *c.baseURL
	gh.BaseURL = &u
	gh.UserAgent = fmt.Sprintf("%s (%s)", c.userAgent, details)
	return gh
}

func (c *clientCreator) App(ctx context.Context) (*github.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.app, nil
}

func (c *clientCreator) Installation(ctx context.Context, id int64) (*github.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.installations.get(id, func() *github.Client {
		// Tokens are minted lazily, on the first request, by the
		// installation transport, through its AppsTransport: not through
		// the limiter, which wraps only the requests made with the token.
		itr := ghinstallation.NewFromAppsTransport(c.appsTransport(), id)
		// Options, even empty: without them ghinstallation sends the
		// body "null", which GitHub's description (an object) does not
		// allow; "{}" asks for the installation's own permissions.
		itr.InstallationTokenOptions = &github.InstallationTokenOptions{}
		return c.newClient(c.lim.Transport(id, itr), fmt.Sprintf("installation: %d", id))
	}), nil
}

func (c *clientCreator) WithToken(ctx context.Context, installationID int64, token string) (*github.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rt := c.lim.Transport(installationID, c.base)
	return c.newClient(rt, fmt.Sprintf("installation: %d, minted token", installationID)).WithAuthToken(token), nil
}

func (c *clientCreator) AsUser(ctx context.Context, userID int64, token string) (*github.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rt := c.lim.UserTransport(userID, c.base)
	return c.newClient(rt, fmt.Sprintf("user: %d", userID)).WithAuthToken(token), nil
}

// clientCache is a bounded LRU of installation clients.
type clientCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of cachedClient, most recent first
	byID  map[int64]*list.Element
}

type cachedClient struct {
	id     int64
	client *github.Client
}

func newClientCache(capacity int) *clientCache {
	return &clientCache{max: max(capacity, 1), order: list.New(), byID: map[int64]*list.Element{}}
}

// get returns id's client, building it with build (no I/O) on a miss.
func (c *clientCache) get(id int64, build func() *github.Client) *github.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		c.order.MoveToFront(el)
		return el.Value.(cachedClient).client
	}
	gh := build()
	c.byID[id] = c.order.PushFront(cachedClient{id: id, client: gh})
	for c.order.Len() > c.max {
		delete(c.byID, c.order.Remove(c.order.Back()).(cachedClient).id)
	}
	return gh
}

// RateSlots is the store's part in the outbound write budget: a slot in
// every window for key, or how long until one opens (*store.Store).
type RateSlots interface {
	TakeRateSlot(ctx context.Context, key string, clock func() time.Time, windows []store.RateLimit) (time.Duration, error)
}

// NewOutboundLimiter builds the replica's outbound limiter from config,
// with the write budget kept in st so replicas sharing a database share
// it. log reports the holds GitHub asks for. Its in-flight cap starts at
// the whole of max_concurrent, and becomes this replica's share at its
// first heartbeat (ShareConcurrency), which comes before any work.
func NewOutboundLimiter(o config.Outbound, st RateSlots, log zerolog.Logger) *outbound.Limiter {
	return outbound.New(outbound.Config{
		MaxConcurrent:    o.MaxConcurrent,
		ETagCacheEntries: o.ETagCacheEntries,
		MaxWait:          o.MaxWait,
		Slots:            storeSlots(st, o.Creates),
		Logger:           log,
	}, nil)
}

// ConcurrencyShare is how many requests one replica of live may have in
// flight to GitHub: an equal share of total, github.outbound
// .max_concurrent, which is the fleet's, since GitHub counts concurrent
// requests across every replica (decision 0054). At least 1, so a fleet
// larger than total still works, a little over GitHub's count.
func ConcurrencyShare(total, live int) int {
	return max(total/max(live, 1), 1)
}

// ShareConcurrency is the fleet's OnFleetSize for lim: each heartbeat's
// count of live replicas sets lim's share of total.
func ShareConcurrency(lim *outbound.Limiter, total int) func(live int) {
	return func(live int) { lim.SetMaxConcurrent(ConcurrencyShare(total, live)) }
}

// arrivalGuard widens every outbound window (see storeSlots).
const arrivalGuard = time.Second

// storeSlots is the outbound write budget kept in the store: the windows
// apply per key (per installation), counted across the fleet. With no
// windows there is no budget (nil), and writes are not limited.
func storeSlots(st RateSlots, windows []config.RateWindow) outbound.Slots {
	if len(windows) == 0 {
		return nil
	}
	limits := make([]store.RateLimit, 0, len(windows))
	for _, w := range windows {
		// A slot is counted when granted, GitHub counts a request when it
		// arrives; between the two lie the in-flight cap and the
		// connection (not the store's lock queue: the slot's time is read
		// behind the lock). Without the guard, a request granted early in one
		// window and sent late could arrive within one window of a
		// request granted as the next window opened.
		limits = append(limits, store.RateLimit{Limit: w.Limit, Window: w.Window + arrivalGuard})
	}
	return outbound.SlotsFunc(func(ctx context.Context, key string, clock func() time.Time) (time.Duration, error) {
		return st.TakeRateSlot(ctx, key, clock, limits)
	})
}

// parsePrivateKey reads the App key: an RSA key in PEM, as GitHub issues
// them (PKCS#1), or PKCS#8.
func parsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("not a PEM-encoded key")
	}
	if key, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return key, nil
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("not an RSA private key (PKCS#1 or PKCS#8)")
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an RSA private key; GitHub App keys are RSA")
	}
	return rsaKey, nil
}

// CheckPrivateKey reports, as NewGitHubClients would, whether data is an
// App key it can sign with.
func CheckPrivateKey(data []byte) error {
	if _, err := parsePrivateKey(data); err != nil {
		return fmt.Errorf("github.private_key: %w", err)
	}
	return nil
}
