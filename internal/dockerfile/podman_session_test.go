package dockerfile

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/internal/webhookfixture"
)

// sessionTimeout bounds a session in the container, from the webhook to
// the pull request.
const sessionTimeout = 3 * time.Minute

// The repository and installation of GitHub's documented issue_comment
// example (testdata/github-webhooks), which the webhook payload is.
const (
	sessOwner          = "Codertocat"
	sessRepo           = "Hello-World"
	sessRepoID         = 186853002
	sessInstallationID = 1
	sessRequester      = "octocat"
	sessRequesterID    = 42
	sessModelKey       = "sk-podman-test-model-key"
)

// agentCLI is one real agent CLI of the tools image: its preset, whether
// its preset keeps the model's last message as the answer (codex exec
// --output-last-message; the others answer only by writing the answer file
// as the prompt asks, which the scripted model does not), and how its
// preset reaches the scripted model.
type agentCLI struct {
	preset      string
	lastMessage bool
	kind        string
	base        func(*fakemodel.Server) string
	key         func(fakemodel.Request) string
}

var agentCLIs = []agentCLI{
	{preset: "codex", lastMessage: true,
		kind: "openai", base: func(m *fakemodel.Server) string { return m.URL() + "/v1" }, key: bearer},
	{preset: "opencode",
		kind: "openai", base: func(m *fakemodel.Server) string { return m.URL() + "/v1" }, key: bearer},
	{preset: "claude-code",
		kind: "anthropic", base: func(m *fakemodel.Server) string { return m.URL() }, key: func(r fakemodel.Request) string { return r.Header.Get("X-Api-Key") }},
}

func bearer(r fakemodel.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// TestImageRunsEachAgentCLI is above the issue's floor: `inspect serve` in
// the local image, run with the flags the Dockerfile documents and
// configured as docs/deploy.md's single-replica recipe is (agents.tools_image
// set), takes a comment, and its session runs a real agent CLI (Codex CLI,
// OpenCode, Claude Code) from the tools image, in bubblewrap inside the
// container, on the image's own Debian root, which has no Node, against the
// scripted model through the model proxy, to a pull request on the GitHub
// stand-in with the agent's fix on its branch. The tools image is the one
// .ci/ensure-tools-image built on this machine, mounted read-only into the
// container at its own path, as an OCI layout on the host would be.
func TestImageRunsEachAgentCLI(t *testing.T) {
	toolsDir, toolsRef := sandboxtest.ToolsImage(t, "../..")
	p := newPodman(t)
	image := p.build(t, p.buildContext(t), "local")
	// One executor work directory for the three containers, as one host's
	// is: the tools image (1.3 GB flattened) is then flattened once, into
	// its layer cache, not once per container. It is the image's user's,
	// as the layer cache must be (decision 0026).
	work := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, localUID, localUID); err != nil {
		t.Fatalf("the work directory for the image's user %d: %v", localUID, err)
	}
	for _, a := range agentCLIs {
		t.Run(a.preset, func(t *testing.T) { sessionInImage(t, p, image, work, toolsDir, toolsRef, a) })
	}
}

// localUID is the user the local image runs as (its Dockerfile stage's
// USER, which the Dockerfile's test holds it to).
const localUID = 10001

// containerWork is where the work directory is mounted in the container.
const containerWork = "/var/lib/inspect/work"

