// Package registryproxy is the far end of the registry egress (decision
// 0018): it checks a relayed request against what its attempt was given
// and the kind's protocol, adds the upstream's credential, and answers,
// from a shared cache of immutable artifacts when it can (decision 0019).
package registryproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// The registry egress: a package manager in the sandbox asks the
// forwarder for a path of its registry's protocol; the supervisor relays
// GET and HEAD to the channel's registry route with the attempt's token;
// here the request is checked against the attempt's registries and the
// kind's protocol (policy.DecideRegistryRequest), the upstream's credential
// is added, and the answer is streamed back: artifacts byte for byte,
// metadata with its links pointed back at the proxy (hashes untouched).

// Upstreams are the server's registry upstreams (egress.registries);
// config.Server implements it.
type Upstreams interface {
	Registry(name string) (config.Registry, bool)
}

// registryRefusal is the JSON body of every refusal: what was refused and
// what is served instead.
func writeRegistryRefusal(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	body, _ := json.Marshal(map[string]any{"error": map[string]string{ // a map of strings always marshals
		"type":    "inspect_egress_refused",
		"message": "Inspect's registry egress refused this request: " + why,
	}})
	_, _ = w.Write(body) // a failed write to a gone client needs no handling
}

// Proxy answers registry requests that an attempt's supervisor relays:
// the channel's registry route, and `inspect run`'s, hand it each request
// once they know which registries the attempt was given.
type Proxy struct {
	upstreams Upstreams
	cache     *Cache
	clock     func() time.Time
	clients   registryClients
	turns     *turns
}

// Options are a Proxy's parts.
type Options struct {
	// Upstreams are the server's registries (egress.registries).
	Upstreams Upstreams
	// Cache keeps immutable artifacts for every attempt the proxy serves;
	// nil keeps none.
	Cache *Cache
	// Now is the clock for the log's timings (time.Now when nil).
	Now func() time.Time
	// RedirectsReachLoopback lets a redirect to a redirect_hosts host
	// dial a loopback address, which is otherwise refused with every
	// private and link-local one (decision 0052). Tests only: a
	// stand-in's storage listener is on 127.0.0.1. No config key sets it.
	RedirectsReachLoopback bool
	// MaxInFlightPerAttempt and MaxInFlight cap the requests in flight
	// for one attempt and in all (egress.max_registry_requests_per_attempt,
	// egress.max_registry_requests; their defaults when 0); more wait
	// their turn.
	MaxInFlightPerAttempt, MaxInFlight int
}

// New wires a Proxy.
func New(o Options) *Proxy {
	perAttempt, perProcess := o.MaxInFlightPerAttempt, o.MaxInFlight
	if perAttempt <= 0 {
		perAttempt = config.DefaultMaxRegistryRequestsPerAttempt
	}
	if perProcess <= 0 {
		perProcess = config.DefaultMaxRegistryRequests
	}
	p := &Proxy{upstreams: o.Upstreams, cache: o.Cache, clock: o.Now, clients: registryClients{redirectsReachLoopback: o.RedirectsReachLoopback},
		turns: newTurns(perAttempt, perProcess)}
	if p.clock == nil {
		p.clock = time.Now
	}
	return p
}

