package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner/contract"
)

// The model proxy: the far end of the sandbox's only way out. A model
// request arrives on the session channel's egress route with the attempt's
// session token; the app sends it to the provider the server configures
// for the session's agent, adding the provider's key (which never leaves
// the app), counts the tokens the provider reports, and ends the session
// when they pass its budget.

// modelUpstream is a provider's API as the server configures it.
type modelUpstream struct {
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
func (c *Channel) upstreamFor(spec contract.Spec, name string) (modelUpstream, bool, error) {
	if spec.Agent.Provider == "" || spec.Agent.Provider != name {
		return modelUpstream{}, false, nil
	}
	p, ok := c.providers.Provider(name)
	if !ok {
		return modelUpstream{}, false, nil
	}
	key, err := p.APIKey()
	if err != nil {
		return modelUpstream{}, false, err
	}
	return modelUpstream{BaseURL: p.BaseURL, Kind: p.Kind, Key: key}, true, nil
}

// maxModelRequestBytes bounds one request to a provider.
const maxModelRequestBytes = 32 << 20

func (c *Channel) handleEgressModel(rw http.ResponseWriter, r *http.Request) {
	w := liftTimeouts(rw, c.egressIdle)
	a := attemptOf(r)
	log := c.channelLog(r)
	provider := r.PathValue(contract.PathValueProvider)
	refuse := func(status int, why string) {
		log.Warn().Str("provider", provider).Str("why", why).Msg("model request refused")
		contract.WriteError(w, status, contract.ErrorInvalid, why)
	}
	if a.Kind == string(contract.KindSnapshot) {
		refuse(http.StatusForbidden, "snapshot builds reach no model")
		return
	}
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		refuse(http.StatusServiceUnavailable, "the attempt's spec is unreadable")
		return
	}
	up, ok, err := c.upstreamFor(spec, provider)
	if err != nil {
		log.Error().Err(err).Str("provider", provider).Msg("the provider's key is unreadable")
		refuse(http.StatusServiceUnavailable, "the model provider is not available")
		return
	}
	if !ok {
		refuse(http.StatusForbidden, "this session's agent uses no provider named "+provider)
		return
	}
	used, err := c.store.SessionUsage(r.Context(), a.ID)
	if err != nil {
		refuse(http.StatusServiceUnavailable, "try again")
		return
	}
	if budget := c.tokenBudget; budget > 0 && used.TotalTokens >= budget {
		c.engine.EndForBudget(r.Context(), a, used, budget)
		refuse(http.StatusTooManyRequests, "the session's token budget is spent")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxModelRequestBytes))
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
	case "anthropic":
		out.Header.Set("X-Api-Key", up.Key)
	default:
		out.Header.Set("Authorization", "Bearer "+up.Key)
	}
	resp, err := c.modelClient.Do(out)
	if err != nil {
		log.Warn().Str("provider", provider).Str("error", redactKey(err.Error(), up.Key)).Msg("the model provider is unreachable")
		contract.WriteError(w, http.StatusBadGateway, contract.ErrorInvalid, "the model provider is unreachable")
		return
	}
	defer resp.Body.Close()
	contract.CopyHeaders(w.Header(), resp.Header, contract.ModelResponseHeaders)
	w.WriteHeader(resp.StatusCode)
	meter := &usageMeter{}
	contract.Stream(w, resp.Body, func(chunk []byte) []byte {
		if up.Key != "" && bytes.Contains(chunk, []byte(up.Key)) {
			// A provider that echoes the key (in an error) must not hand it to the sandbox.
			chunk = bytes.ReplaceAll(chunk, []byte(up.Key), []byte("[redacted]"))
		}
		meter.Write(chunk)
		return chunk
	})
	u := meter.usage()
	u.Requests = 1
	total, err := c.store.AddUsage(context.WithoutCancel(r.Context()), a.ID, u, c.clock.Now())
	if err != nil {
		log.Error().Err(err).Msg("recording the token usage failed")
		return
	}
	if budget := c.tokenBudget; budget > 0 && total.TotalTokens > budget {
		c.engine.EndForBudget(context.WithoutCancel(r.Context()), a, total, budget)
	}
}

