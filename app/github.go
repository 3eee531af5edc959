package app

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
}

// NewGitHubClients builds clients from the App's id and key against apiURL
// (https://api.github.com/ or a GitHub Enterprise Server /api/v3/ base),
// with every REST request of the App and its installations going through
// lim (nil: no outbound discipline). Token minting goes around it, over
// lim's base transport: a token is not content GitHub's write limits
// count, and must not wait behind the writes that need it.
func NewGitHubClients(apiURL string, appID int64, privateKeyPEM []byte, userAgent string, lim *outbound.Limiter) (GitHubClients, error) {
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
	// One App client for all: go-github remembers the rate limits it met
	// per client, and the JWT is signed per request anyway.
	c.app = c.newClient(lim.Transport(0, c.appsTransport()), "application")
	return c, nil
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
	app       *github.Client
	// installations keeps one client (and its token) per installation, so
	// a token is minted once an hour per installation, not once per call;
	// ghinstallation refreshes it a minute before it expires.
	installations *clientCache
}

// appsTransport signs App JWTs over the limiter's base transport. Each
// installation gets its own: ghinstallation's token refresh writes to the
// AppsTransport it was built from.
func (c *clientCreator) appsTransport() *ghinstallation.AppsTransport {
	atr := ghinstallation.NewAppsTransportFromPrivateKey(c.lim.Base(), c.appID, c.key)
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
		return c.newClient(c.lim.Transport(id, itr), fmt.Sprintf("installation: %d", id))
	}), nil
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

// NewOutboundLimiter builds the replica's outbound limiter from config,
// with the write budget kept in st so replicas sharing a database share
// it. log reports the holds GitHub asks for.
func NewOutboundLimiter(o config.Outbound, st *store.Store, log zerolog.Logger) *outbound.Limiter {
	return outbound.New(outbound.Config{
		MaxConcurrent:    o.MaxConcurrent,
		ETagCacheEntries: o.ETagCacheEntries,
		MaxWait:          o.MaxWait,
		Slots:            storeSlots(st, o.Creates),
		Logger:           log,
	}, nil)
}

// arrivalGuard widens every outbound window (see storeSlots).
const arrivalGuard = time.Second

// storeSlots is the outbound write budget kept in the store: the windows
// apply per key (per installation), counted across the fleet. With no
// windows there is no budget (nil), and writes are not limited.
func storeSlots(st *store.Store, windows []config.RateWindow) outbound.Slots {
	if len(windows) == 0 {
		return nil
	}
	limits := make([]store.RateLimit, 0, len(windows))
	for _, w := range windows {
		// A slot is counted when granted, GitHub counts a request when it
		// arrives; between the two lie the store's lock queue and the
		// connection. Without the guard, a request granted early in one
		// window and sent late could arrive within one window of a
		// request granted as the next window opened.
		limits = append(limits, store.RateLimit{Limit: w.Limit, Window: w.Window + arrivalGuard})
	}
	return outbound.SlotsFunc(func(ctx context.Context, key string, now time.Time) (time.Duration, error) {
		return st.TakeRateSlot(ctx, key, now, limits)
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

func (c *clientCreator) WithToken(ctx context.Context, installationID int64, token string) (*github.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rt := c.lim.Transport(installationID, c.lim.Base())
	return c.newClient(rt, fmt.Sprintf("installation: %d, minted token", installationID)).WithAuthToken(token), nil
}

func isStatus(err error, code int) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}

// roleName reads the sender's role from the collaborator-permission API.
// go-github v62 does not decode `role_name`, which is the only field that
// tells maintain from write and triage from read, so we decode it here.
func roleName(ctx context.Context, c *github.Client, owner, repo, login string) (string, error) {
	req, err := c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", owner, repo, login), nil)
	if err != nil {
		return "", err
	}
	var body struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := c.Do(ctx, req, &body); err != nil {
		if isStatus(err, http.StatusNotFound) {
			// Not a user GitHub knows in this repo: no access at all.
			return "none", nil
		}
		return "", fmt.Errorf("reading %s's permission: %w", login, err)
	}
	if body.RoleName == "" {
		// Older Enterprise Server versions lack role_name; permission is the
		// folded level, which is still safe (maintain reads as write).
		return body.Permission, nil
	}
	return body.RoleName, nil
}

// thread is one issue or pull request's conversation, or one review
// thread on a pull request's diff, as our bot sees it.
type thread struct {
	c           *github.Client
	owner, repo string
	number      int
	// review, when set, is a review thread's first comment: comments go
	// there as replies instead of into the conversation.
	review int64
	// bot is our bot's login: only its comments count when looking for a
	// marker, so nobody can pre-empt a reply by quoting one.
	bot string
}

// find looks for a comment of ours carrying marker, so a replayed step edits
// instead of posting twice.
func (t thread) find(ctx context.Context, marker string) (int64, error) {
	if t.review != 0 {
		return findMarked(t.bot, marker, func(page int) ([]*github.PullRequestComment, *github.Response, error) {
			return t.c.PullRequests.ListComments(ctx, t.owner, t.repo, t.number, &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100, Page: page}})
		}, func(c *github.PullRequestComment) (string, string, int64) {
			return c.GetUser().GetLogin(), c.GetBody(), c.GetID()
		})
	}
	return findMarked(t.bot, marker, func(page int) ([]*github.IssueComment, *github.Response, error) {
		return t.c.Issues.ListComments(ctx, t.owner, t.repo, t.number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100, Page: page}})
	}, func(c *github.IssueComment) (string, string, int64) {
		return c.GetUser().GetLogin(), c.GetBody(), c.GetID()
	})
}

