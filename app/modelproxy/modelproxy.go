// Package modelproxy is the model proxy: the far end of the sandbox's only
// way out to a model. A model request arrives for one session, whose spec
// names its agent's provider and model; the proxy sends it to the provider
// as the server configures it (agents.providers), adding the provider's
// key (which never leaves this process), streams the answer back, and
// counts the tokens the provider reports.
//
// It serves the app's session channel (app/channel, whose Meter keeps the
// counts in the store and ends a session past its budget) and `inspect
// run` (a Budget in memory, for its one session) alike: one proxy, so the
// local session meets the same rules as the server's.
package modelproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// Providers is the server's model providers (agents.providers);
// config.Server implements it.
type Providers interface {
	Provider(name string) (config.Provider, bool)
}

// Usage is what the providers reported a session's requests used.
type Usage struct {
	// InputTokens is all the input the provider charged for, cached or
	// not; TotalTokens is as the provider reported it, or input plus
	// output.
	InputTokens, OutputTokens, TotalTokens int64
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// read from and written to the provider's prompt cache, which it
	// prices apart.
	CacheReadTokens, CacheWriteTokens int64
	Requests                          int64
}

// Refusal is a Meter's answer when a request may not go on: the status and
// the reason it is answered with, and when to retry (seconds; 0: not said).
type Refusal struct {
	Status     int
	Why        string
	RetryAfter int
}

// Reservation is the tokens a request holds while it is in flight.
type Reservation struct {
	// ID names it in the store ("" for a Budget's).
	ID     string
	Tokens int64
}

// Meter counts a session's model usage and keeps its budget. A request
// reserves its most before it goes and settles what it used after, so
// requests in flight count against the budget too.
type Meter interface {
	// Reserve is asked before a request goes to the provider, with the
	// tokens it may use at most: a Reservation lets it go, a Refusal
	// answers it instead.
	Reserve(ctx context.Context, tokens int64) (Reservation, *Refusal)
	// Settle replaces the reservation with what the request used: as the
	// provider reported it, or the reservation itself when no usage
	// report arrived.
	Settle(ctx context.Context, r Reservation, u Usage)
}

// Options are a Proxy's parts.
type Options struct {
	Providers Providers
	// Client is the proxy's client to providers; nil is NewClient's.
	Client *http.Client
	// MaxRequestBytes bounds a request body (agents.max_request_bytes;
	// 0: config.DefaultMaxModelRequestBytes).
	MaxRequestBytes int64
	// OutputReservation is the output tokens reserved for a request that
	// names no cap (agents.output_reservation; 0:
	// config.DefaultOutputReservation).
	OutputReservation int64
	// MaxInFlight caps one session's requests in this process
	// (agents.max_requests_in_flight; 0:
	// config.DefaultMaxModelRequestsInFlight), counted before a body is
	// read: the Meter's cap, which holds across replicas, needs the body
	// to reserve, so without this one a session could make the proxy
	// read and hold any number of bodies at once.
	MaxInFlight int
}

// Proxy relays model requests to providers.
type Proxy struct {
	providers     Providers
	client        *http.Client
	maxBody       int64
	defaultOutput int64
	maxInFlight   int

	mu       sync.Mutex
	inFlight map[string]int // by session id; an entry goes when it reaches 0
}

// New wires a Proxy.
func New(o Options) *Proxy {
	p := &Proxy{providers: o.Providers, client: o.Client, maxBody: o.MaxRequestBytes, defaultOutput: o.OutputReservation,
		maxInFlight: o.MaxInFlight, inFlight: map[string]int{}}
	if p.maxInFlight <= 0 {
		p.maxInFlight = config.DefaultMaxModelRequestsInFlight
	}
	if p.client == nil {
		p.client = NewClient()
	}
	if p.maxBody <= 0 {
		p.maxBody = config.DefaultMaxModelRequestBytes
	}
	if p.defaultOutput <= 0 {
		p.defaultOutput = config.DefaultOutputReservation
	}
	return p
}

