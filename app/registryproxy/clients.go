package registryproxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/inspecthq/inspect/config"
)

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
func (rc *registryClients) get(name string, up config.Registry) (*http.Client, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if cl, ok := rc.clients[name]; ok {
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
	if rc.clients == nil {
		rc.clients = map[string]*http.Client{}
	}
	rc.clients[name] = cl
	return cl, nil
}
