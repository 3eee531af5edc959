package channel

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/contract"
)

// The registry egress (decision 0018): a package manager in the sandbox
// asks the forwarder for a path of its registry's protocol; the supervisor
// relays GET and HEAD to this route with the session token; here the
// request is checked against the session's spec and the kind's protocol
// (policy.DecideRegistryRequest), the upstream's credential is added, and
// the answer is streamed back: artifacts byte for byte, metadata with its
// links pointed back at the proxy (hashes untouched).

// Registries are the server's registry upstreams (egress.registries);
// config.Server implements it.
type Registries interface {
	Registry(name string) (config.Registry, bool)
}

// maxRegistryMetadataBytes bounds a metadata document the proxy rewrites
// (the largest npm packuments are tens of MB).
const maxRegistryMetadataBytes = 128 << 20

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

func (c *Channel) handleEgressRegistry(rw http.ResponseWriter, r *http.Request) {
	w := liftTimeouts(rw, c.egressIdle)
	a := attemptOf(r)
	start := c.clock.Now()
	name := r.PathValue(contract.PathValueRegistry)
	log := c.channelLog(r).With().Str("registry", name).Str("method", r.Method).Logger()
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
	// Only session attempts get here: authed refuses a snapshot build's
	// token on a session's routes (snapshot setup reaches no registry yet).
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "the attempt's spec is unreadable")
		return
	}
	var allowed []string
	var sreg *contract.Registry
	for i := range spec.Registries {
		allowed = append(allowed, spec.Registries[i].Name)
		if spec.Registries[i].Name == name {
			sreg = &spec.Registries[i]
		}
	}
	if sreg == nil {
		refuse(fmt.Sprintf("this session reaches no registry named %q; it may reach: %s", name, orNone(allowed)), false)
		return
	}
	if c.registries == nil {
		refuse("the server configures no registries", false)
		return
	}
	up, ok := c.registries.Registry(name)
	if !ok || up.Kind != sreg.Kind {
		refuse(fmt.Sprintf("the server no longer configures the registry %q", name), false)
		return
	}
	if r.URL.RawQuery != "" {
		refuse("registry requests carry no query string", false)
		return
	}
	d := policy.DecideRegistryRequest(up.Kind, r.Method, rest)
	if !d.Allowed {
		refuse(d.Why, d.Quiet)
		return
	}
	target, err := registryTarget(up, rest)
	if err != nil {
		refuse(err.Error(), false)
		return
	}
	client, err := c.registryClient(name, up)
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
	if err := setRegistryCredential(req, up); err != nil {
		log.Error().Err(err).Msg("the registry's token is unreadable")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "the registry is not available")
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		log.Warn().Str("path", rest).Str("error", redactURLError(err)).Msg("registry upstream unreachable")
		http.Error(w, "the registry upstream is unreachable", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body := io.Reader(resp.Body)
	rewrite := d.Class == policy.RegistryMetadata && resp.StatusCode == http.StatusOK && r.Method == http.MethodGet && up.Kind != policy.RegistryGoProxy
	if rewrite {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRegistryMetadataBytes+1))
		if err != nil || len(raw) > maxRegistryMetadataBytes {
			log.Warn().Str("path", rest).Msg("registry metadata unreadable or too large")
			http.Error(w, "the registry's answer is unreadable or too large", http.StatusBadGateway)
			return
		}
		raw = pointLinksAtProxy(raw, up, name)
		body = bytes.NewReader(raw)
		resp.Header.Set("Content-Length", fmt.Sprint(len(raw)))
		resp.Header.Del("ETag") // the body is no longer the upstream's
	}
	contract.CopyHeaders(w.Header(), resp.Header, contract.RegistryResponseHeaders)
	w.WriteHeader(resp.StatusCode)
	n, _ := io.Copy(w, body) // a client that went away ends the copy; nothing to tell it
	log.Info().Str("path", rest).Str("class", string(d.Class)).Int("status", resp.StatusCode).Int64("bytes", n).
		Dur("took", c.clock.Now().Sub(start)).Msg("registry request")
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

// pointLinksAtProxy rewrites a metadata document's links to the upstream
// (npm's dist.tarball, a PyPI index's file links) so that they lead back
// through the proxy. Only the URL's prefix changes: the path, and the
// "#sha256=" fragment or "integrity" beside it, stay as they were.
func pointLinksAtProxy(doc []byte, up config.Registry, name string) []byte {
	base := contract.RegistryBaseURL(name)
	switch up.Kind {
	case policy.RegistryNPM:
		return bytes.ReplaceAll(doc, []byte(strings.TrimSuffix(up.URL, "/")+"/"), []byte(base))
	case policy.RegistryPyPI:
		return bytes.ReplaceAll(doc, []byte(strings.TrimSuffix(filesBase(up), "/")+"/"), []byte(base+"files/"))
	}
	return doc
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

// registryClients holds one client per registry, made on first use.
type registryClients struct {
	mu      sync.Mutex
	clients map[string]*http.Client
}

// registryClient is the client for the upstream: its CA bundle, no
// redirect but to the upstream's own hosts (which carry the credential
// only where it was meant to go), and timeouts on connecting and on the
// first byte; the body is bounded by the session's deadline, not by a
// server timeout.
func (c *Channel) registryClient(name string, up config.Registry) (*http.Client, error) {
	c.regClients.mu.Lock()
	defer c.regClients.mu.Unlock()
	if cl, ok := c.regClients.clients[name]; ok {
		return cl, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 2 * time.Minute
	if up.CAFile != "" {
		pem, err := os.ReadFile(up.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the registry's CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool() // none on this host: the file's CAs alone
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("the registry's CA file holds no certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	hosts := map[string]bool{}
	for _, b := range []string{up.URL, up.FilesURL} {
		if u, err := url.Parse(b); err == nil && u.Host != "" {
			hosts[strings.ToLower(u.Host)] = true
		}
	}
	cl := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		if !hosts[strings.ToLower(req.URL.Host)] || req.URL.Scheme != via[0].URL.Scheme {
			return fmt.Errorf("a redirect to %s, which this registry's config does not name", req.URL.Host)
		}
		return nil
	}}
	if c.regClients.clients == nil {
		c.regClients.clients = map[string]*http.Client{}
	}
	c.regClients.clients[name] = cl
	return cl, nil
}