// findMarked pages through a list of comments for the first one bot wrote
// that carries marker.
func findMarked[C any](bot, marker string, list func(page int) ([]C, *github.Response, error), fields func(C) (login, body string, id int64)) (int64, error) {
	for page := 1; ; {
		comments, resp, err := list(page)
		if err != nil {
			return 0, fmt.Errorf("listing comments: %w", err)
		}
		for _, cm := range comments {
			if login, body, id := fields(cm); strings.EqualFold(login, bot) && strings.Contains(body, marker) {
				return id, nil
			}
		}
		if resp.NextPage == 0 {
			return 0, nil
		}
		page = resp.NextPage
	}
}

// postOnce posts body with marker unless our comment with marker exists
// (searched only when this may be a replay). It returns the comment id.
func (t thread) postOnce(ctx context.Context, marker, body string, mayBeReplay bool) (int64, error) {
	if mayBeReplay {
		id, err := t.find(ctx, marker)
		if err != nil || id != 0 {
			return id, err
		}
	}
	if t.review != 0 {
		// POST .../pulls/{n}/comments/{id}/replies: go-github v62 has no
		// call for it (its CreateCommentInReplyTo uses the older form).
		req, err := t.c.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", t.owner, t.repo, t.number, t.review),
			map[string]string{"body": body + "\n" + marker})
		if err != nil {
			return 0, err
		}
		cm := new(github.PullRequestComment)
		if _, err := t.c.Do(ctx, req, cm); err != nil {
			return 0, fmt.Errorf("replying in the review thread: %w", err)
		}
		return cm.GetID(), nil
	}
	cm, _, err := t.c.Issues.CreateComment(ctx, t.owner, t.repo, t.number, &github.IssueComment{Body: github.String(body + "\n" + marker)})
	if err != nil {
		return 0, fmt.Errorf("posting comment: %w", err)
	}
	return cm.GetID(), nil
}

// edit replaces one of our comments.
func (t thread) edit(ctx context.Context, id int64, marker, body string) error {
	var err error
	if t.review != 0 {
		_, _, err = t.c.PullRequests.EditComment(ctx, t.owner, t.repo, id, &github.PullRequestComment{Body: github.String(body + "\n" + marker)})
	} else {
		_, _, err = t.c.Issues.EditComment(ctx, t.owner, t.repo, id, &github.IssueComment{Body: github.String(body + "\n" + marker)})
	}
	if err != nil {
		return fmt.Errorf("editing comment %d: %w", id, err)
	}
	return nil
}

// findCheckRun finds our check run for a session by its external id.
func findCheckRun(ctx context.Context, c *github.Client, owner, repo, sha, name, externalID string) (int64, error) {
	opts := &github.ListCheckRunsOptions{CheckName: github.String(name), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, opts)
		if err != nil {
			return 0, fmt.Errorf("listing check runs: %w", err)
		}
		for _, cr := range res.CheckRuns {
			if cr.GetExternalID() == externalID {
				return cr.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, nil
		}
		opts.Page = resp.NextPage
	}
}
