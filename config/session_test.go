package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// sessionServer offers model m-1 of provider p to codex, and two
// registries, one of them for acme's repositories only.
func sessionServer() Server {
	c := Defaults()
	c.Sessions.Timeout = 20 * time.Minute
	c.Sessions.CommandTimeout = 5 * time.Minute
	c.Sessions.MaxChangedFiles = 40
	c.Sessions.MaxChangeBytes = 1 << 20
	c.Agents.Providers = map[string]Provider{"p": {Kind: contract.ProviderKindOpenAI, BaseURL: "https://models.example/v1", Key: "k"}}
	c.Agents.Models = []Model{{Name: "m-1", Provider: "p"}}
	c.Egress.Registries = map[string]Registry{
		"goproxy": {Kind: policy.RegistryGoProxy, URL: "https://proxy.example"},
		"npmjs":   {Kind: policy.RegistryNPM, URL: "https://npm.example", Repos: []string{"acme/*"}},
	}
	return c
}

func TestSessionSpecIsWhatTheTwoConfigsDecide(t *testing.T) {
	repo, err := ParseRepo([]byte(`agent: {preset: codex, model: m-1}
env: {GOFLAGS: -mod=readonly}
setup:
  - run: [go, mod, download]
verify:
  - name: tests
    run: [go, test, ./...]
    timeout: 1h
snapshot:
  setup:
    - name: build
      run: [go, build, ./...]
  caches:
    - path: /cache/go
      lockfiles: [go.sum]
limits: {session_timeout: 10m, max_files: 500}
`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 500, time.UTC)
	var spec contract.Spec
	if err := sessionServer().SessionSpec(&spec, repo, "other/widgets", now); err != nil {
		t.Fatal(err)
	}
	if a := spec.Agent; a.Preset != contract.PresetCodex || a.Model != "m-1" || a.Provider != "p" || a.ProviderKind != contract.ProviderKindOpenAI {
		t.Errorf("agent = %+v", a)
	}
	// The repo narrows the session to 10m; no command runs longer.
	if len(spec.Verify) != 1 || spec.Verify[0].Name != "tests" || time.Duration(spec.Verify[0].Timeout) != 10*time.Minute {
		t.Errorf("verify = %+v", spec.Verify)
	}
	if len(spec.Setup) != 1 || spec.Setup[0].Name != "setup 1" || time.Duration(spec.Setup[0].Timeout) != 5*time.Minute {
		t.Errorf("setup = %+v", spec.Setup)
	}
	if spec.Env["GOFLAGS"] != "-mod=readonly" {
		t.Errorf("env = %v", spec.Env)
	}
	// npmjs serves acme's repositories only.
	if len(spec.Registries) != 1 || spec.Registries[0].Name != "goproxy" || spec.Registries[0].SumDB != DefaultSumDB {
		t.Errorf("registries = %+v", spec.Registries)
	}
	sn := spec.Snapshot
	if sn == nil || sn.Digest != "" || len(sn.Caches) != 1 || sn.Caches[0].Path != "/cache/go" ||
		len(sn.Setup) != 1 || sn.Setup[0].Name != "snapshot build" || time.Duration(sn.Setup[0].Timeout) != 5*time.Minute {
		t.Errorf("snapshot = %+v", sn)
	}
	// max_files 500 is wider than the server's 40, so it does not count.
	want := contract.Limits{Deadline: time.Date(2026, 11, 30, 12, 10, 0, 0, time.UTC), Timeout: contract.Duration(10 * time.Minute),
		MaxOutputBytes: MaxOutputBytes, MaxChangedFiles: 40, MaxChangeBytes: 1 << 20}
	if spec.Limits != want {
		t.Errorf("limits = %+v, want %+v", spec.Limits, want)
	}

	// The server's base image is every session's, with a snapshot
	// section or without one (decision 0079).
	withBase := sessionServer()
	withBase.Snapshots.BaseImage = "registry.example.com/mirror/golang@sha256:" + strings.Repeat("9f", 32)
	for _, r := range []Repo{repo, {Agent: repo.Agent}} {
		var s contract.Spec
		if err := withBase.SessionSpec(&s, r, "other/widgets", now); err != nil || s.BaseImage != withBase.Snapshots.BaseImage {
			t.Errorf("base image = %q (%v), want snapshots.base_image", s.BaseImage, err)
		}
	}
	if spec.BaseImage != "" {
		t.Errorf("base image without snapshots.base_image = %q", spec.BaseImage)
	}

	var acme contract.Spec
	if err := sessionServer().SessionSpec(&acme, repo, "Acme/widgets", now); err != nil || len(acme.Registries) != 2 {
		t.Errorf("acme's registries = %+v (%v)", acme.Registries, err)
	}
	// The repository narrows them, as every session's spec and snapshot
	// build's job (NarrowRegistries).
	setupOnly := []string{"setup"}
	repo.Registries = map[string]RepoRegistry{"npmjs": {Phases: &setupOnly}, "goproxy": {Off: true}}
	if err := sessionServer().SessionSpec(&acme, repo, "acme/widgets", now); err != nil || len(acme.Registries) != 1 ||
		acme.Registries[0].Name != "npmjs" || len(acme.Registries[0].Phases) != 1 || acme.Registries[0].Phases[0] != contract.PhaseSetup {
		t.Errorf("narrowed registries = %+v (%v)", acme.Registries, err)
	}
	repo.Registries = map[string]RepoRegistry{"npmjs": {Off: true}}
	var re *RegistriesError
	if err := sessionServer().SessionSpec(&acme, repo, "other/widgets", now); !errors.As(err, &re) || !strings.Contains(err.Error(), `registries.npmjs: this Inspect server opens no registry named "npmjs"`) {
		t.Errorf("a registry the server does not open to the repository: %v", err)
	}
}

func TestSessionSpecSaysWhyTheAgentCannotRun(t *testing.T) {
	var spec contract.Spec
	if err := sessionServer().SessionSpec(&spec, Repo{}, "o/r", time.Now()); !errors.Is(err, ErrNoAgent) {
		t.Errorf("no agent: %v", err)
	}
	repo := Repo{Agent: Agent{Preset: "codex", Model: "m-1"}}
	var ae *AgentError
	err := Defaults().SessionSpec(&spec, repo, "o/r", time.Now())
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), `agent.model: "m-1" is not a model this Inspect server offers to preset codex`) {
		t.Errorf("a server without the model: %v", err)
	}
	if spec.Agent.Preset != "" {
		t.Errorf("a refused agent was set: %+v", spec.Agent)
	}
}