func sessionInImage(t *testing.T, p podman, image, work, toolsDir, toolsRef string, a agentCLI) {
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	gh.AddInstallation(sessInstallationID, sessOwner)
	gh.AddRepo(fakegithub.Repo{ID: sessRepoID, Owner: sessOwner, Name: sessRepo, DefaultBranch: "main", InstallationID: sessInstallationID, OwnerType: "User"})
	gh.AddUser(sessRequester, sessRequesterID, "User")
	gh.SetPermission(sessOwner, sessRepo, sessRequester, "write")
	gh.CommitFiles(sessOwner, sessRepo, "main", map[string]string{
		"calc.go":             "package calc\n\n// Add adds a and b.\nfunc Add(a, b int) int { return a + b + 1 }\n",
		".github/inspect.yml": "agent:\n  preset: " + a.preset + "\n  model: scripted-1\nverify: []\n",
	}, "a bug in Add")

	model := fakemodel.New()
	t.Cleanup(model.Close)
	model.RequireKey(sessModelKey)
	model.Script(
		fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go && echo fixed"}},
		fakemodel.Turn{Message: "Fixed Add: it added one too many."},
	)

	etc := t.TempDir()
	if err := os.Chmod(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"app-key.pem": gh.AppPrivateKeyPEM(), "model-key": []byte(sessModelKey + "\n")} {
		// Readable by the image's user: test keys in a test's directory.
		if err := os.WriteFile(filepath.Join(etc, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := yaml.Marshal(map[string]any{
		"listen":    "127.0.0.1:0",
		"log_level": "info",
		"github": map[string]any{
			"api_url":          gh.APIURL(),
			"web_url":          gh.URL(),
			"app_id":           gh.AppID(),
			"private_key_path": "/etc/inspect/app-key.pem",
			"webhook_secret":   "podman-test-secret",
		},
		"executor":  map[string]any{"kind": "local", "work_dir": containerWork},
		"snapshots": map[string]any{"store": ""},
		"agents": map[string]any{
			"tools_image": toolsRef,
			"providers": map[string]any{"scripted": map[string]any{
				"kind": a.kind, "base_url": a.base(model), "api_key_path": "/etc/inspect/model-key",
			}},
			"models": []map[string]any{{"name": "scripted-1", "provider": "scripted", "presets": []string{a.preset}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "inspect.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	name := fmt.Sprintf("inspect-session-%d-%d", os.Getpid(), time.Now().UnixNano())
	args := []string{"run", "--rm", "--name", name, "--network=host",
		"--volume", etc + ":/etc/inspect:ro",
		"--volume", toolsDir + ":" + toolsDir + ":ro",
		"--volume", work + ":" + containerWork,
	}
	args = append(args, documentedRunFlags(t)...)
	c := p.start(t, name, append(args, image)...)

	ctx, cancel := context.WithTimeout(t.Context(), imageStartTimeout)
	defer cancel()
	serving, err := c.waitLine(ctx, "inspect serving")
	if err != nil {
		t.Fatalf("%v\n%s", err, c.logs())
	}
	gh.SetWebhookTargets("podman-test-secret", "http://"+serving.Listen+webhookPath)

	gh.AddIssue(sessOwner, sessRepo, fakegithub.Issue{Number: 1, Title: "Add is off by one", Body: "Add(1, 1) is 3", State: "open", User: sessRequester})
	d := gh.Deliver(ctx, "issue_comment", commentPayload(t, gh, 1, "/inspect fix Add"))
	if d.StatusCode != 200 && d.StatusCode != 202 {
		t.Fatalf("the webhook was answered %q\n%s", d.Status, c.logs())
	}

	// The session's pull request, polled on the stand-in: its creation is
	// the container's, not the test's.
	pulls := "/repos/" + sessOwner + "/" + sessRepo + "/pulls"
	deadline := time.Now().Add(sessionTimeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var pr []byte
	for pr == nil {
		if pr = created(gh, pulls); pr != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pull request after %s; model requests %d, exhausted %d; outputs %q\n%s",
				sessionTimeout, len(model.Requests()), model.Exhausted(), model.FunctionOutputs(), c.logs())
		}
		<-tick.C
	}

	var opened struct{ Body string }
	if err := json.Unmarshal(pr, &opened); err != nil {
		t.Fatalf("the pull request's body: %v: %s", err, pr)
	}
	wants := []string{"Agent: " + a.preset + " with `scripted-1`", "| `calc.go` | modified |"}
	if a.lastMessage {
		wants = append(wants, "## The agent's answer", "Fixed Add: it added one too many.")
	}
	for _, want := range wants {
		if !strings.Contains(opened.Body, want) {
			t.Errorf("the pull request's body lacks %q:\n%s", want, opened.Body)
		}
	}
	// The agent ran from the tools image: the evidence says so, and the PR
	// body shows the evidence's digest (decision 0077's environment lines).
	if _, digest, _ := strings.Cut(toolsRef, "@"); !strings.Contains(opened.Body, "Tools image `"+digest+"`") {
		t.Errorf("the pull request's body does not name the tools image %s:\n%s", digest, opened.Body)
	}
	if outs := strings.Join(model.FunctionOutputs(), "\n"); !strings.Contains(outs, "fixed") {
		t.Errorf("the agent's command did not run in the sandbox: %q", outs)
	}
	for _, r := range model.Requests() {
		if r.Status != 200 || a.key(r) != sessModelKey {
			t.Errorf("the provider got %s %s (status %d) without the server's key", r.Method, r.Path, r.Status)
		}
	}
	fixed := false
	for _, ref := range branches(t, gh) {
		if ref == "main" {
			continue
		}
		out, err := exec.Command("git", "--git-dir", gh.GitDir(sessOwner, sessRepo), "show", ref+":calc.go").Output()
		if err == nil && strings.Contains(string(out), "return a + b }") {
			fixed = true
		}
	}
	if !fixed {
		t.Errorf("no branch on the stand-in has the agent's fix: %v", branches(t, gh))
	}
}

// created is the body of a POST to exactly path the stand-in answered
// 201, nil while there is none.
func created(gh *fakegithub.Server, path string) []byte {
	for _, r := range gh.RequestsMatching("POST", path) {
		if r.Path == path && r.Status == 201 {
			return r.Body
		}
	}
	return nil
}

func branches(t *testing.T, gh *fakegithub.Server) []string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", gh.GitDir(sessOwner, sessRepo), "for-each-ref", "--format=%(refname:short)", "refs/heads").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// commentPayload is GitHub's issue_comment webhook (the documented
// example) for a comment by the requester on issue n, which the stand-in
// holds as GitHub would before it sends the webhook.
func commentPayload(t *testing.T, gh *fakegithub.Server, n int, body string) []byte {
	t.Helper()
	id := gh.AddComment(sessOwner, sessRepo, n, sessRequester, body)
	out, err := webhookfixture.IssueComment(webhookfixture.Comment{
		Owner: sessOwner, Repo: sessRepo, Number: n, Login: sessRequester, UserID: sessRequesterID,
		ID: id, Body: body, InstallationID: sessInstallationID,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
