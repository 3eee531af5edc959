package registryproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
)

// registryClients holds one client pair per registry, made on first use.
type registryClients struct {
	// redirectsReachLoopback lets a redirect hop dial loopback: tests
	// only (Options.RedirectsReachLoopback).
	redirectsReachLoopback bool

	mu      sync.Mutex
	clients map[string]*registryClient
}

// registryClient is what the proxy fetches a registry's answers with.
// Neither client follows a redirect itself: Proxy.fetch decides each hop
// (policy.DecideRegistryRedirect) and picks the client for it.
type registryClient struct {
	// upstream reaches the registry's own hosts (url, files_url) with
	// its credential, wherever they are: the operator named them.
	upstream *http.Client
	// offsite reaches a redirect_hosts host, with no credential, and
	// dials only public addresses (policy.PublicRegistryAddress), the
	// address checked as the connection is made so that a name which
	// resolves to an inside address, then or later, gets nowhere. It
	// goes direct, never through an environment's HTTP proxy, whose
	// address is what it would otherwise check.
	offsite *http.Client
	// upstreamHosts are the hosts of url and files_url, as URLs carry
	// them (host or host:port).
	upstreamHosts []string
}

// get is the client pair for the upstream: its CA bundle (for both, as a
// private registry's storage may share its CA), and timeouts on
// connecting and on the first byte; the body is bounded by the session's
// deadline, not by a server timeout.
func (rc *registryClients) get(name string, up config.Registry) (*registryClient, error) {
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
	off := tr.Clone()
	off.Proxy = nil
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: publicOnly(rc.redirectsReachLoopback)}
	off.DialContext = dialer.DialContext
	noFollow := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cl := &registryClient{
		upstream: &http.Client{Transport: tr, CheckRedirect: noFollow},
		offsite:  &http.Client{Transport: off, CheckRedirect: noFollow},
	}
	for _, b := range []string{up.URL, up.FilesURL} {
		if u, err := url.Parse(b); err == nil && u.Host != "" {
			cl.upstreamHosts = append(cl.upstreamHosts, u.Host)
		}
	}
	if rc.clients == nil {
		rc.clients = map[string]*registryClient{}
	}
	rc.clients[name] = cl
	return cl, nil
}

// errNotPublic is a redirect hop's dial refused by its address.
var errNotPublic = errors.New("the address is not public")

// publicOnly is a dialer's Control: it sees the address about to be
// connected to, after name resolution, and refuses what
// policy.PublicRegistryAddress refuses (loopback too, unless
// reachLoopback, for a test's storage listener on 127.0.0.1).
func publicOnly(reachLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %q is no IP address", errNotPublic, address)
		}
		ip := ap.Addr().Unmap()
		if reachLoopback && ip.IsLoopback() {
			return nil
		}
		if ok, why := policy.PublicRegistryAddress(ip); !ok {
			return fmt.Errorf("%w: %s is %s", errNotPublic, ip, why)
		}
		return nil
	}
}

// errRedirectRefused is a redirect the egress does not follow.
type errRedirectRefused struct{ why string }

func (e errRedirectRefused) Error() string { return e.why }

// fetch sends req, for path below the registry's base, to the upstream
// and follows its redirects as policy allows: to the registry's own hosts
// with the credential, to its redirect_hosts without, never more than
// policy.MaxRegistryRedirects. Each hop is a fresh request carrying only
// the headers req was given from the sandbox's allowlist, plus the
// credential where it may go.
func (cl *registryClient) fetch(ctx context.Context, req *http.Request, up config.Registry, class policy.RegistryClass, path string) (*http.Response, error) {
	resp, err := cl.upstream.Do(req)
	for hop := 1; err == nil && isRedirect(resp.StatusCode); hop++ {
		to, lerr := resp.Location()
		drain(resp)
		if lerr != nil {
			return nil, errRedirectRefused{"a redirect with no usable Location"}
		}
		d := policy.DecideRegistryRedirect(policy.RegistryRedirect{
			Kind: up.Kind, Class: class, Path: path, Hop: hop, FromScheme: req.URL.Scheme, To: to,
			UpstreamHosts: cl.upstreamHosts, RedirectHosts: up.RedirectHostsOrDefault(),
		})
		if !d.Allowed {
			return nil, errRedirectRefused{d.Why}
		}
		next, nerr := http.NewRequestWithContext(ctx, req.Method, to.String(), nil)
		if nerr != nil {
			return nil, errRedirectRefused{"a redirect that makes no request"}
		}
		for k, v := range req.Header {
			if k != "Authorization" {
				next.Header[k] = v
			}
		}
		client := cl.offsite
		if d.Credential {
			if cerr := setRegistryCredential(next, up); cerr != nil {
				return nil, cerr
			}
			client = cl.upstream
		}
		resp, err = client.Do(next)
	}
	return resp, err
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// drain reads a little of a body nobody wants, so that its connection can
// be reused, and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // only for reuse; an error just closes it
	_ = resp.Body.Close()                                         // nothing to do about a failed close of a discarded body
}
