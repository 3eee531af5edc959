package appsetup

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Options are one run of the flow.
type Options struct {
	// WebURL is GitHub's web root: https://github.com, or https://HOST
	// for GitHub Enterprise Server. The manifest is posted there.
	WebURL string
	// APIURL is GitHub's REST base: https://api.github.com/ or
	// https://HOST/api/v3/. The code is exchanged there.
	APIURL string
	// Org registers the App for an organisation; empty means the signed-in
	// user's personal account.
	Org string
	// Manifest is what ManifestOptions the page posts; its RedirectURL is
	// set by the flow to its own callback when empty.
	Manifest ManifestOptions
	// PageURL is the setup page's URL as the browser reaches it; empty
	// means http://<the listener's address>. Behind `ssh -L` it is the
	// local end of the tunnel.
	PageURL string
	// Client exchanges the code; nil means a client with a 30 s timeout.
	Client *http.Client
}

// orgRE is what an organisation login may be (GitHub: letters, digits and
// single hyphens, at most 39).
var orgRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)

// Flow serves the setup page and its callback.
type Flow struct {
	opts     Options
	state    string // the CSRF token GitHub hands back on the redirect
	manifest Manifest
	action   string // where the page's form posts
	page     string // the page URL, as the refusal of another Host names it
	hosts    map[string]bool

	once      sync.Once
	done      chan struct{}
	responded chan struct{} // closed once the callback that ended the flow has answered the browser
	app       App
	err       error
}

// NewFlow checks opts and prepares the page. pageURL is where the
// browser reaches the page (Options.PageURL or the listener's address).
func NewFlow(opts Options, pageURL string) (*Flow, error) {
	if err := absHTTP(opts.WebURL); err != nil {
		return nil, fmt.Errorf("the GitHub web URL: %w", err)
	}
	if err := absHTTP(opts.APIURL); err != nil {
		return nil, fmt.Errorf("the GitHub API URL: %w", err)
	}
	if opts.Org != "" && !orgRE.MatchString(opts.Org) {
		return nil, fmt.Errorf("the organisation %q is not a GitHub login", opts.Org)
	}
	if err := absHTTP(pageURL); err != nil {
		return nil, fmt.Errorf("the page URL: %w", err)
	}
	hosts, err := pageHosts(pageURL)
	if err != nil {
		return nil, fmt.Errorf("the page URL: %w", err)
	}
	if opts.Manifest.RedirectURL == "" {
		opts.Manifest.RedirectURL = strings.TrimSuffix(pageURL, "/") + "/callback"
	}
	m, err := NewManifest(opts.Manifest)
	if err != nil {
		return nil, err
	}
	state, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	web := strings.TrimSuffix(opts.WebURL, "/")
	action := web + "/settings/apps/new"
	if opts.Org != "" {
		action = web + "/organizations/" + url.PathEscape(opts.Org) + "/settings/apps/new"
	}
	action += "?state=" + url.QueryEscape(state)
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 30 * time.Second}
	}
	return &Flow{opts: opts, state: state, manifest: m, action: action, page: pageURL, hosts: hosts,
		done: make(chan struct{}), responded: make(chan struct{})}, nil
}

// Manifest is the manifest the page posts.
func (f *Flow) Manifest() Manifest { return f.manifest }

// Handler serves GET / (the page) and GET /callback (GitHub's redirect),
// only to requests for the page URL's host.
func (f *Flow) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", f.pageHandler)
	mux.HandleFunc("GET /callback", f.callback)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.hosts[hostKey(r.Host, f.defaultPort())] {
			// DNS rebinding (decision 0060): a name of the attacker's,
			// resolved to this host's loopback after their page loaded,
			// makes the page same-origin to them; the Host header still
			// carries their name. Refused before the page, which holds
			// the state token, and before the callback.
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = fmt.Fprintf(w, "inspect setup answers only at %s (the address it printed): open that address. "+
				"A request for any other host is refused, so that a page rebound to this address cannot read this one.\n", f.page) // a browser gone needs no answer
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// pageHosts is the Host headers the page answers: the page URL's host and
// port, and when that is a loopback address, the other names of loopback
// at the same port, so that `ssh -L PORT:127.0.0.1:PORT` serves the page
// as http://localhost:PORT/ as well as http://127.0.0.1:PORT/. A name of
// anyone else's never resolves to us without a rebinding.
func pageHosts(pageURL string) (map[string]bool, error) {
	u, err := url.Parse(pageURL)
	if err != nil {
		return nil, err
	}
	port := u.Port()
	if port == "" {
		port = schemePort(u.Scheme)
	}
	hosts := map[string]bool{hostKey(u.Host, port): true}
	if isLoopback(u.Hostname()) {
		for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
			hosts[hostKey(net.JoinHostPort(name, port), port)] = true
		}
	}
	return hosts, nil
}

