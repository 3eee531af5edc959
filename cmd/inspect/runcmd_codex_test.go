package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/internal/fakemodel"
)

// The credentials only the server config holds.
const (
	runModelKey    = "sk-proj-inspect-run-0123456789abcdefghijklmnop"
	runUpstreamKey = "goproxy-upstream-token-run-0123456789"
)

// codexServer is a scripted model and a GOPROXY upstream that wants a
// token, serving fake.test/alpha, and a server config file that names
// both, with inspect serve's keys and nothing else.
func codexServer(t *testing.T) (*fakemodel.Server, *fakegoproxy.Proxy, fakegoproxy.Module, string) {
	t.Helper()
	if _, err := exec.LookPath("codex"); err != nil {
		t.Fatalf("codex is needed (run .ci/ensure-agent-clis): %v", err)
	}
	model := fakemodel.New()
	t.Cleanup(model.Close)
	model.RequireKey(runModelKey)
	alpha := fakegoproxy.Module{Path: "fake.test/alpha", Version: "v1.0.0", Files: map[string]string{
		"go.mod": fakegoproxy.GoMod("fake.test/alpha"), "alpha.go": "package alpha\n\n// Hello greets.\nconst Hello = \"hello\"\n"}}
	up := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{alpha}, Token: runUpstreamKey, TLS: true, Latency: 30 * time.Millisecond})
	_, sumKey := up.SumDB()
	dir := t.TempDir()
	keyFile, tokenFile := filepath.Join(dir, "model-key"), filepath.Join(dir, "goproxy-token")
	for f, v := range map[string]string{keyFile: runModelKey + "\n", tokenFile: runUpstreamKey + "\n"} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "server.yaml")
	yaml := "agents:\n" +
		"  providers:\n" +
		"    scripted: {kind: openai, base_url: \"" + model.URL() + "/v1\", api_key_path: " + keyFile + "}\n" +
		"  models:\n" +
		"    - {name: scripted-1, provider: scripted}\n" +
		"egress:\n" +
		"  registries:\n" +
		"    goproxy: {kind: goproxy, url: \"" + up.URL() + "\", token_path: " + tokenFile + ", ca_file: " + up.CertFile() + ", sumdb: \"" + sumKey + "\"}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return model, up, alpha, cfg
}

// `inspect run` with preset codex: the real Codex CLI, in the sandbox,
// reaches the scripted model only through the model proxy that inspect run
// serves, and fixes the sample; the repository's setup fetches its
// dependency through the registry egress (the upstream's token added
// outside the sandbox), and its verify passes with it. The patch applies.
func TestRunCodexFixesARepoThatNeedsARegistry(t *testing.T) {
	model, up, alpha, serverCfg := codexServer(t)
	files := examples.SampleRepo()
	files["go.mod"] = "module example.com/widgets\n\ngo 1.21\n\nrequire fake.test/alpha v1.0.0\n"
	files["go.sum"] = up.GoSum(alpha.Path, alpha.Version)
	files["uses.go"] = "package widgets\n\nimport \"fake.test/alpha\"\n\n// Greeting comes from a dependency.\nfunc Greeting() string { return alpha.Hello }\n"
	files[".github/inspect.yml"] = "agent: {preset: codex, model: scripted-1}\n" +
		"env: {GOTOOLCHAIN: local, GOFLAGS: -mod=readonly}\n" +
		"setup:\n  - name: modules\n    run: [go, mod, download]\n" +
		"verify:\n  - name: unit tests\n    run: [go, test, -json, ./...]\n"
	repo := gitRepo(t, files)
	model.Script(
		fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go"}, Usage: fakemodel.Usage{InputTokens: 3000, OutputTokens: 40}},
		fakemodel.Turn{Message: "Fixed Add: it added one too many.", Usage: fakemodel.Usage{InputTokens: 3100, OutputTokens: 12}},
	)
	out := t.TempDir()
	patch, evidence := filepath.Join(out, "fix.patch"), filepath.Join(out, "evidence.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--repo", repo, "--server-config", serverCfg, "--patch", patch, "--evidence", evidence,
		"--work-dir", sandboxWorkDir(t), "--", "make", "TestAdd", "pass"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nmodel requests %d, upstream %+v", code, stdout.String(), stderr.String(), len(model.Requests()), up.Requests())
	}
	for _, want := range []string{"Outcome:  ok", "modules", "unit tests", "1 passed, 0 failed", "Fixed Add: it added one too many.",
		"Model:    6152 tokens (6100 in, 52 out) over 2 requests", "registry requests", "0 refused", "written to " + patch} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if n := up.Fetches(fakegoproxy.KindZip)["fake.test/alpha@v1.0.0"]; n < 1 {
		t.Errorf("the module's zip was fetched %d times: %+v", n, up.Requests())
	}
	for _, q := range up.Requests() {
		if !q.Authenticated {
			t.Errorf("%s %s reached the upstream without the token", q.Method, q.Path)
		}
	}
	for _, r := range model.Requests() {
		if r.Header.Get("Authorization") != "Bearer "+runModelKey || r.Model != "scripted-1" {
			t.Errorf("the model got %v for %s", r.Header, r.Model)
		}
	}
	ev, err := os.ReadFile(evidence)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{runModelKey, runUpstreamKey} {
		for what, text := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "the evidence": string(ev)} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds a credential (%.12s…)", what, secret)
			}
		}
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "--quiet", repo, clone).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	apply := exec.Command("git", "apply", patch)
	apply.Dir = clone
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(clone, "calc.go")); err != nil || !strings.Contains(string(b), "return a + b }") {
		t.Errorf("calc.go after the patch: %v\n%s", err, b)
	}
}

// The same Codex, scripted to add a workflow: the change is refused with
// the reply the server posts (app/render's, on the policy's line), and no
// patch is written.
func TestRunCodexChangeToAWorkflowIsRefusedAsTheServerRefusesIt(t *testing.T) {
	model, _, _, serverCfg := codexServer(t)
	repo := gitRepo(t, map[string]string{"README.md": "hi\n", ".github/inspect.yml": "agent: {preset: codex, model: scripted-1}\n"})
	model.Script(
		fakemodel.Turn{Exec: []string{"mkdir -p .github/workflows && printf 'on: push\\n' > .github/workflows/x.yml"}},
		fakemodel.Turn{Message: "Added a workflow."},
	)
	patch := filepath.Join(t.TempDir(), "inspect.patch")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--repo", repo, "--server-config", serverCfg, "--patch", patch, "--work-dir", sandboxWorkDir(t), "--", "add", "CI"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	// What the server's report step would decide and say for this change.
	change := &contract.Manifest{Files: []contract.FileChange{{Path: ".github/workflows/x.yml", Mode: contract.ModeFile, Content: []byte("on: push\n"), Added: true}}}
	d, _ := config.Repo{}.CheckChange(change, contract.Limits{}, "r")
	want := render.ChangeRefusedReply(d)
	if d.Allowed || !strings.Contains(stdout.String(), "\nRefused:  "+want+"\n") || !strings.HasPrefix(stdout.String(), "Outcome:  change_refused: ") {
		t.Errorf("stdout lacks the server's reply %q:\n%s", want, stdout.String())
	}
	if _, err := os.Stat(patch); err == nil {
		t.Error("a patch was written for a refused change")
	}
}
