package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/policy"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "inspect.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimalYAML = `
github:
  app_id: 12
  private_key: "-----BEGIN RSA PRIVATE KEY-----"
  webhook_secret: s3cret
`

func TestLoadYAMLThenEnvOverrides(t *testing.T) {
	path := writeFile(t, minimalYAML+`
workers:
  lease: 45s
database:
  driver: sqlite
  dsn: /var/lib/inspect.db
`)
	cfg, err := Load(path, envOf(map[string]string{
		"INSPECT_DATABASE_DRIVER":                "postgres",
		"INSPECT_DATABASE_DSN":                   "postgres://127.0.0.1/test",
		"INSPECT_GITHUB_WEBHOOK_SECRET_PREVIOUS": "old",
		"INSPECT_POLICY_ALLOWED_BOTS":            "renovate[bot], dependabot[bot]",
		"INSPECT_GITHUB_API_URL":                 "https://ghe.example.com/api/v3/",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database.Driver != "postgres" || cfg.Database.DSN != "postgres://127.0.0.1/test" {
		t.Errorf("env did not override database: %+v", cfg.Database)
	}
	if cfg.Workers.Lease != 45*time.Second {
		t.Errorf("lease = %s, want 45s from YAML", cfg.Workers.Lease)
	}
	if got := cfg.WebhookSecrets(); len(got) != 2 || got[0] != "s3cret" || got[1] != "old" {
		t.Errorf("secrets = %v", got)
	}
	if len(cfg.Policy.AllowedBots) != 2 || cfg.Policy.AllowedBots[1] != "dependabot[bot]" {
		t.Errorf("bots = %v", cfg.Policy.AllowedBots)
	}
	if cfg.GitHub.APIURL != "https://ghe.example.com/api/v3/" {
		t.Errorf("api url = %q", cfg.GitHub.APIURL)
	}
}

func TestValidationNamesKeyAndFault(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  map[string]string
		want []string
	}{
		{"empty secret refuses to start", `
github: {app_id: 1, private_key: k, webhook_secret: "  "}`, nil, []string{"github.webhook_secret: must not be empty"}},
		{"missing everything", ``, nil, []string{"github.app_id:", "github.private_key:", "github.webhook_secret:"}},
		{"bad driver and command word", minimalYAML + `
database: {driver: mysql}
command_word: "inspect"`, nil, []string{"database.driver: \"mysql\" must be sqlite or postgres", "command_word:"}},
		{"unknown key is an error", minimalYAML + `
databse: {driver: sqlite}`, nil, []string{"unknown key `databse`"}},
		{"bad env duration names the variable", minimalYAML, map[string]string{"INSPECT_WORKERS_LEASE": "soon"}, []string{"INSPECT_WORKERS_LEASE (workers.lease): not a duration"}},
		{"bot must be a full login", minimalYAML + `
policy: {allowed_bots: [renovate]}`, nil, []string{"policy.allowed_bots[0]:"}},
		{"api url must be absolute", minimalYAML, map[string]string{"INSPECT_GITHUB_API_URL": "api.github.com"}, []string{"github.api_url:"}},
		{"body limit above GitHub's", minimalYAML, map[string]string{"INSPECT_HTTP_MAX_BODY_BYTES": "40000000"}, []string{"http.max_body_bytes:"}},
		{"sqlite URI loses the durability pragmas", minimalYAML, map[string]string{"INSPECT_DATABASE_DSN": "file:x.db?_pragma=synchronous(OFF)"}, []string{"database.dsn:"}},
		{"sqlite in memory", minimalYAML, map[string]string{"INSPECT_DATABASE_DSN": ":memory:"}, []string{"database.dsn:"}},
		{"unbounded attempts", minimalYAML, map[string]string{"INSPECT_WORKERS_MAX_ATTEMPTS": "1000"}, []string{"workers.max_attempts: must be between 1 and 50"}},
		{"command word too short", minimalYAML, map[string]string{"INSPECT_COMMAND_WORD": "/a"}, []string{"command_word:"}},
		{"buildkite needs its keys and a public channel", minimalYAML + `
executor: {kind: buildkite}`, nil, []string{"buildkite.organization:", "buildkite.api_token: set it", "buildkite.webhook_token: must be at least 16", "channel_url: must be the app's public URL"}},
		{"buildkite queue goes into YAML, so it is checked", minimalYAML + `
executor: {kind: buildkite}
channel_url: https://inspect.example.com
buildkite: {organization: acme, api_token: t, api_token_path: /x, webhook_token: 0123456789abcdef, queue: "a: b"}
workers: {reconcile_interval: 10ms}`, nil,
			[]string{"buildkite.queue:", "buildkite.api_token: set only one", "workers.reconcile_interval:"}},
		{"metrics on the webhook listener", minimalYAML, map[string]string{"INSPECT_LISTEN": ":8080", "INSPECT_METRICS_LISTEN": ":8080"}, []string{"metrics.listen: must differ from listen"}},
		{"unknown executor", minimalYAML, map[string]string{"INSPECT_EXECUTOR_KIND": "k8s"}, []string{"executor.kind: \"k8s\" must be local, buildkite or none"}},
		{"session limits too small", minimalYAML, map[string]string{"INSPECT_EXECUTOR_LIMITS_SESSION_MEMORY_BYTES": "1000", "INSPECT_EXECUTOR_LIMITS_SESSION_PIDS": "3"},
			[]string{"executor.limits.session_memory_bytes: must be 0 (no limit) or at least 67108864 (found 1000)", "executor.limits.session_pids: must be 0 (no limit) or at least 16 (found 3)"}},
		{"no live streams at all", minimalYAML + `
web: {public_url: https://inspect.example.com, client_id: c, client_secret: s, key_path: /k, max_live_streams: 0}`, nil,
			[]string{"web.max_live_streams: must be between 1 and 1000 (found 0)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tc.yaml), envOf(tc.env))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestEveryEnvVarIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range EnvVars() {
		if !strings.Contains(string(doc), "`"+ev.Name+"`") {
			t.Errorf("%s is not documented in docs/configuration.md", ev.Name)
		}
		if !strings.Contains(string(doc), "`"+ev.Key+"`") {
			t.Errorf("key %s is not documented in docs/configuration.md", ev.Key)
		}
	}
}

func TestEveryEnvVarSetsItsKey(t *testing.T) {
	// Each override must change the config, so a copy-paste slip that points
	// two variables at one field is caught.
	for _, ev := range EnvVars() {
		base := Defaults()
		v := "7"
		switch {
		case strings.HasSuffix(ev.Name, "CHANNEL_URL"):
			v = "http://127.0.0.1:9"
		case strings.HasSuffix(ev.Name, "EXECUTOR_KIND"):
			v = "none"
		case strings.HasSuffix(ev.Name, "SESSIONS_TIMEOUT"):
			v = "7m"
		case strings.HasSuffix(ev.Name, "PAUSED"), strings.HasSuffix(ev.Name, "DISABLED"), strings.HasSuffix(ev.Name, "THUMBNAILS"):
			v = "true"
		case strings.HasSuffix(ev.Name, "SESSIONS_BASELINE"):
			v = "false" // on by default
		case strings.Contains(ev.Name, "TIMEOUT") || strings.Contains(ev.Name, "LEASE") || strings.Contains(ev.Name, "INTERVAL") || strings.Contains(ev.Name, "BACKOFF") || strings.HasSuffix(ev.Name, "MAX_AGE") || strings.HasSuffix(ev.Name, "REFRESH") || strings.HasSuffix(ev.Name, "COOLDOWN") || strings.HasSuffix(ev.Name, "DEBOUNCE") || strings.HasSuffix(ev.Name, "MAX_WAIT") || strings.HasSuffix(ev.Name, "HEARTBEAT") || strings.HasSuffix(ev.Name, "WINDOW") || strings.HasSuffix(ev.Name, "RETENTION") || strings.HasSuffix(ev.Name, "PERMISSION_CACHE") || strings.HasSuffix(ev.Name, "LIFETIME"):
			v = "7s"
		}
		got := base
		if err := ev.set(&got, v); err != nil {
			t.Fatalf("%s: %v", ev.Name, err)
		}
		if snapshot(got) == snapshot(base) {
			t.Errorf("%s changed nothing", ev.Name)
		}
	}
}

func snapshot(c Server) string { return fmt.Sprintf("%+v", c) }

func TestParseRepo(t *testing.T) {
	r, err := ParseRepo(nil)
	if err != nil || !r.IsEnabled() {
		t.Fatalf("empty config: %v enabled=%v", err, r.IsEnabled())
	}
	r, err = ParseRepo([]byte("enabled: false\n"))
	if err != nil || r.IsEnabled() {
		t.Fatalf("enabled false: %v enabled=%v", err, r.IsEnabled())
	}
	r, err = ParseRepo([]byte("agent:\n  preset: command\n  command: [./agent.sh, --fast]\nverify:\n  - name: test\n    run: [go, test, ./...]\n    timeout: 5m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Verify[0].Timeout != 5*time.Minute || r.Agent.Command[1] != "--fast" || r.WantsSnapshots() {
		t.Errorf("parsed %+v", r)
	}
	r, err = ParseRepo([]byte("env: {GOFLAGS: -trimpath}\nsnapshot:\n  setup: [{name: deps, run: [go, mod, download]}]\n  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n"))
	if err != nil || !r.WantsSnapshots() || r.Snapshot.Caches[0].Path != "/cache/go" || r.Env["GOFLAGS"] != "-trimpath" {
		t.Fatalf("snapshot config: %+v %v", r, err)
	}
	// An env path outside /workspace and /tmp needs no snapshot section:
	// every session makes it a writable directory.
	r, err = ParseRepo([]byte("env: {GOCACHE: /cache/go/build, GOFLAGS: -trimpath}\n"))
	if err != nil || r.WantsSnapshots() || r.Env["GOCACHE"] != "/cache/go/build" {
		t.Fatalf("env path without a snapshot section: %+v %v", r, err)
	}
	for input, want := range map[string]string{
		"enabled: maybe\n":                 "line 1",
		"enbled: false\n":                  "unknown key `enbled`",
		"agent: {preset: command}\n":       "agent.command",
		"agent: {preset: gpt}\n":           "agent.preset",
		"verify:\n  - name: x\n":           "verify[0].run",
		"limits: {session_timeout: -1s}\n": "limits.session_timeout",
		"api_token: abc\n":                 "unknown key `api_token`",
		"snapshot: {caches: [{path: cache, lockfiles: [go.sum]}]}\n":                                 "snapshot.caches[0].path",
		"snapshot: {caches: [{path: /cache/go}]}\n":                                                  "snapshot.caches[0].lockfiles",
		"snapshot: {caches: [{path: /c, lockfiles: [a]}, {path: /c/go, lockfiles: [b]}]}\n":          "overlaps snapshot.caches[0].path",
		"snapshot: {setup: [{name: x}]}\n":                                                           "snapshot.setup[0].run",
		"env: {INSPECT_SESSION_ID: x}\n":                                                             "env",
		"env: {GITHUB_TOKEN: ghp_0123456789abcdefghijklmnopqrstuvwxyzAB}\n":                          "env",
		"snapshot: {caches: [{path: /workspace/node_modules, lockfiles: [../package-lock.json]}]}\n": "snapshot.caches[0].lockfiles[0]",
		"snapshot: {caches: [{path: /usr/local/cache, lockfiles: [go.sum]}]}\n":                      "snapshot.caches[0].path: must not be under /usr",
		"env: {GOCACHE: /usr/local/go-cache}\n":                                                      `env.GOCACHE: names "/usr/local/go-cache"`,
		"env: {npm_config_cache: /etc/npm}\n":                                                        "under /etc",
		"env: {CACHE: /cache/.git/x}\n":                                                              ".git",
	} {
		_, err := ParseRepo([]byte(input))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRepo(%q) = %v, want error containing %q", input, err, want)
		}
	}
}

// go-githubapp's appconfig follows a file that is only `remote:` (with
// `path:` and `ref:`) to another repository, which no session protection
// covers; Inspect refuses it, with its own key named, however it is
// written.
func TestParseRepoRefusesRemoteReferences(t *testing.T) {
	for _, input := range []string{
		"remote: acme/elsewhere\n",
		"remote: acme/elsewhere\npath: configs/inspect.yml\nref: v1\n",
		"remote: \"\"\n",
		"remote: acme/elsewhere\nagent: {preset: command, command: [./a]}\n",
		"# where it lives\nremote:\n  acme/elsewhere\n",
	} {
		_, err := ParseRepo([]byte(input))
		if err == nil || !strings.Contains(err.Error(), "remote: ") || !strings.Contains(err.Error(), "remote reference") {
			t.Errorf("ParseRepo(%q) = %v, want the remote reference refused", input, err)
		}
	}
	// A key that only mentions the word is no reference.
	if _, err := ParseRepo([]byte("verify: [{name: remote, run: [make, remote]}]\n")); err != nil {
		t.Errorf("a verify step named remote: %v", err)
	}
}

// The files the loader reads as the org-wide config are the ones policy
// protects in the owner's .github repository.
func TestOrgConfigPathsAreProtectedInTheOrgConfigRepo(t *testing.T) {
	if len(OrgConfigPaths) != len(RepoConfigPaths) {
		t.Fatalf("org config paths %q for repo config paths %q", OrgConfigPaths, RepoConfigPaths)
	}
	for _, p := range OrgConfigPaths {
		change := []policy.ChangedFile{{Path: p, Mode: policy.ModeFile, Content: []byte("enabled: true\n")}}
		if d, _ := policy.ValidateChange(change, policy.ChangeLimits{Repo: policy.OrgConfigRepo}); d.Reason != policy.ReasonProtectedPath {
			t.Errorf("changing %s in %s: %+v, want it protected", p, policy.OrgConfigRepo, d)
		}
	}
}

func TestVerifyCommandsNameAndBoundEveryStep(t *testing.T) {
	r, err := ParseRepo([]byte("verify:\n  - run: [go, test, ./...]\n  - name: lint\n    run: [make, lint]\n    timeout: 2h\n  - name: lint\n    run: [make, vet]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := r.VerifyCommands(10*time.Minute, time.Hour)
	want := []struct {
		name    string
		timeout time.Duration
	}{{"verify 1", 10 * time.Minute}, {"lint", time.Hour}, {"lint (2)", 10 * time.Minute}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].Name != w.name || got[i].Timeout.Std() != w.timeout {
			t.Errorf("step %d = %s/%s, want %s/%s", i, got[i].Name, got[i].Timeout.Std(), w.name, w.timeout)
		}
	}
}

// github.api_url left at its default follows github.web_url: GHE.com's
// API is its api. host (GitHub Enterprise Cloud with data residency),
// Enterprise Server's the web root's /api/v3/; a GHE.com web root with an
// api_url elsewhere is refused, naming the key and the right URL.
func TestGitHubAPIURLFollowsTheWebRoot(t *testing.T) {
	for _, tc := range []struct {
		web, api string
		want     string // the api_url loaded, or the error's text
		fails    bool
	}{
		{web: "https://github.com", want: "https://api.github.com/"},
		{web: "https://acme.ghe.com", want: "https://api.acme.ghe.com/"},
		{web: "https://acme.ghe.com/", want: "https://api.acme.ghe.com/"},
		{web: "https://ghe.example.com", want: "https://ghe.example.com/api/v3/"},
		{web: "https://ghe.example.com", api: "https://ghe.example.com/api/v3/", want: "https://ghe.example.com/api/v3/"},
		{web: "https://acme.ghe.com", api: "https://api.acme.ghe.com/", want: "https://api.acme.ghe.com/"},
		{web: "https://acme.ghe.com", api: "https://acme.ghe.com/api/v3/", fails: true,
			want: "github.api_url: GitHub Enterprise Cloud with data residency (acme.ghe.com) serves its REST API at https://api.acme.ghe.com/"},
	} {
		env := map[string]string{"INSPECT_GITHUB_WEB_URL": tc.web}
		if tc.api != "" {
			env["INSPECT_GITHUB_API_URL"] = tc.api
		}
		cfg, err := Load(writeFile(t, minimalYAML), envOf(env))
		switch {
		case tc.fails && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("web %s, api %q: %v, want the error %q", tc.web, tc.api, err, tc.want)
		case !tc.fails && err != nil:
			t.Errorf("web %s, api %q: %v", tc.web, tc.api, err)
		case !tc.fails && cfg.GitHub.APIURL != tc.want:
			t.Errorf("web %s, api %q: api_url %q, want %q", tc.web, tc.api, cfg.GitHub.APIURL, tc.want)
		}
	}
}