// defaultPort is the port a Host header without one means: the page
// URL's scheme's.
func (f *Flow) defaultPort() string {
	u, err := url.Parse(f.page)
	if err != nil { // NewFlow parsed it already
		return ""
	}
	return schemePort(u.Scheme)
}

func schemePort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// hostKey is a Host header as the page compares it: the host in lower
// case and the port (defaultPort when it names none). An empty Host is
// no host's.
func hostKey(hostport, defaultPort string) string {
	if hostport == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), defaultPort
	}
	if port == "" {
		port = defaultPort
	}
	return net.JoinHostPort(strings.ToLower(host), port)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Done is closed once the callback has exchanged a code, or failed for
// good; Result then says which.
func (f *Flow) Done() <-chan struct{} { return f.done }

// Result is the App GitHub registered, or why there is none.
func (f *Flow) Result() (App, error) {
	<-f.done
	return f.app, f.err
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Register Inspect's GitHub App</title></head>
<body>
<h1>Register Inspect's GitHub App</h1>
<p>This posts Inspect's App manifest to <code>{{.Web}}</code> for {{if .Org}}the organisation <strong>{{.Org}}</strong>{{else}}your personal account{{end}}.
GitHub asks you to confirm, then sends you back here, and <code>inspect setup</code> writes the server's config.</p>
<p>Webhooks will go to <code>{{.Hook}}</code>.</p>
<form id="register" method="post" action="{{.Action}}">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button id="submit" type="submit">Register on GitHub</button>
</form>
</body></html>
`))

var donePage = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Inspect's GitHub App</title></head>
<body><h1 id="result">{{.}}</h1><p>Go back to the terminal where <code>inspect setup</code> runs.</p></body></html>
`))

func (f *Flow) pageHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page holds the state token: no caching, no framing.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	// A failed write is the browser gone; the response has begun, so
	// there is nothing else to tell it.
	_ = pageTemplate.Execute(w, map[string]any{
		"Web": f.opts.WebURL, "Org": f.opts.Org, "Hook": f.manifest.HookAttributes.URL,
		"Action": f.action, "Manifest": string(f.manifest.JSON()),
	})
}

func (f *Flow) callback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.state)) != 1 {
		// Not GitHub's redirect for this run's page: ignore it, keep waiting.
		w.WriteHeader(http.StatusBadRequest)
		_ = donePage.Execute(w, "This is not the redirect of this run of inspect setup (its state does not match).") // a browser page; nothing to do if it fails
		return
	}
	code := q.Get("code")
	if code == "" || len(code) > 256 || strings.ContainsAny(code, "/?#% ") {
		w.WriteHeader(http.StatusBadRequest)
		_ = donePage.Execute(w, "GitHub's redirect carried no usable code.") // as above
		return
	}
	handled := false
	f.once.Do(func() {
		handled = true
		f.app, f.err = Convert(r.Context(), f.opts.Client, f.opts.APIURL, code)
		close(f.done)
	})
	if handled {
		defer func() {
			// Out of the buffer before Serve closes the connection.
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			close(f.responded)
		}()
	} else {
		w.WriteHeader(http.StatusConflict)
		_ = donePage.Execute(w, "This run of inspect setup has already received its code.") // as above
		return
	}
	if f.err != nil {
		w.WriteHeader(http.StatusBadGateway)
		_ = donePage.Execute(w, "Exchanging the code failed: "+f.err.Error()) // as above
		return
	}
	_ = donePage.Execute(w, "Registered "+f.app.Name+" ("+f.app.HTMLURL+").") // as above
}

// Serve serves the flow on ln until a code was exchanged (or failed) or
// ctx ends, then shuts the listener down.
func (f *Flow) Serve(ctx context.Context, ln net.Listener) (App, error) {
	srv := &http.Server{Handler: f.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var app App
	var err error
	serveReturned := false
	select {
	case <-f.done:
		app, err = f.app, f.err
		// The flow ended with a callback: let its page reach the browser.
		select {
		case <-f.responded:
		case <-ctx.Done():
		}
	case <-ctx.Done():
		err = ctx.Err()
	case serr := <-served:
		serveReturned = true
		err = fmt.Errorf("the setup page stopped: %w", serr)
	}
	if serveReturned {
		return app, err
	}
	// Close, not Shutdown: browsers hold preconnected connections open,
	// which Shutdown would wait on; nothing else is in flight.
	if cerr := srv.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("stopping the setup page: %w", cerr)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return app, err
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}
