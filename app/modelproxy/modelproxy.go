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
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/runner/contract"
)

// Providers is the server's model providers (agents.providers);
// config.Server implements it.
type Providers interface {
	Provider(name string) (config.Provider, bool)
}

// Usage is what the providers reported a session's requests used.
type Usage struct {
	InputTokens, OutputTokens, TotalTokens int64
	Requests                               int64
}

// Refusal is a Meter's answer when a request may not go on: the status and
// the reason it is answered with.
type Refusal struct {
	Status int
	Why    string
}

// Meter counts a session's model usage and keeps its budget.
type Meter interface {
	// Admit is asked before a request goes to the provider: nil lets it
	// go, a Refusal answers it instead.
	Admit(ctx context.Context) *Refusal
	// Record adds what one answer used, as the provider reported it.
	Record(ctx context.Context, u Usage)
}

// Options are a Proxy's parts.
type Options struct {
	Providers Providers
	// Client is the proxy's client to providers; nil is NewClient's.
	Client *http.Client
}

// Proxy relays model requests to providers.
type Proxy struct {
	providers Providers
	client    *http.Client
}

// New wires a Proxy.
func New(o Options) *Proxy {
	p := &Proxy{providers: o.Providers, client: o.Client}
	if p.client == nil {
		p.client = NewClient()
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
	return upstream{BaseURL: pr.BaseURL, Kind: pr.Kind, Key: key}, true, nil
}

// maxRequestBytes bounds one request to a provider.
const maxRequestBytes = 32 << 20

// Serve relays one model request of the session whose spec this is: r is a
// request on the route contract.PathEgressModel (the provider from
// r.PathValue(contract.PathValueProvider), the provider's path from
// contract.PathValueRest), already authenticated as the session's. meter
// admits it and counts what it used.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, spec contract.Spec, meter Meter, log zerolog.Logger) {
	provider := r.PathValue(contract.PathValueProvider)
	refuse := func(status int, why string) {
		log.Warn().Str("provider", provider).Str("why", why).Msg("model request refused")
		contract.WriteError(w, status, contract.ErrorInvalid, why)
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
	if no := meter.Admit(r.Context()); no != nil {
		refuse(no.Status, no.Why)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		refuse(http.StatusRequestEntityTooLarge, "the request is too large")
		return
	}
	// The agent has a shell and can rewrite its CLI's settings: the model
	// it asks for is checked here, where it cannot reach.
	if why := modelRefusal(body, spec.Agent.Model); why != "" {
		refuse(http.StatusForbidden, why)
		return
	}
	rest := r.PathValue(contract.PathValueRest)
	if !contract.ValidEgressPath(rest) {
		// The router has unescaped it: %2e%2e arrives as "..".
		refuse(http.StatusForbidden, "not a path of the provider's API")
		return
	}
	target := strings.TrimSuffix(up.BaseURL, "/") + "/" + rest
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
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
	resp, err := p.client.Do(out)
	if err != nil {
		log.Warn().Str("provider", provider).Str("error", redactKey(err.Error(), up.Key)).Msg("the model provider is unreachable")
		contract.WriteError(w, http.StatusBadGateway, contract.ErrorInvalid, "the model provider is unreachable")
		return
	}
	defer resp.Body.Close()
	contract.CopyHeaders(w.Header(), resp.Header, contract.ModelResponseHeaders)
	w.WriteHeader(resp.StatusCode)
	m := &usageMeter{}
	contract.Stream(w, resp.Body, func(chunk []byte) []byte {
		if up.Key != "" && bytes.Contains(chunk, []byte(up.Key)) {
			// A provider that echoes the key (in an error) must not hand it to the sandbox.
			chunk = bytes.ReplaceAll(chunk, []byte(up.Key), []byte("[redacted]"))
		}
		m.Write(chunk)
		return chunk
	})
	u := m.usage()
	u.Requests = 1
	// Counted even when the sandbox went away mid-answer: the provider
	// charged for it.
	meter.Record(context.WithoutCancel(r.Context()), u)
}

func redactKey(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}