func TestCheckChangeRefusesProtectedPathsAndWideChanges(t *testing.T) {
	limits := contract.Limits{MaxChangedFiles: 2, MaxChangeBytes: 1 << 10}
	file := func(path string) contract.FileChange {
		return contract.FileChange{Path: path, Mode: contract.ModeFile, Content: []byte("x\n"), Added: true}
	}
	repo := Repo{ProtectedPaths: []string{"deploy/**"}}
	for _, tc := range []struct {
		name  string
		files []contract.FileChange
		want  policy.Reason
	}{
		{"a workflow", []contract.FileChange{file("calc.go"), file(".github/workflows/x.yml")}, policy.ReasonProtectedPath},
		{"the repo's own", []contract.FileChange{file("deploy/prod.sh")}, policy.ReasonProtectedPath},
		{"too many files", []contract.FileChange{file("a"), file("b"), file("c")}, policy.ReasonTooManyFiles},
		{"allowed", []contract.FileChange{file("calc.go")}, ""},
	} {
		d, sum := repo.CheckChange(&contract.Manifest{Files: tc.files}, limits, "r")
		if d.Reason != tc.want || d.Allowed != (tc.want == "") {
			t.Errorf("%s: %+v", tc.name, d)
		}
		if sum.Added != len(tc.files) {
			t.Errorf("%s: summary %+v", tc.name, sum)
		}
	}
	d, _ := repo.CheckChange(&contract.Manifest{Files: []contract.FileChange{file(".github/workflows/x.yml")}}, limits, "r")
	if !slices.Equal(d.Offending, []string{".github/workflows/x.yml"}) {
		t.Errorf("the refusal does not name the path: %+v", d)
	}
	// The org-wide config is protected in the owner's .github repository
	// only (where it lives), whichever way the session runs.
	orgWide := &contract.Manifest{Files: []contract.FileChange{file("inspect.yml")}}
	if d, _ := repo.CheckChange(orgWide, limits, ".github"); d.Allowed || d.Reason != policy.ReasonProtectedPath {
		t.Errorf("inspect.yml in .github: %+v", d)
	}
	if d, _ := repo.CheckChange(orgWide, limits, "r"); !d.Allowed {
		t.Errorf("inspect.yml in another repository: %+v", d)
	}
}