// NewClient is the proxy's client to providers: no proxy from the
// environment is honoured implicitly beyond Go's defaults, redirects are
// not followed (they would carry the key elsewhere), and a stuck provider
// cannot hold a request past the session's own limits.
func NewClient() *http.Client {
	return &http.Client{
		Timeout:       30 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// upstream is a provider's API as the server configures it.
type upstream struct {
	// BaseURL is the provider's API root, e.g. https://api.openai.com/v1.
	BaseURL string
	// Kind says how the key goes: "openai" (a Bearer token) or
	// "anthropic" (x-api-key).
	Kind string
	Key  string
	// ServerTools are the server tool classes it allows (allowed_server_tools).
	ServerTools []string
}

// upstreamFor is the provider the session's agent may reach under name:
// the one its spec names, as the server configures it (agents.providers).
// ok is false for any other name, or a provider the server no longer has.
func (p *Proxy) upstreamFor(spec contract.Spec, name string) (upstream, bool, error) {
	if spec.Agent.Provider == "" || spec.Agent.Provider != name {
		return upstream{}, false, nil
	}
	pr, ok := p.providers.Provider(name)
	if !ok {
		return upstream{}, false, nil
	}
	key, err := pr.APIKey()
	if err != nil {
		return upstream{}, false, err
	}
	return upstream{BaseURL: pr.BaseURL, Kind: pr.Kind, Key: key, ServerTools: pr.AllowedServerTools}, true, nil
}

// Serve relays one model request of the session whose spec this is: r is a
// request on the route contract.PathEgressModel (the provider from
// r.PathValue(contract.PathValueProvider), the provider's path from
// contract.PathValueRest, which the router decoded once), already
// authenticated as the session's. Only the provider kind's named routes
// go on (policy.DecideModelRequest); meter reserves the request's tokens
// before and settles what it used after.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, spec contract.Spec, meter Meter, log zerolog.Logger) {
	provider := r.PathValue(contract.PathValueProvider)
	refuse := func(status int, why string) {
		log.Warn().Str("provider", provider).Str("method", r.Method).Str("why", why).Msg("model request refused")
		contract.WriteError(w, status, contract.ErrorInvalid, why)
	}
	if r.Method == http.MethodConnect || r.Method == http.MethodTrace || r.URL.Host != "" || r.URL.IsAbs() {
		refuse(http.StatusForbidden, "the model proxy is not a proxy for other hosts, and serves neither CONNECT nor TRACE")
		return
	}
	up, ok, err := p.upstreamFor(spec, provider)
	if err != nil {
		log.Error().Err(err).Str("provider", provider).Msg("the provider's key is unreadable")
		refuse(http.StatusServiceUnavailable, "the model provider is not available")
		return
	}
	if !ok {
		refuse(http.StatusForbidden, "this session's agent uses no provider named "+provider)
		return
	}
	// The server's kind for the provider decides, not the spec's.
	d := policy.DecideModelRequest(up.Kind, r.Method, strings.Split(r.PathValue(contract.PathValueRest), "/"))
	if !d.Allowed {
		refuse(http.StatusForbidden, d.Why)
		return
	}
	if why := allowedQuery(up.Kind, d.Route, r.URL.RawQuery); why != "" {
		refuse(http.StatusForbidden, why)
		return
	}
	base, err := url.Parse(up.BaseURL)
	if err != nil {
		log.Error().Err(err).Str("provider", provider).Msg("the provider's base_url is unreadable")
		refuse(http.StatusServiceUnavailable, "the model provider is not available")
		return
	}
	if r.ContentLength > p.maxBody {
		refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is larger than the model proxy takes (%d bytes)", p.maxBody))
		return
	}
	release, admitted := p.admit(spec.SessionID)
	if !admitted {
		w.Header().Set("Retry-After", "1")
		no := TooManyInFlight(p.maxInFlight)
		refuse(no.Status, no.Why)
		return
	}
	defer release()
	body, err := readBody(w, r, p.maxBody)
	if err != nil {
		refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is larger than the model proxy takes (%d bytes)", p.maxBody))
		return
	}
	// The agent has a shell and can rewrite its CLI's settings: the model
	// it asks for is checked here, where it cannot reach.
	if why := modelRefusal(body, spec.Agent.Model); why != "" {
		refuse(http.StatusForbidden, why)
		return
	}
	if why := allowedRequest(up.Kind, provider, d.Route, r.Header, body, up.ServerTools); why != "" {
		refuse(http.StatusForbidden, why)
		return
	}
	// Content named by an id the provider stored is billed in full but
	// reserved as the few bytes of its id (decision 0061).
	if why := storedReference(apiOf(up.Kind, d.Route), body); why != "" {
		refuse(http.StatusForbidden, why)
		return
	}
	body, tokens := prepareBody(d.Route, body, p.defaultOutput)
	// Built from the checked segments: JoinPath escapes each, and nothing
	// in them can climb out of the base's path.
	target := base.JoinPath(d.Segments...)
	target.RawQuery = r.URL.RawQuery // allowedQuery's: "" or Anthropic's beta=true
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		refuse(http.StatusBadRequest, "not a request the provider can take")
		return
	}
	contract.CopyHeaders(out.Header, r.Header, contract.ModelRequestHeaders)
	switch up.Kind {
	case contract.ProviderKindAnthropic:
		out.Header.Set("X-Api-Key", up.Key)
	default:
		out.Header.Set("Authorization", "Bearer "+up.Key)
	}
	res, no := meter.Reserve(r.Context(), tokens)
	if no != nil {
		if no.RetryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(no.RetryAfter))
		}
		refuse(no.Status, no.Why)
		return
	}
	u := Usage{Requests: 1}
	complete := false
	// Settled even when the sandbox went away mid-answer: the provider
	// charged for it. Without the answer's own usage report, its
	// reservation is what it is charged.
	defer func() {
		if !complete {
			u.TotalTokens = max(u.TotalTokens, res.Tokens)
		}
		meter.Settle(context.WithoutCancel(r.Context()), res, u)
	}()
	resp, err := p.client.Do(out)
	if err != nil {
		log.Warn().Str("provider", provider).Str("error", redactKey(err.Error(), up.Key)).Msg("the model provider is unreachable")
		contract.WriteError(w, http.StatusBadGateway, contract.ErrorInvalid, "the model provider is unreachable")
		// A provider that could not be reached charged nothing; one the
		// agent hung up on before it answered may have.
		complete = r.Context().Err() == nil
		return
	}
	defer resp.Body.Close()
	for _, k := range contract.ModelResponseHeaders {
		for _, v := range resp.Header.Values(k) {
			w.Header().Add(k, redactKey(v, up.Key))
		}
	}
	w.WriteHeader(resp.StatusCode)
	m := &usageMeter{}
	relayed := relayAnswer(w, resp.Body, newKeyScrubber(up.Key), m)
	used := m.usage()
	used.Requests = u.Requests
	u = used
	// The answer's own usage report settles it, even when the agent hung
	// up after it (Codex CLI may close the stream once it has
	// response.completed, before the last bytes): the provider said what
	// it charged. Without that report, only a whole non-streamed answer
	// that is not a success (an error, say) settles for what it shows.
	complete = m.settles(resp.StatusCode, relayed, d.Route)
}