// Serve answers one registry request: r arrived on the route
// contract.PathEgressRegistry for attempt, and allowed are the registries
// its attempt was given (a session's spec, a snapshot build's job). It
// refuses what allowed, the server's config or the kind's protocol does
// not allow, with a 403 whose body says why; otherwise, once the request
// has its turn (the caps on requests in flight, per attempt and in all),
// it adds the upstream's credential and streams the answer back, from the
// cache when the request is for an artifact the cache holds.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, attempt string, allowed []contract.Registry, log zerolog.Logger) {
	start := p.clock()
	name := r.PathValue(contract.PathValueRegistry)
	log = log.With().Str("registry", name).Str("method", r.Method).Logger()
	// The path as it arrived, still escaped: a scoped npm name travels as
	// "@scope%2fname", and what the protocol means by it must not change
	// on the way.
	marker := "/egress/registry/" + name + "/"
	escaped := r.URL.EscapedPath()
	i := strings.Index(escaped, marker)
	if i < 0 {
		writeRegistryRefusal(w, "malformed registry path")
		return
	}
	rest := escaped[i+len(marker):]
	refuse := func(why string, quiet bool) {
		ev := log.Warn()
		if quiet {
			ev = log.Debug()
		}
		ev.Str("path", rest).Str("why", why).Msg("registry request refused")
		writeRegistryRefusal(w, why)
	}
	var names []string
	var sreg *contract.Registry
	for i := range allowed {
		names = append(names, allowed[i].Name)
		if allowed[i].Name == name {
			sreg = &allowed[i]
		}
	}
	if sreg == nil {
		refuse(fmt.Sprintf("this attempt reaches no registry named %q; it may reach: %s", name, orNone(names)), false)
		return
	}
	if p.upstreams == nil {
		refuse("the server configures no registries", false)
		return
	}
	up, ok := p.upstreams.Registry(name)
	if !ok || up.Kind != sreg.Kind {
		refuse(fmt.Sprintf("the server no longer configures the registry %q", name), false)
		return
	}
	if r.URL.RawQuery != "" {
		refuse("registry requests carry no query string", false)
		return
	}
	d := policy.DecideRegistryRequest(policy.RegistryRule{Kind: up.Kind, SumDB: up.SumDBOrDefault()}, r.Method, rest)
	if !d.Allowed {
		refuse(d.Why, d.Quiet)
		return
	}
	// Past the checks, the request waits for its turn: what it holds
	// from here (an upstream connection, buffers, a cached file) is
	// bounded by the caps, however many a sandbox sends at once.
	if err := p.turns.wait(r.Context(), attempt); err != nil {
		log.Debug().Str("path", rest).Dur("waited", p.clock().Sub(start)).Msg("registry request ended waiting its turn")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "the request ended while it waited its turn")
		return
	}
	defer p.turns.done(attempt)
	waited := p.clock().Sub(start)
	key := ""
	if d.Class == policy.RegistryArtifact && p.cache != nil {
		key = CacheKey(name, up, rest)
		if p.serveCached(w, r, key) {
			log.Info().Str("path", rest).Str("class", string(d.Class)).Bool("cached", true).
				Dur("took", p.clock().Sub(start)).Msg("registry request")
			return
		}
	}
	target, err := registryTarget(up, rest)
	if err != nil {
		refuse(err.Error(), false)
		return
	}
	client, err := p.clients.get(name, up)
	if err != nil {
		log.Error().Err(err).Msg("the registry's client cannot be made")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "the registry is not available")
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target, nil)
	if err != nil {
		refuse("the path does not make a URL", false)
		return
	}
	contract.CopyHeaders(req.Header, r.Header, contract.RegistryRequestHeaders)
	if key != "" {
		// A cached copy is filled from a whole answer only: a 304 would
		// leave nothing to keep.
		req.Header.Del("If-None-Match")
		req.Header.Del("If-Modified-Since")
	}
	if err := setRegistryCredential(req, up); err != nil {
		log.Error().Err(err).Msg("the registry's token is unreadable")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "the registry is not available")
		return
	}
	resp, err := client.fetch(r.Context(), req, up, d.Class, rest)
	var refused errRedirectRefused
	if errors.As(err, &refused) {
		log.Warn().Str("path", rest).Str("why", refused.why).Msg("registry redirect not followed")
		http.Error(w, "the registry upstream redirected where Inspect's registry egress does not follow: "+refused.why, http.StatusBadGateway)
		return
	}
	if errors.Is(err, errNotPublic) {
		log.Warn().Str("path", rest).Str("error", redactURLError(err)).Msg("registry redirect not followed")
		http.Error(w, "the registry upstream redirected to an address Inspect's registry egress never reaches (loopback, private or link-local)", http.StatusBadGateway)
		return
	}
	if err != nil {
		log.Warn().Str("path", rest).Str("error", redactURLError(err)).Msg("registry upstream unreachable")
		http.Error(w, "the registry upstream is unreachable", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body := io.Reader(resp.Body)
	if old, proxied, ok := linkPrefixes(up, name); ok && d.Class == policy.RegistryMetadata && resp.StatusCode == http.StatusOK && r.Method == http.MethodGet {
		// Rewritten as it streams, a chunk at a time, never held whole
		// (decision 0059): its length is known only at its end, so it
		// goes chunked.
		body = newLinkRewriter(resp.Body, old, proxied)
		resp.Header.Del("Content-Length")
		resp.Header.Del("ETag") // the body is no longer the upstream's
	}
	upstream := &readErrors{r: body}
	body = upstream
	var fill *Filling
	if key != "" && resp.StatusCode == http.StatusOK && r.Method == http.MethodGet {
		fill = p.cache.Fill(key, resp.Header, resp.ContentLength)
		if fill != nil {
			body = io.TeeReader(body, fill)
		}
	}
	contract.CopyHeaders(w.Header(), resp.Header, contract.RegistryResponseHeaders)
	w.WriteHeader(resp.StatusCode)
	n, copyErr := io.Copy(w, body) // a client that went away ends the copy; nothing to tell it
	if fill != nil {
		// Kept only when the whole body came and reached the client: a
		// cut download is never served to the next session.
		fill.Finish(copyErr == nil)
	}
	log.Info().Str("path", rest).Str("class", string(d.Class)).Int("status", resp.StatusCode).Int64("bytes", n).
		Dur("waited", waited).Dur("took", p.clock().Sub(start)).Msg("registry request")
	if upstream.err != nil {
		// The upstream's body was cut. An answer without a length (a
		// rewritten document, a chunked upstream's) would otherwise end
		// as if whole: the connection is cut instead, so the client sees
		// a broken answer, never a short one. Whatever the request's
		// context says: net/http cancels it for reasons of its own (a
		// read deadline that passes, on HTTP/1.1) while the client still
		// reads, and a normal return would then end the body properly.
		log.Warn().Str("path", rest).Str("error", redactURLError(upstream.err)).Msg("registry upstream's answer cut")
		panic(http.ErrAbortHandler)
	}
}

// readErrors passes a body on and keeps the error, other than its end,
// that reading it met.
type readErrors struct {
	r   io.Reader
	err error
}

func (e *readErrors) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// serveCached answers from the cache when it holds key; false when it
// does not (or the entry could not be read), and nothing has been written.
func (p *Proxy) serveCached(w http.ResponseWriter, r *http.Request, key string) bool {
	hit, ok := p.cache.Open(key)
	if !ok {
		return false
	}
	defer hit.Close()
	contract.CopyHeaders(w.Header(), hit.Header, contract.RegistryResponseHeaders)
	w.Header().Set("Content-Length", fmt.Sprint(hit.Size))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = io.Copy(w, hit) // a client that went away ends the copy; nothing to tell it
	}
	return true
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// registryTarget is the upstream URL for rest: the base joined with the
// path, or for PyPI's files/ the files base (files_url, or the index's own
// host) with the rest of the path.
func registryTarget(up config.Registry, rest string) (string, error) {
	base := up.URL
	if f, ok := strings.CutPrefix(rest, "files/"); ok && up.Kind == policy.RegistryPyPI {
		base, rest = filesBase(up), f
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/") + "/" + rest)
	if err != nil {
		return "", errors.New("the path does not make a URL")
	}
	return u.String(), nil
}

func filesBase(up config.Registry) string {
	if up.FilesURL != "" {
		return up.FilesURL
	}
	return up.URL
}

// setRegistryCredential adds the upstream's token, as it asks for it.
func setRegistryCredential(req *http.Request, up config.Registry) error {
	tok, err := up.Credential()
	if err != nil || tok == "" {
		return err
	}
	if up.Auth == "basic" {
		user := up.Username
		if user == "" {
			user = "__token__"
		}
		req.SetBasicAuth(user, tok)
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

// redactURLError keeps a transport error's words without its URL, which
// names the upstream but could carry what a mistyped config put there.
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}
