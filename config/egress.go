package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// Egress is what the sandbox may reach besides the model proxy: package
// registries (decision 0018). Upstreams and their credentials are
// server-side only; a session reaches a registry by its name through the
// egress proxy, and the app adds the credential at the far end.
type Egress struct {
	// IdleTimeout bounds an egress request's silences, model and registry
	// alike, in place of http.read_timeout and http.write_timeout, which
	// would cut a long download or a model's long stream.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// Registries are keyed by name (contract.ValidProviderName), which the
	// proxy routes on.
	Registries map[string]Registry `yaml:"registries"`
	// Cache keeps the registries' immutable artifacts for every session
	// of this replica (decision 0019).
	Cache RegistryCache `yaml:"cache"`
	// MaxRegistryRequestsPerAttempt and MaxRegistryRequests cap the
	// registry requests in flight in this process, for one attempt and in
	// all; more wait their turn (decision 0059).
	MaxRegistryRequestsPerAttempt int `yaml:"max_registry_requests_per_attempt"`
	MaxRegistryRequests           int `yaml:"max_registry_requests"`
}

// The defaults of egress.max_registry_requests_per_attempt (npm's own
// maxsockets is 15) and egress.max_registry_requests.
const (
	DefaultMaxRegistryRequestsPerAttempt = 16
	DefaultMaxRegistryRequests           = 128
)

// RegistryCache is the registry egress's artifact cache, one per replica.
type RegistryCache struct {
	// Dir is where it lives; default the user's cache directory's
	// inspect/registries (CacheDir).
	Dir string `yaml:"dir"`
	// MaxBytes bounds it; least recently used artifacts go first.
	MaxBytes int64 `yaml:"max_bytes"`
	// Disabled turns it off: every artifact comes from its upstream.
	Disabled bool `yaml:"disabled"`
}

// DefaultRegistryCacheBytes is egress.cache.max_bytes's default: 8 GiB.
const DefaultRegistryCacheBytes = 8 << 30

// CacheDir is the cache's directory: Dir, or the default.
func (c RegistryCache) CacheDir() string {
	if c.Dir != "" {
		return c.Dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir() // no $HOME: the system's temp dir still serves
	}
	return filepath.Join(base, "inspect", "registries")
}

// Registry is one package registry upstream.
type Registry struct {
	// Kind is its protocol: goproxy, npm or pypi.
	Kind string `yaml:"kind"`
	// URL is the upstream's base: https://proxy.golang.org,
	// https://registry.npmjs.org, https://pypi.org (its simple index is
	// URL/simple/).
	URL string `yaml:"url"`
	// FilesURL is where a PyPI index's files live when that is another
	// host (https://files.pythonhosted.org for pypi.org): the proxy serves
	// them under files/ and follows redirects there only.
	FilesURL string `yaml:"files_url"`
	// RedirectHosts are further hosts (host, or host:port) a package
	// file's download (a module zip, a tarball, a PyPI file) may be
	// redirected to, fetched without the token: the
	// public Go proxy answers a zip with a 302 to a signed URL on
	// storage.googleapis.com (decision 0052). Unset, a kind's default
	// (DefaultRedirectHosts); an empty list, none. Metadata is never
	// fetched from them.
	RedirectHosts []string `yaml:"redirect_hosts"`
	// Token (token) or a file holding it (TokenPath, token_path) is the
	// upstream's credential, if it needs one; at most one. Read it with
	// Credential.
	Token     string `yaml:"token"`
	TokenPath string `yaml:"token_path"`
	// Auth is how the token is sent: bearer (the default) or basic, with
	// Username (default __token__, as PyPI takes API tokens) and the token
	// as the password.
	Auth     string `yaml:"auth"`
	Username string `yaml:"username"`
	// CAFile is a PEM bundle of the CAs to trust for this upstream beyond
	// the system's (a private registry's own CA).
	CAFile string `yaml:"ca_file"`
	// SumDB (goproxy) is the checksum database's verifier key, which go
	// reaches through this proxy; default sum.golang.org's. NoSumDB are
	// module path patterns (private modules) not checked against it.
	SumDB   string   `yaml:"sumdb"`
	NoSumDB []string `yaml:"no_sumdb"`
	// Phases are the session phases that may use it: setup and verify
	// unless set (the agent only where the server says so). A repository
	// may only narrow them.
	Phases []string `yaml:"phases"`
	// Repos are the repositories it serves, as owner/name or owner/*; all
	// when empty.
	Repos []string `yaml:"repos"`
}

