package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// ChannelError is a refused session-channel request: the status, and the
// app's machine-readable code and message when it sent an ErrorResponse.
type ChannelError struct {
	Path    string
	Status  int
	Code    contract.ErrorCode
	Message string
}

func (e *ChannelError) Error() string {
	msg := fmt.Sprintf("session channel: %s: HTTP %d", e.Path, e.Status)
	if e.Code != "" {
		msg += " " + string(e.Code)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// temporary reports whether retrying the request may help.
func (e *ChannelError) temporary() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// isAttemptEnded reports whether err says the app has ended the attempt
// (cancelled, timed out or replaced), after which the supervisor stops.
func isAttemptEnded(err error) bool {
	var ce *ChannelError
	return errors.As(err, &ce) && ce.Code == contract.ErrorAttemptEnded
}

// channel is the supervisor's client of the session channel. After the
// claim it sends the session token (contract.HeaderSessionToken) on every
// request; it never follows a redirect, which would carry that header to
// wherever the redirect points.
type channel struct {
	base   *url.URL
	client *http.Client
	// registryClient relays registry requests on connections of its own,
	// at most maxRegistryRelays: requests waiting for the app's turns
	// never hold a connection progress, output or the result needs.
	registryClient *http.Client
	attemptID      string
	runnerVersion  string

	mu    sync.Mutex
	token string
}

// newChannel makes a client for the channel at baseURL (http or https; its
// path is kept as a prefix). With socket set, every request is dialled to
// that Unix socket instead of the URL's host, and baseURL may be empty.
func newChannel(baseURL, socket, attemptID, runnerVersion string) (*channel, error) {
	if baseURL == "" && socket != "" {
		baseURL = "http://inspect-channel"
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("session channel: the channel URL must be a plain http(s) URL with no credentials, query or fragment")
	}
	tr := &http.Transport{
		Proxy:               nil, // the channel is the app itself, never through a proxy from the environment
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 2,
	}
	if socket != "" {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
	}
	noRedirects := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// The registry relay's own transport: the gate relays at most
	// maxRegistryRelays at once, and this holds no more connections
	// (over HTTP/2 they share one), so the app never holds more of this
	// attempt's registry requests than that (decision 0059).
	regTr := tr.Clone()
	regTr.MaxConnsPerHost, regTr.MaxIdleConnsPerHost = maxRegistryRelays, maxRegistryRelays
	return &channel{
		base:           u,
		client:         &http.Client{Transport: tr, CheckRedirect: noRedirects},
		registryClient: &http.Client{Transport: regTr, CheckRedirect: noRedirects},
		attemptID:      attemptID,
		runnerVersion:  runnerVersion,
	}, nil
}

func (c *channel) close() {
	c.client.CloseIdleConnections()
	c.registryClient.CloseIdleConnections()
}

// do sends one request and hands a 2xx body to decode; anything else is a
// *ChannelError.
func (c *channel) do(ctx context.Context, method, pattern string, body any, decode func(io.Reader) error) error {
	var rd io.Reader
	contentType := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd, contentType = bytes.NewReader(b), contract.ContentTypeJSON
	}
	return c.send(ctx, method, pattern, "", contentType, rd, decode)
}

// putArtifact uploads one artifact's bytes (contract.PathArtifact).
func (c *channel) putArtifact(ctx context.Context, name string, content []byte) error {
	q := url.Values{"name": {name}}
	return c.send(ctx, http.MethodPut, contract.PathArtifact, q.Encode(), "application/octet-stream", bytes.NewReader(content), nil)
}

// agentState downloads the agent state the spec names
// (contract.PathAgentState); gone says the app keeps none (404).
func (c *channel) agentState(ctx context.Context) (data []byte, gone bool, err error) {
	err = c.send(ctx, http.MethodGet, contract.PathAgentState, "", "", nil, func(r io.Reader) error {
		var rerr error
		data, rerr = io.ReadAll(io.LimitReader(r, contract.MaxAgentStateBytes+1))
		if rerr == nil && len(data) > contract.MaxAgentStateBytes {
			rerr = fmt.Errorf("the agent state is over its %d-byte cap", contract.MaxAgentStateBytes)
		}
		return rerr
	})
	var ce *ChannelError
	if errors.As(err, &ce) && ce.Status == http.StatusNotFound {
		return nil, true, nil
	}
	return data, false, err
}

// send is do with the body as it is, of contentType, and a query.
func (c *channel) send(ctx context.Context, method, pattern, rawQuery, contentType string, rd io.Reader, decode func(io.Reader) error) error {
	p := contract.AttemptPath(pattern, c.attemptID)
	u := *c.base
	u.Path = strings.TrimSuffix(c.base.Path, "/") + p
	u.RawPath, u.RawQuery = "", rawQuery
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", contract.ContentTypeJSON)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.runnerVersion != "" {
		req.Header.Set(contract.HeaderRunnerVersion, c.runnerVersion)
	}
	c.mu.Lock()
	if c.token != "" {
		req.Header.Set(contract.HeaderSessionToken, c.token)
	}
	c.mu.Unlock()
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("session channel: %s %s: %w", method, p, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		ce := &ChannelError{Path: p, Status: resp.StatusCode}
		if er, err := contract.DecodeErrorResponse(resp.Body); err == nil {
			ce.Code, ce.Message = er.Code, contract.CleanProgressMessage(er.Message)
		}
		return ce
	}
	if decode == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	if err := decode(resp.Body); err != nil {
		return fmt.Errorf("session channel: %s %s: %w", method, p, err)
	}
	return nil
}

