package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/inspecthq/inspect/app/appsetup"
	"github.com/inspecthq/inspect/config"
)

// defaultSetupListen is loopback: the page hands out nothing secret, but
// the callback is where the App's credentials arrive.
const defaultSetupListen = "127.0.0.1:3000"

func setupCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: inspect setup --public-url URL [flags]

Registers Inspect's GitHub App through GitHub's App manifest flow: serves a
local page that posts the manifest to GitHub, takes GitHub's redirect,
exchanges its code, and writes a server config, the App's private key and
its secrets (each 0600) into --dir. On a remote host, forward the page:
  ssh -L 3000:127.0.0.1:3000 HOST
and open http://127.0.0.1:3000/ (or http://localhost:3000/) in your browser.
The page answers only requests for its own host (--page-url's, else the
listener's address), so a page of another site that rebinds its name to
this address cannot read it.

`)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", defaultSetupListen, "address the setup page listens on")
	pageURL := fs.String("page-url", "", "the page's URL as the browser reaches it (default http://<listen address>/); the page answers only requests for its host")
	webURL := fs.String("github-url", "https://github.com", "GitHub's web root, or https://HOST for GitHub Enterprise Server")
	apiURL := fs.String("api-url", "", "GitHub's REST base (default https://api.github.com/; https://api.SUBDOMAIN.ghe.com/ for GHE.com; <github-url>/api/v3/ for Enterprise Server)")
	org := fs.String("org", "", "register the App for this organisation (default: your personal account)")
	publicURL := fs.String("public-url", "", "where GitHub reaches inspect serve, e.g. https://inspect.example.com (required)")
	name := fs.String("name", "", "the App's name on GitHub (default Inspect; names are unique on GitHub)")
	dir := fs.String("dir", "", "directory to write the config and credentials into (default $XDG_CONFIG_HOME/inspect or ~/.config/inspect)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *publicURL == "" {
		fmt.Fprintln(stderr, "inspect setup: --public-url is required: the App's webhooks go to <public-url>"+appsetup.HookPath)
		return 2
	}
	api := *apiURL
	if api == "" {
		api = defaultAPIURL(*webURL)
	}
	out := *dir
	if out == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			fmt.Fprintf(stderr, "inspect setup: no --dir and no config directory: %v\n", err)
			return 2
		}
		out = filepath.Join(base, "inspect")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "inspect setup: %v\n", err)
		return 1
	}
	page := *pageURL
	if page == "" {
		page = "http://" + browserAddr(ln.Addr().(*net.TCPAddr)) + "/"
	}
	flow, err := appsetup.NewFlow(appsetup.Options{
		WebURL: *webURL, APIURL: api, Org: *org, PageURL: page,
		Manifest: appsetup.ManifestOptions{Name: *name, PublicURL: *publicURL},
	}, page)
	if err != nil {
		_ = ln.Close() // the flow's error is the one to report
		fmt.Fprintf(stderr, "inspect setup: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "Open %s in a browser to register the App on %s.\n", page, *webURL)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app, err := flow.Serve(ctx, ln)
	if err != nil {
		fmt.Fprintf(stderr, "inspect setup: %v\n", err)
		return 1
	}
	w, err := appsetup.Write(out, app, appsetup.ServerKeys{APIURL: api, WebURL: *webURL, PublicURL: strings.TrimSuffix(*publicURL, "/")})
	if err != nil {
		// The App exists on GitHub now; say so, or the operator is left
		// with an App and no key.
		fmt.Fprintf(stderr, "inspect setup: GitHub registered %s (%s), but writing its credentials failed: %v\n"+
			"Delete the App there and run inspect setup again.\n", app.Slug, app.HTMLURL, err)
		return 1
	}
	fmt.Fprintf(stdout, "Registered %s (App id %d) for %s. Wrote %s, %s, %s, %s and %s.\n\nNext:\n  inspect serve --config %s\n  open %s/installations/new   # install the App on your repositories\n",
		app.Slug, app.ID, app.Owner.Login, w.Config, w.PrivateKey, w.WebhookSecret, w.ClientSecret, w.WebKey, w.Config, strings.TrimSuffix(app.HTMLURL, "/"))
	return 0
}

// defaultAPIURL is the web root's API: github.com's API host, a GHE.com
// tenant's api. host, or Enterprise Server's /api/v3/.
func defaultAPIURL(web string) string { return config.APIURLFor(web) }

// browserAddr is addr as a browser on this host reaches it: an unspecified
// address (0.0.0.0, ::) becomes loopback.
func browserAddr(addr *net.TCPAddr) string {
	if addr.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(addr.Port))
	}
	return addr.String()
}