// usageMeter finds the token counts a provider reports in its answer: the
// usage object of a streamed completion event (OpenAI Responses'
// response.completed; Anthropic's message_start and message_delta) or of a
// whole JSON body.
type usageMeter struct {
	line  []byte
	body  bytes.Buffer
	found store.Usage
	sse   bool
}

// maxMeteredBody bounds what is kept of a non-streamed body to find its usage.
const maxMeteredBody = 8 << 20

func (m *usageMeter) Write(p []byte) {
	if m.body.Len() < maxMeteredBody {
		m.body.Write(p[:min(len(p), maxMeteredBody-m.body.Len())])
	}
	for _, b := range p {
		if b != '\n' {
			if len(m.line) < maxMeteredBody {
				m.line = append(m.line, b)
			}
			continue
		}
		if data, ok := bytes.CutPrefix(bytes.TrimRight(m.line, "\r"), []byte("data:")); ok {
			m.sse = true
			m.add(bytes.TrimSpace(data))
		}
		m.line = m.line[:0]
	}
}

func (m *usageMeter) usage() store.Usage {
	if !m.sse {
		m.add(m.body.Bytes())
	}
	u := m.found
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return u
}

type usageJSON struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// add counts the usage in one JSON event or body. A Responses stream
// reports it once, in response.completed; an Anthropic stream reports the
// input in message_start and the output so far in each message_delta.
func (m *usageMeter) add(doc []byte) {
	var ev struct {
		Type     string     `json:"type"`
		Usage    *usageJSON `json:"usage"`
		Response *struct {
			Usage *usageJSON `json:"usage"`
		} `json:"response"`
		Message *struct {
			Usage *usageJSON `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(doc, &ev) != nil {
		return
	}
	switch {
	case ev.Type == "message_start" && ev.Message != nil && ev.Message.Usage != nil:
		m.found.InputTokens += ev.Message.Usage.InputTokens
	case ev.Type == "message_delta" && ev.Usage != nil:
		m.found.OutputTokens = max(m.found.OutputTokens, ev.Usage.OutputTokens) // cumulative
	case ev.Response != nil && ev.Response.Usage != nil:
		m.count(*ev.Response.Usage)
	case ev.Usage != nil && ev.Type == "":
		m.count(*ev.Usage) // a whole body
	}
}

func (m *usageMeter) count(u usageJSON) {
	m.found.InputTokens += u.InputTokens + u.PromptTokens
	m.found.OutputTokens += u.OutputTokens + u.CompletionTokens
	m.found.TotalTokens += u.TotalTokens
}

func redactKey(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// NewModelClient is the proxy's client to providers: no proxy from the
// environment is honoured implicitly beyond Go's defaults, redirects are
// not followed (they would carry the key elsewhere), and a stuck provider
// cannot hold a request past the session's own limits.
func NewModelClient() *http.Client {
	return &http.Client{
		Timeout:       30 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// modelRefusal says why a model request's body is refused ("" when it is
// not): it must be empty or one JSON object, and its only key naming a
// model must be exactly "model", once, with the session's model or none.
// Decoders disagree where JSON is loose: Go matches keys regardless of
// case with the last one winning, others take the first of two equal
// keys, and providers read the exact key. So {"model":"x","Model":"ok"}
// and {"model":"x","model":"ok"} are both refused.
func modelRefusal(body []byte, allowed string) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	const notObject = "the request body is not one JSON object"
	only := "this session's agent may use only the model " + allowed
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return notObject
	}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		var value json.RawMessage
		if err != nil || !isKey || dec.Decode(&value) != nil {
			return notObject
		}
		if !strings.EqualFold(key, "model") {
			continue
		}
		var model string
		if seen || key != "model" || json.Unmarshal(value, &model) != nil || model != "" && model != allowed {
			return only
		}
		seen = true
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return notObject // something after the object
	}
	return ""
}
