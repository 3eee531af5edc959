package checkoutrun

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/supervisor"
)

// stampRepo's config uses env, the session setup and a snapshot (a cache
// that the snapshot setup fills), and its agent answers with what it
// finds there: each part shows in the answer.
var stampRepo = map[string]string{
	"lock.txt": "v1\n",
	".github/inspect.yml": `agent:
  preset: command
  command: ["sh", "-c", "cat /cache/demo/stamp > \"$INSPECT_ANSWER_FILE\""]
env:
  GREETING: hello
snapshot:
  setup:
    - name: stamp
      run: ["sh", "-c", "echo \"$GREETING from the snapshot setup\" > /cache/demo/stamp"]
  caches:
    - path: /cache/demo
      lockfiles: [lock.txt]
setup:
  - name: more
    run: ["sh", "-c", "echo \"$GREETING from the session setup\" >> /cache/demo/stamp"]
verify:
  - name: env and setup
    run: ["sh", "-c", "test \"$GREETING\" = hello && grep -q 'from the session setup' /cache/demo/stamp"]
limits: {max_files: 3, session_timeout: 5m}
`,
}

// The session the server would run, from the repository's config: env in
// every command, the snapshot setup and the session setup before the
// agent, cold without a snapshot in the store; restored from the store the
// user names once it holds one, where the snapshot setup does not run
// again; the limits narrowed by the repository.
func TestRunHonoursEnvSetupAndSnapshots(t *testing.T) {
	t.Parallel()
	repo, sha := newRepo(t, stampRepo)
	var progress lockedBuffer
	opt := options(t, repo, &progress)
	storeName := images.LayoutPrefix + t.TempDir()
	opt.RepoName, opt.SnapshotStore = "acme/widgets", storeName
	cold, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if cold.Evidence.Outcome != contract.OutcomeOK || cold.Evidence.FinalAnswer != "hello from the snapshot setup\nhello from the session setup\n" {
		t.Fatalf("cold: %s (%s), answer %q", cold.Evidence.Outcome, cold.Evidence.Reason, cold.Evidence.FinalAnswer)
	}
	// The repository narrows the server's limits (sessions.timeout 30m,
	// sessions.max_changed_files 100), as on the server.
	if l := cold.Spec.Limits; l.MaxChangedFiles != 3 || time.Duration(l.Timeout) != 5*time.Minute || l.MaxChangeBytes != config.Defaults().Sessions.MaxChangeBytes {
		t.Errorf("limits = %+v", l)
	}
	if names := commandNames(cold.Evidence); names != "snapshot stamp,more,agent,env and setup" {
		t.Errorf("cold commands: %s", names)
	}
	if w := cold.Evidence.Workspace; w == nil || w.Source != contract.WorkspaceClone || cold.Spec.Snapshot == nil || cold.Spec.Snapshot.Digest != "" {
		t.Errorf("cold workspace = %+v, snapshot %+v", w, cold.Spec.Snapshot)
	}
	if !strings.Contains(progress.String(), "holds no snapshot of acme/widgets") {
		t.Errorf("no note of the empty store:\n%s", progress.String())
	}

	// A snapshot of acme/widgets, as `inspect snapshot build` makes it.
	store, err := images.OpenStore(storeName)
	if err != nil {
		t.Fatal(err)
	}
	repoCfg, err := config.ParseRepo([]byte(stampRepo[".github/inspect.yml"]))
	if err != nil {
		t.Fatal(err)
	}
	built, err := supervisor.BuildSnapshot(context.Background(), runner.SnapshotBuild{
		Repo: contract.Repo{Owner: "acme", Name: "widgets", CloneURL: repo}, SHA: sha,
		Setup: repoCfg.SnapshotSetupCommands(time.Minute, time.Minute), Caches: repoCfg.SnapshotCaches(), Env: repoCfg.Env,
		Store: store, Version: "test", WorkDir: workDir(t), Log: zerolog.New(zerolog.NewTestWriter(t)),
	})
	if err != nil {
		t.Fatal(err)
	}
	opt = options(t, repo, &progress)
	opt.RepoName, opt.SnapshotStore = "acme/widgets", storeName
	warm, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if w := warm.Evidence.Workspace; w == nil || w.Source != contract.WorkspaceSnapshot || w.SnapshotDigest != built.Snapshot.Digest.String() {
		t.Fatalf("warm workspace = %+v, want snapshot %s (%s: %s)", w, built.Snapshot.Digest, warm.Evidence.Outcome, warm.Evidence.Reason)
	}
	if warm.Evidence.Outcome != contract.OutcomeOK || warm.Evidence.FinalAnswer != "hello from the snapshot setup\nhello from the session setup\n" {
		t.Errorf("warm: %s (%s), answer %q", warm.Evidence.Outcome, warm.Evidence.Reason, warm.Evidence.FinalAnswer)
	}
	if names := commandNames(warm.Evidence); names != "more,agent,env and setup" {
		t.Errorf("warm commands: %s (the snapshot setup ran again)", names)
	}
}