// claim exchanges the single-use claim code for the session token, which
// every later request carries.
func (c *channel) claim(ctx context.Context, code string) (contract.ClaimResponse, error) {
	var resp contract.ClaimResponse
	req := contract.ClaimRequest{AttemptID: c.attemptID, ClaimCode: code, SpecVersion: contract.SpecVersion, RunnerVersion: c.runnerVersion}
	err := c.do(ctx, http.MethodPost, contract.PathClaim, req, func(r io.Reader) (err error) {
		resp, err = contract.DecodeClaimResponse(r)
		return err
	})
	if err != nil {
		return contract.ClaimResponse{}, err
	}
	c.mu.Lock()
	c.token = resp.SessionToken
	c.mu.Unlock()
	return resp, nil
}

func (c *channel) spec(ctx context.Context) (contract.Spec, error) {
	var s contract.Spec
	err := c.do(ctx, http.MethodGet, contract.PathSpec, nil, func(r io.Reader) (err error) {
		s, err = contract.DecodeSpec(r)
		return err
	})
	return s, err
}

func (c *channel) repoToken(ctx context.Context) (contract.RepoTokenResponse, error) {
	var t contract.RepoTokenResponse
	err := c.do(ctx, http.MethodPost, contract.PathRepoToken, nil, func(r io.Reader) (err error) {
		t, err = contract.DecodeRepoTokenResponse(r)
		return err
	})
	return t, err
}

// turns asks for the session's turns after after, waiting up to wait for
// one (contract.PathTurns); asking says the supervisor has those up to
// after.
func (c *channel) turns(ctx context.Context, after int, wait time.Duration) ([]contract.Turn, error) {
	q := url.Values{"after": {strconv.Itoa(after)}, "wait": {wait.String()}}
	var resp contract.TurnsResponse
	err := c.send(ctx, http.MethodGet, contract.PathTurns, q.Encode(), "", nil, func(r io.Reader) (err error) {
		resp, err = contract.DecodeTurnsResponse(r)
		return err
	})
	return resp.Turns, err
}

// recorder sends the flight recorder (contract.PathRecorder).
func (c *channel) recorder(ctx context.Context, rec contract.Recorder) error {
	return c.do(ctx, http.MethodPost, contract.PathRecorder, rec, nil)
}

func (c *channel) progress(ctx context.Context, ev contract.ProgressEvent) error {
	return c.do(ctx, http.MethodPost, contract.PathProgress, ev, nil)
}

func (c *channel) output(ctx context.Context, o contract.OutputChunk) error {
	return c.do(ctx, http.MethodPost, contract.PathOutput, o, nil)
}

func (c *channel) result(ctx context.Context, u *contract.ResultUpload) error {
	return c.do(ctx, http.MethodPut, contract.PathResult, u, nil)
}

func (c *channel) snapshotJob(ctx context.Context) (contract.SnapshotJob, error) {
	var j contract.SnapshotJob
	err := c.do(ctx, http.MethodGet, contract.PathSnapshotJob, nil, func(r io.Reader) (err error) {
		j, err = contract.DecodeSnapshotJob(r)
		return err
	})
	return j, err
}

func (c *channel) snapshotResult(ctx context.Context, res contract.SnapshotResult) error {
	return c.do(ctx, http.MethodPut, contract.PathSnapshotResult, res, nil)
}

// egress sends one model request on to the channel's egress route for
// provider (the app adds the provider's key at the far end), with the
// session token, and hands back the response unread, for streaming.
func (c *channel) egress(ctx context.Context, method, provider, rest, rawQuery string, hdr http.Header, body io.Reader, size int64) (*http.Response, error) {
	u := *c.base
	u.Path = strings.TrimSuffix(c.base.Path, "/") + contract.EgressModelPath(c.attemptID, provider, rest)
	u.RawPath, u.RawQuery = "", rawQuery
	req, err := c.request(ctx, method, u.String(), hdr, body)
	if err != nil {
		return nil, err
	}
	// The length the agent declared goes on, so the app can refuse an
	// oversized body before reading any of it (-1: unknown, chunked).
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	return c.client.Do(req)
}

// registry sends one registry request (GET or HEAD, no body, no query) on
// to the channel's registry route for the named registry (the app adds the
// upstream's credential at the far end), with the session token, and hands
// back the response unread, for streaming. rest is kept escaped as the
// package manager sent it.
func (c *channel) registry(ctx context.Context, method, name, rest string, hdr http.Header) (*http.Response, error) {
	target := strings.TrimSuffix(c.base.String(), "/") + contract.EgressRegistryPath(c.attemptID, name, rest)
	req, err := c.request(ctx, method, target, hdr, nil)
	if err != nil {
		return nil, err
	}
	return c.registryClient.Do(req)
}

// request is an egress request to the channel with the allowlisted
// headers hdr, the runner's version and the session token.
func (c *channel) request(ctx context.Context, method, target string, hdr http.Header, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header = hdr
	if c.runnerVersion != "" {
		req.Header.Set(contract.HeaderRunnerVersion, c.runnerVersion)
	}
	c.mu.Lock()
	req.Header.Set(contract.HeaderSessionToken, c.token)
	c.mu.Unlock()
	return req, nil
}