// DefaultSumDB is the public Go checksum database's verifier key, as go
// itself knows it.
const DefaultSumDB = "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"

// DefaultRedirectHosts are the redirect_hosts of a registry that sets
// none, by kind: the storage host proxy.golang.org redirects zips to.
func DefaultRedirectHosts(kind string) []string {
	if kind == policy.RegistryGoProxy {
		return []string{"storage.googleapis.com"}
	}
	return nil
}

// RedirectHostsOrDefault are the hosts a package file's download may be
// redirected to besides the upstream's own.
func (r Registry) RedirectHostsOrDefault() []string {
	if r.RedirectHosts == nil {
		return DefaultRedirectHosts(r.Kind)
	}
	return r.RedirectHosts
}

// DefaultRegistryPhases are the phases a registry serves unless its
// phases say otherwise.
var DefaultRegistryPhases = []string{string(contract.PhaseSetup), string(contract.PhaseVerify)}

// String never shows the token.
func (r Registry) String() string {
	cred := "none"
	switch {
	case r.Token != "":
		cred = "(set)"
	case r.TokenPath != "":
		cred = "file " + r.TokenPath
	}
	return fmt.Sprintf("{Kind:%s URL:%s Token:%s}", r.Kind, r.URL, cred)
}

// Credential returns the token, read from its file when token_path is set
// (surrounding white space trimmed); "" when the upstream needs none.
func (r Registry) Credential() (string, error) {
	if r.TokenPath == "" {
		return r.Token, nil
	}
	b, err := os.ReadFile(r.TokenPath)
	if err != nil {
		return "", fmt.Errorf("reading the registry token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// PhasesOrDefault are the phases it serves.
func (r Registry) PhasesOrDefault() []string {
	if len(r.Phases) == 0 {
		return DefaultRegistryPhases
	}
	return r.Phases
}

// SumDBOrDefault is the checksum database's verifier key (goproxy).
func (r Registry) SumDBOrDefault() string {
	if r.SumDB == "" {
		return DefaultSumDB
	}
	return r.SumDB
}

// Serves reports whether the registry serves the repository owner/name.
func (r Registry) Serves(fullName string) bool {
	if len(r.Repos) == 0 {
		return true
	}
	for _, pat := range r.Repos {
		if ok, _ := path.Match(strings.ToLower(pat), strings.ToLower(fullName)); ok {
			return true
		}
	}
	return false
}

// SessionRegistries are the registries a session of repository fullName
// may reach, as the spec names them, in name order.
func (e Egress) SessionRegistries(fullName string) []contract.Registry {
	var out []contract.Registry
	for _, name := range sortedKeys(e.Registries) {
		if r := e.Registries[name]; r.Serves(fullName) {
			out = append(out, r.forSpec(name))
		}
	}
	return out
}

// forSpec is the registry as a spec names it.
func (r Registry) forSpec(name string) contract.Registry {
	cr := contract.Registry{Name: name, Kind: r.Kind}
	for _, p := range r.PhasesOrDefault() {
		cr.Phases = append(cr.Phases, contract.Phase(p))
	}
	if r.Kind == policy.RegistryGoProxy {
		cr.SumDB, cr.NoSumDB = r.SumDBOrDefault(), r.NoSumDB
	}
	return cr
}

func (e Egress) validate(add func(key, format string, args ...any)) {
	if e.IdleTimeout < time.Second {
		add("egress.idle_timeout", "must be at least 1s")
	}
	if e.MaxRegistryRequestsPerAttempt < 1 {
		add("egress.max_registry_requests_per_attempt", "must be at least 1 (found %d)", e.MaxRegistryRequestsPerAttempt)
	}
	if e.MaxRegistryRequests < 1 {
		add("egress.max_registry_requests", "must be at least 1 (found %d)", e.MaxRegistryRequests)
	}
	if e.Cache.MaxBytes < 1<<20 {
		add("egress.cache.max_bytes", "must be at least 1 MiB (1048576)")
	}
	if e.Cache.Dir != "" && !filepath.IsAbs(e.Cache.Dir) {
		add("egress.cache.dir", "must be an absolute path")
	}
	faulted := map[string]bool{}
	outer := add
	add = func(key, format string, args ...any) {
		if name, ok := strings.CutPrefix(key, "egress.registries."); ok {
			faulted["egress.registries."+strings.SplitN(name, ".", 2)[0]] = true
		}
		outer(key, format, args...)
	}
	for _, name := range sortedKeys(e.Registries) {
		r := e.Registries[name]
		key := "egress.registries." + name
		if err := contract.ValidProviderName(name); err != nil {
			add(key, "the name %v", err)
		}
		if !slices.Contains(policy.RegistryKinds(), r.Kind) {
			add(key+".kind", "must be one of %s", strings.Join(policy.RegistryKinds(), ", "))
		}
		if r.URL == "" {
			add(key+".url", "is required: the upstream's base URL")
		} else if err := checkURL(r.URL); err != nil {
			add(key+".url", "%v", err)
		} else if u, _ := url.Parse(r.URL); u.RawQuery != "" || u.Fragment != "" {
			add(key+".url", "must have no query or fragment")
		}
		if r.FilesURL != "" {
			if r.Kind != policy.RegistryPyPI {
				add(key+".files_url", "is for pypi registries only")
			} else if err := checkURL(r.FilesURL); err != nil {
				add(key+".files_url", "%v", err)
			}
		}
		for _, h := range r.RedirectHosts {
			if !validRedirectHost(h) {
				add(key+".redirect_hosts", "%q must be a host name or host:port, without a scheme, path or wildcard", h)
			}
		}
		if r.Token != "" && r.TokenPath != "" {
			add(key, "set token or token_path, not both")
		}
		switch r.Auth {
		case "", "bearer", "basic":
		default:
			add(key+".auth", "must be bearer or basic")
		}
		if r.Username != "" && r.Auth != "basic" {
			add(key+".username", "is for auth: basic only")
		}
		if r.Kind != policy.RegistryGoProxy && (r.SumDB != "" || len(r.NoSumDB) > 0) {
			add(key+".sumdb", "is for goproxy registries only")
		}
		for _, p := range r.Phases {
			if !slices.Contains(contract.RegistryPhases, contract.Phase(p)) {
				add(key+".phases", "must list setup, agent or verify, not %q", p)
			}
		}
		for _, pat := range r.Repos {
			if _, err := path.Match(pat, ""); err != nil || strings.Count(pat, "/") != 1 {
				add(key+".repos", "%q must be owner/name or owner/*", pat)
			}
		}
	}
	// What a spec would carry must pass the contract (the sumdb key, the
	// patterns, the phases), checked one registry at a time so a fault
	// names the registry, not an index into a list the YAML does not have,
	// and only for a registry with no fault of its own above, which the
	// contract would repeat.
	if len(e.Registries) > contract.MaxRegistries {
		add("egress.registries", "has %d registries, more than the %d allowed", len(e.Registries), contract.MaxRegistries)
	}
	for _, name := range sortedKeys(e.Registries) {
		key := "egress.registries." + name
		if faulted[key] {
			continue
		}
		err := contract.ValidateRegistries([]contract.Registry{e.Registries[name].forSpec(name)})
		var ve *contract.ValidationError
		if !errors.As(err, &ve) {
			if err != nil {
				add(key, "%v", err)
			}
			continue
		}
		for _, f := range ve.Faults {
			add(key+strings.TrimPrefix(f.Field, "registries[0]"), "%s", f.Fault)
		}
	}
}

// validRedirectHost is a host name (or IP literal) with an optional port,
// as a URL's host: what the egress compares a redirect's host to.
func validRedirectHost(h string) bool {
	if h == "" || strings.ContainsAny(h, "/*?#@ \t") {
		return false
	}
	u, err := url.Parse("https://" + h)
	return err == nil && u.Host == h && u.Hostname() != "" && u.Path == ""
}