func commandNames(ev contract.Evidence) string {
	var names []string
	for _, c := range ev.Commands {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

// A change to a protected path is refused with the server's reply, and no
// patch is written: the default protected paths, and the repository's own.
func TestRunRefusesAChangeToAProtectedPath(t *testing.T) {
	t.Parallel()
	repo, _ := newRepo(t, map[string]string{
		"README.md": "hi\n",
		".github/inspect.yml": `agent:
  preset: command
  command: ["sh", "-c", "mkdir -p .github/workflows deploy && echo 'on: push' > .github/workflows/x.yml && echo run > deploy/go.sh && echo more >> README.md"]
protected_paths: ["deploy/**"]
`,
	})
	var progress lockedBuffer
	opt := options(t, repo, &progress)
	// A renderer of its own (app/render is above this layer): the refusal
	// is what it makes of the policy's decision.
	say := func(d policy.ChangeDecision) string {
		return "the server says: " + string(d.Reason) + " " + strings.Join(d.Offending, ", ")
	}
	opt.ChangeRefusedReply = say
	res, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Manifest == nil || len(res.Manifest.Files) != 3 {
		t.Fatalf("manifest = %+v (%s)", res.Manifest, res.Evidence.Reason)
	}
	repoCfg := config.Repo{ProtectedPaths: []string{"deploy/**"}}
	d, _ := repoCfg.CheckChange(res.Manifest, res.Spec.Limits, res.Spec.Repo.Name)
	if d.Allowed || d.Reason != "protected_path" || res.Refusal != say(d) {
		t.Fatalf("refusal = %q; the policy says %+v", res.Refusal, d)
	}
	for _, p := range []string{".github/workflows/x.yml", "deploy/go.sh"} {
		if !strings.Contains(res.Refusal, p) {
			t.Errorf("the refusal does not name %s: %s", p, res.Refusal)
		}
	}
	if res.ExitCode() != 1 || res.Changed() || res.PatchFile != "" {
		t.Errorf("exit %d, patch %d bytes, file %q", res.ExitCode(), len(res.Patch), res.PatchFile)
	}
	if _, err := os.Stat(opt.PatchFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a patch was written: %v", err)
	}
	var summary bytes.Buffer
	res.WriteSummary(&summary)
	for _, want := range []string{"Refused:  " + say(d) + "\n", "the change was refused"} {
		if !strings.Contains(summary.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary.String())
		}
	}
}

// What a preset agent needs and lacks is said, before anything runs.
func TestRunSaysWhatAPresetAgentLacks(t *testing.T) {
	t.Parallel()
	codex, _ := newRepo(t, map[string]string{".github/inspect.yml": "agent: {preset: codex, model: gpt-5-codex}\n"})
	srv := config.Defaults()
	srv.Agents.Providers = map[string]config.Provider{"openai": {Kind: "openai", BaseURL: "https://api.openai.com/v1", Key: "k"}}
	srv.Agents.Models = []config.Model{{Name: "gpt-5-mini", Provider: "openai"}}
	cases := []struct {
		name string
		opt  Options
		want string
	}{
		{"no server config", Options{RepoDir: codex, Instructions: "x"},
			".github/inspect.yml at HEAD asks for agent preset codex with model gpt-5-codex, which needs a model provider, and no server config names one: " +
				"give --server-config FILE, a server config (the keys of `inspect serve --config`) whose agents.providers and agents.models offer gpt-5-codex to preset codex"},
		{"a server config without the model", Options{RepoDir: codex, Instructions: "x", Server: &srv, ServerSource: "server.yaml"},
			`the agent of .github/inspect.yml at HEAD cannot run with --server-config server.yaml: agent.model: "gpt-5-codex" is not a model this Inspect server offers to preset codex; choose one of: gpt-5-mini`},
		{"a bad repository name", Options{RepoDir: codex, Instructions: "x", Server: &srv, RepoName: "acme"}, "--repo-name must be OWNER/NAME"},
	}
	for _, tc := range cases {
		res, err := Run(context.Background(), tc.opt)
		var ue *UsageError
		if !errors.As(err, &ue) || res != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error with %q", tc.name, err, tc.want)
		}
	}
}
