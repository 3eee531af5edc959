package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

const egressYAML = `
egress:
  registries:
    goproxy:
      kind: goproxy
      url: https://proxy.golang.org
      no_sumdb: [example.com/private/*]
    athens:
      kind: goproxy
      url: https://athens.example
      redirect_hosts: []
    npmjs:
      kind: npm
      url: https://registry.npmjs.org
      token_path: %s
      phases: [setup]
      repos: [acme/*]
    pypi:
      kind: pypi
      url: https://pypi.org
      files_url: https://files.pythonhosted.org
      redirect_hosts: [mirror.example, "cdn.example:8443"]
      auth: basic
`

func TestEgressRegistriesFromYAML(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "npm-token")
	if err := os.WriteFile(tokenFile, []byte(" npm_abcdefghijklmnopqrstuvwxyz0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(writeFile(t, minimalYAML+fmt.Sprintf(egressYAML, tokenFile)), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	npm := cfg.Egress.Registries["npmjs"]
	if tok, err := npm.Credential(); err != nil || tok != "npm_abcdefghijklmnopqrstuvwxyz0123456789" {
		t.Fatalf("npm credential = %q, %v", tok, err)
	}
	if s := fmt.Sprintf("%v %+v", npm, cfg.Egress); strings.Contains(s, "npm_abc") {
		t.Fatalf("a registry prints its token: %s", s)
	}
	// redirect_hosts: goproxy's default, an empty list that keeps none,
	// and a list as set.
	for name, want := range map[string][]string{"goproxy": {"storage.googleapis.com"}, "athens": {}, "npmjs": nil, "pypi": {"mirror.example", "cdn.example:8443"}} {
		if got := cfg.Egress.Registries[name].RedirectHostsOrDefault(); !slices.Equal(got, want) {
			t.Errorf("%s: redirect hosts %q, want %q", name, got, want)
		}
	}
	delete(cfg.Egress.Registries, "athens")
	// acme's repositories get all three, in name order, with the default
	// phases and sumdb where none is set; others lose npmjs.
	got := cfg.Egress.SessionRegistries("acme/widgets")
	want := []contract.Registry{
		{Name: "goproxy", Kind: "goproxy", Phases: []contract.Phase{"setup", "verify"}, SumDB: DefaultSumDB, NoSumDB: []string{"example.com/private/*"}},
		{Name: "npmjs", Kind: "npm", Phases: []contract.Phase{"setup"}},
		{Name: "pypi", Kind: "pypi", Phases: []contract.Phase{"setup", "verify"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SessionRegistries(acme/widgets)\n got %+v\nwant %+v", got, want)
	}
	if got := cfg.Egress.SessionRegistries("other/repo"); len(got) != 2 || got[0].Name != "goproxy" || got[1].Name != "pypi" {
		t.Fatalf("SessionRegistries(other/repo) = %+v, want goproxy and pypi", got)
	}
	if err := contract.ValidateRegistries(got); err != nil {
		t.Fatalf("the spec's registries do not pass the contract: %v", err)
	}
}

func TestEgressRegistriesRefused(t *testing.T) {
	cases := map[string]struct {
		reg  Registry
		name string
		want string
	}{
		"no kind":           {Registry{URL: "https://x.example"}, "x", "egress.registries.x.kind: must be one of goproxy, npm, pypi"},
		"no url":            {Registry{Kind: "npm"}, "x", "egress.registries.x.url: is required"},
		"url with a user":   {Registry{Kind: "npm", URL: "https://u:p@x.example"}, "x", "egress.registries.x.url: must not carry a user name or password"},
		"url with a query":  {Registry{Kind: "npm", URL: "https://x.example/?a=b"}, "x", "egress.registries.x.url: must have no query"},
		"both tokens":       {Registry{Kind: "npm", URL: "https://x.example", Token: "t", TokenPath: "/p"}, "x", "set token or token_path, not both"},
		"bad auth":          {Registry{Kind: "npm", URL: "https://x.example", Auth: "digest"}, "x", "egress.registries.x.auth: must be bearer or basic"},
		"files_url on npm":  {Registry{Kind: "npm", URL: "https://x.example", FilesURL: "https://f.example"}, "x", "files_url: is for pypi registries only"},
		"sumdb on npm":      {Registry{Kind: "npm", URL: "https://x.example", SumDB: DefaultSumDB}, "x", "sumdb: is for goproxy registries only"},
		"bad sumdb":         {Registry{Kind: "goproxy", URL: "https://x.example", SumDB: "sum.golang.org"}, "x", "sumdb: must be a checksum database's verifier key"},
		"upload phase":      {Registry{Kind: "npm", URL: "https://x.example", Phases: []string{"upload"}}, "x", `phases: must list setup, agent or verify, not "upload"`},
		"bad repo pattern":  {Registry{Kind: "npm", URL: "https://x.example", Repos: []string{"acme"}}, "x", `repos: "acme" must be owner/name or owner/*`},
		"redirect url":      {Registry{Kind: "goproxy", URL: "https://x.example", RedirectHosts: []string{"https://storage.googleapis.com"}}, "x", `redirect_hosts: "https://storage.googleapis.com" must be a host name`},
		"redirect wildcard": {Registry{Kind: "goproxy", URL: "https://x.example", RedirectHosts: []string{"*.googleapis.com"}}, "x", `redirect_hosts: "*.googleapis.com" must be a host name`},
		"redirect path":     {Registry{Kind: "npm", URL: "https://x.example", RedirectHosts: []string{"cdn.example/x"}}, "x", `redirect_hosts: "cdn.example/x" must be a host name`},
		"redirect empty":    {Registry{Kind: "npm", URL: "https://x.example", RedirectHosts: []string{""}}, "x", `redirect_hosts: "" must be a host name`},
		"bad name":          {Registry{Kind: "npm", URL: "https://x.example"}, "no/slash", "egress.registries.no/slash: the name"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := Defaults()
			cfg.GitHub.AppID, cfg.GitHub.WebhookSecret, cfg.GitHub.PrivateKey = 1, "s", "k"
			cfg.Egress.Registries = map[string]Registry{c.name: c.reg}
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v, want it to say %q", err, c.want)
			}
		})
	}
}