func TestLoadSessionKeysNeedsOnlyWhatASessionUses(t *testing.T) {
	only := writeFile(t, `agents:
  providers:
    p: {kind: openai, base_url: "https://models.example/v1", api_key: k}
  models:
    - {name: m-1, provider: p}
egress:
  registries:
    goproxy: {kind: goproxy, url: "https://proxy.example"}
`)
	if _, err := Load(only, envOf(nil)); err == nil {
		t.Fatal("the whole server's validation passes without github.*: this test proves nothing")
	}
	cfg, err := LoadSessionKeys(only, envOf(map[string]string{"INSPECT_SESSIONS_TIMEOUT": "70m"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.ModelAllowed("codex", "m-1"); !ok || len(cfg.Egress.Registries) != 1 || cfg.Sessions.Timeout != 70*time.Minute {
		t.Errorf("loaded %+v", cfg)
	}
	// The server's own file does as well.
	if _, err := LoadSessionKeys(writeFile(t, minimalYAML), envOf(nil)); err != nil {
		t.Errorf("the server's file: %v", err)
	}
	for content, want := range map[string]string{
		"agents:\n  modles: []\n":                                                    "unknown key `modles`",
		"agents:\n  models:\n    - {name: m-1, provider: nowhere}\n":                 "agents.models[0].provider",
		"egress:\n  registries:\n    x: {kind: maven, url: \"https://m.example\"}\n": "egress.registries.x.kind",
		"sessions:\n  timeout: 10s\n":                                                "sessions.timeout",
	} {
		if _, err := LoadSessionKeys(writeFile(t, content), envOf(nil)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
	}
	if _, err := LoadSessionKeys(writeFile(t, "")+".missing", envOf(nil)); err == nil || !strings.Contains(err.Error(), "reading the server config") {
		t.Errorf("a missing file: %v", err)
	}
}

// A verify step's screenshots reach its spec command, under the server's
// artifact caps even when the repository names no artifacts: (decision
// 0083); a setup step's are refused.
func TestSessionSpecCarriesAVerifyStepsScreenshotsUnderTheArtifactCaps(t *testing.T) {
	repo, err := ParseRepo([]byte(`agent: {preset: codex, model: m-1}
verify:
  - name: ui
    run: [npm, run, e2e]
    screenshots: ["shots/*.png"]
  - run: [npm, test]
`))
	if err != nil {
		t.Fatal(err)
	}
	var spec contract.Spec
	if err := sessionServer().SessionSpec(&spec, repo, "other/widgets", time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(spec.Verify) != 2 || !slices.Equal(spec.Verify[0].Screenshots, []string{"shots/*.png"}) || spec.Verify[1].Screenshots != nil {
		t.Errorf("verify = %+v", spec.Verify)
	}
	a := spec.Artifacts
	if a == nil || len(a.Patterns) != 0 || a.MaxFileBytes != Defaults().Artifacts.MaxFileBytes || a.MaxSessionBytes != Defaults().Artifacts.MaxSessionBytes {
		t.Errorf("artifacts = %+v, want the server's caps and no globs", a)
	}
	if err := spec.Validate(); err != nil && strings.Contains(err.Error(), "artifacts") {
		t.Errorf("the spec's artifacts do not validate: %v", err)
	}
	for _, bad := range []string{
		"verify:\n  - run: [x]\n    screenshots: [\"../x.png\"]\n",
		"setup:\n  - run: [x]\n    screenshots: [\"x.png\"]\n",
	} {
		if _, err := ParseRepo([]byte(bad)); err == nil || !strings.Contains(err.Error(), "screenshots") {
			t.Errorf("%q: err = %v, want a screenshots fault", bad, err)
		}
	}
}
