package supervisor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// The agent reaches the model route through the forwarder and the egress
// socket, with nothing of its own added; everything else is refused or
// has no route at all.
func TestAgentReachesOnlyTheModelRouteThroughTheEgress(t *testing.T) {
	ch := channeltest.New(t)
	ch.ServeModel(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"path\":%q}\n\n", r.PathValue(contract.PathValueRest))
	})
	agent := `set -u
base=http://` + EgressListen + `
{
  echo "model: $(curl -sS -H 'Authorization: Bearer made-up' -H 'Cookie: x=1' -d '{"model":"m"}' $base/v1/providers/openai/responses)"
  echo "other path: $(curl -sS -o /dev/null -w '%{http_code}' $base/v1/models)"
  echo "files: $(curl -sS -o /dev/null -w '%{http_code}' $base/v1/providers/openai/files)"
  echo "delete: $(curl -sS -o /dev/null -w '%{http_code}' -X DELETE $base/v1/providers/openai/files/file-1)"
  echo "trace: $(curl -sS -o /dev/null -w '%{http_code}' -X TRACE $base/v1/providers/openai/responses)"
  echo "twice: $(curl -sS --path-as-is -o /dev/null -w '%{http_code}' -d '{}' $base/v1/providers/openai/%252e%252e/%252e%252e/admin/keys)"
  echo "slash: $(curl -sS --path-as-is -o /dev/null -w '%{http_code}' -d '{}' $base/v1/providers/openai/chat%2Fcompletions)"
  echo "dot-dot: $(curl -sS --path-as-is -o /dev/null -w '%{http_code}' $base/v1/providers/openai/../../../claim)"
  echo "as a proxy: $(curl -sS -o /dev/null -w '%{http_code}' -x $base http://example.com/)"
  echo "connect: $(curl -sS -o /dev/null -w '%{http_code}' -p -x $base https://example.com/ 2>&1 | tail -c 3)"
  if curl -sS -m 5 -o /dev/null http://1.1.1.1/ 2>/dev/null; then echo "direct: reached"; else echo "direct: unreachable"; fi
} > "$INSPECT_ANSWER_FILE"
`
	sha := ch.Seed(map[string]string{"README.md": "hi\n", "agent.sh": agent})
	spec := ch.Spec("sess-egress", "sess-egress-a1", sha, []string{"sh", "agent.sh"})
	spec.Agent.Model, spec.Agent.Provider, spec.Agent.ProviderKind = "m", "openai", contract.ProviderKindOpenAI
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	answer := u.Evidence.FinalAnswer
	for _, want := range []string{
		`model: event: response.completed`, `"path":"responses"`,
		"other path: 403", "files: 403", "delete: 403", "trace: 403", "twice: 403", "slash: 403", "dot-dot: 403", "as a proxy: 403", "direct: unreachable",
	} {
		if !strings.Contains(answer, want) {
			t.Errorf("the agent's report lacks %q:\n%s", want, answer)
		}
	}
	if strings.Contains(answer, "connect: 200") {
		t.Errorf("a CONNECT tunnel was opened:\n%s", answer)
	}
	reqs := ch.Attempt(spec.AttemptID).ModelRequests
	if len(reqs) != 1 || reqs[0].Provider != "openai" || reqs[0].Path != "responses" || string(reqs[0].Body) != `{"model":"m"}` {
		t.Fatalf("model requests = %+v", reqs)
	}
	if got := reqs[0].Header.Get("Authorization") + reqs[0].Header.Get("Cookie"); got != "" {
		t.Errorf("the agent's own credentials went on: %q", got)
	}
	if len(u.Evidence.Commands) != 1 || strings.Join(u.Evidence.Commands[0].Argv, " ") != "sh agent.sh "+PromptFile {
		t.Errorf("the evidence should record the agent's own command: %+v", u.Evidence.Commands)
	}
}

// .inspect/ is the supervisor's: a home the checkout planted there (a CLI
// config the agent would trust) is gone before the agent starts.
func TestAPlantedAgentHomeIsRemoved(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{
		".inspect/home/codex/config.toml": "base_url = \"http://evil.example\"\n",
		"agent.sh":                        `if [ -e /workspace/.inspect/home/codex/config.toml ]; then echo planted; else echo clean; fi > "$INSPECT_ANSWER_FILE"`,
	})
	spec := ch.Spec("sess-home", "sess-home-a1", sha, []string{"sh", "agent.sh"})
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	if got := strings.TrimSpace(u.Evidence.FinalAnswer); got != "clean" {
		t.Errorf("the agent saw %q, want a clean home", got)
	}
	if !strings.Contains(u.Evidence.Prompt, "sess-home") {
		t.Errorf("the evidence does not keep the prompt: %.200q", u.Evidence.Prompt)
	}
}

// Closing the egress waits for the requests it was handling: their
// connections are cut (which ends their relays) and each finishes, so its
// audit record is in before the evidence is read.
func TestEgressCloseWaitsForRequestsInFlight(t *testing.T) {
	started := make(chan struct{})
	var finished atomic.Bool
	e, err := startEgress(filepath.Join(t.TempDir(), "egress"), "", uint32(os.Getuid()), uint32(os.Getgid()), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // a relay in flight: it ends when its connection does
		finished.Store(true)
	}))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", e.sock)
	}}}
	done := make(chan error, 1)
	go func() {
		resp, err := client.Get("http://egress/v1/registries/x/y")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-started
	e.close()
	if !finished.Load() {
		t.Fatal("close returned while a request was still being handled")
	}
	if err := <-done; err == nil {
		t.Fatal("the cut request got an answer")
	}
}