// admit takes one of the session's request slots in this process, or
// reports that all maxInFlight are taken; release gives it back.
func (p *Proxy) admit(session string) (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight[session] >= p.maxInFlight {
		return nil, false
	}
	p.inFlight[session]++
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.inFlight[session]--; p.inFlight[session] <= 0 {
			delete(p.inFlight, session)
		}
	}, true
}

// readBody reads a request body of at most max bytes. Its buffer is sized
// once from a declared length, and otherwise doubles from 64 KiB but never
// past max+1: io.ReadAll's growth would hold up to twice the cap for a
// body cut off at it.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	limit := int(max) + 1 // room to see the end of a body of exactly max
	size := 64 << 10
	if r.ContentLength > 0 {
		size = int(r.ContentLength) + 1
	}
	buf := make([]byte, 0, min(size, limit))
	body := http.MaxBytesReader(w, r.Body, max)
	for {
		if len(buf) == cap(buf) {
			if cap(buf) >= limit {
				return nil, &http.MaxBytesError{Limit: max} // MaxBytesReader says so first; kept for safety
			}
			buf = append(make([]byte, 0, min(2*cap(buf), limit)), buf...)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// relayAnswer streams the provider's answer to the sandbox as it arrives,
// flushing each chunk (a model's event stream needs it), with the key
// scrubbed out and each chunk metered; it reports whether the whole answer
// was read and passed on.
func relayAnswer(w http.ResponseWriter, body io.Reader, scrub *keyScrubber, m *usageMeter) bool {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			chunk := scrub.next(buf[:n])
			m.Write(chunk)
			if _, werr := w.Write(chunk); werr != nil {
				return false
			}
			_ = rc.Flush() // an unflushable writer buffers; the answer still arrives
		}
		if err == io.EOF {
			tail := scrub.rest()
			m.Write(tail)
			_, werr := w.Write(tail)
			return werr == nil
		}
		if err != nil {
			return false
		}
	}
}

func redactKey(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}
