package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/session"
)

// A hostile command agent, in the real sandbox through the real proxy:
// the server's key opens no route but the kind's named ones (the files
// API, TRACE and a doubly encoded climb out of the base URL's /v1 never
// reach the provider), an upstream that echoes the key one byte per write
// never hands it to the sandbox or GitHub, and a streamed chat completion
// that did not ask for its usage is counted all the same.
func TestModelProxyGivesAHostileAgentNothing(t *testing.T) {
	h, model, lx := newModelHarness(t, 0)
	model.Script(
		fakemodel.Turn{EchoHeaders: true},
		fakemodel.Turn{Message: "streamed reply", Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 20}},
	)
	agent := `set -u
base=http://127.0.0.1:8931/v1/providers/scripted
code() { curl -sS --path-as-is -o /dev/null -w '%{http_code}' "$@"; }
{
  echo "list files: $(code $base/files)"
  echo "delete file: $(code -X DELETE $base/files/file-1)"
  echo "trace: $(code -X TRACE $base/responses)"
  echo "twice encoded: $(code -d '{}' $base/%252e%252e/%252e%252e/admin/keys)"
  echo "once encoded: $(code -d '{}' $base/%2e%2e/admin/keys)"
  echo "echo: $(curl -sS -H 'Content-Type: application/json' -d '{"model":"scripted-1","input":"hi"}' $base/responses)"
  echo "chat: $(curl -sS -N -H 'Content-Type: application/json' -d '{"model":"scripted-1","messages":[{"role":"user","content":"hi"}],"stream":true}' $base/chat/completions | grep -c 'streamed reply')"
} > "$INSPECT_ANSWER_FILE"
`
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\n",
	}, "a hostile agent")
	sess := h.runSandboxSession(lx, "/inspect try everything")
	if sess.Outcome != session.NoChange {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}
	for _, want := range []string{"list files: 403", "delete file: 403", "trace: 403", "twice encoded: 403", "once encoded: 403", "Authorization: Bearer [", "chat: 1"} {
		if !strings.Contains(sess.Detail, want) {
			t.Errorf("the agent's answer lacks %q:\n%s", want, sess.Detail)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/responses" || reqs[1].Path != "/v1/chat/completions" {
		paths := []string{}
		for _, r := range reqs {
			paths = append(paths, r.Method+" "+r.Path)
		}
		t.Fatalf("the provider got %v, want only the two named routes", paths)
	}
	var chat struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(reqs[1].Body, &chat); err != nil || !chat.StreamOptions.IncludeUsage {
		t.Errorf("the chat request went without include_usage: %s", reqs[1].Body)
	}
	// The stream's 120 are counted; the echo, a successful answer that
	// reports no usage, is charged its whole reservation (decision 0053):
	// its body's input estimate plus the default output reservation.
	echoReserved := int64(len(`{"model":"scripted-1","input":"hi"}`))/4 + 1 + config.DefaultOutputReservation
	used, err := h.st.SessionUsage(context.Background(), sess.AttemptID)
	if err != nil || used.InputTokens != 100 || used.OutputTokens != 20 || used.TotalTokens != 120+echoReserved || used.Requests != 2 {
		t.Errorf("usage = %+v %v, want the stream's 120 counted and the echo charged its %d", used, err, echoReserved)
	}
	var posted strings.Builder
	for _, c := range h.gh.Comments(owner, repoName, issueNumber) {
		posted.WriteString(c.Body)
	}
	for where, text := range map[string]string{"the answer": sess.Detail, "a comment": posted.String(), "the app's log": h.logs.String()} {
		if strings.Contains(text, modelKey) {
			t.Errorf("the key is in %s", where)
		}
	}
}

// Metering a hostile agent cannot dodge, against token_budget 1000: ten
// requests at once. The model holds every answer open after its content,
// before its usage, so whichever request is admitted stays in flight while
// the other nine are decided: the overlap is forced, not hoped for. Nine
// are refused, then the agent hangs up on the one still open, which is
// charged its reservation, never zero. What the session is charged, and
// what the provider served, stay within the budget plus one reservation.
func TestTokenBudgetHoldsAgainstParallelRequestsAndHangUps(t *testing.T) {
	h, model, lx := newModelHarness(t, 1000)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	for range 10 {
		model.Script(fakemodel.Turn{Message: "parallel", HoldUsage: hold, Usage: fakemodel.Usage{InputTokens: 600, OutputTokens: 100}})
	}
	// bash, for wait -n: nine requests end (refused) while the admitted one
	// is held; were a second admitted, the ninth wait would never return
	// and the session would time out.
	agent := `set -u
base=http://127.0.0.1:8931/v1/providers/scripted
body='{"model":"scripted-1","messages":[{"role":"user","content":"hi"}],"stream":true}'
for i in 1 2 3 4 5 6 7 8 9 10; do
  curl -sS -N -o /dev/null -H 'Content-Type: application/json' -d "$body" $base/chat/completions &
done
for i in 1 2 3 4 5 6 7 8 9; do wait -n; done
kill $(jobs -p); wait
`
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"bash\", \"agent.sh\"]\n  model: scripted-1\n",
	}, "a greedy agent")
	sess := h.runSandboxSession(lx, "/inspect spend it all")
	// The session ended over its budget, so its answer is the budget's
	// reply, and its evidence came after the end; the app's log says
	// what the nine were told: the budget is held by the one in flight,
	// or (those that came at once) the session's requests in flight are
	// at their cap. Both are a 429 to retry.
	var held, capped int
	for _, line := range strings.Split(h.logs.String(), "\n") {
		switch {
		case !strings.Contains(line, `"message":"model request refused"`):
		case strings.Contains(line, "token budget (1000) is reserved by its requests in flight"):
			held++
		case strings.Contains(line, "model requests in flight, its most at once"):
			capped++
		default:
			t.Errorf("a request was refused otherwise: %s", line)
		}
	}
	if held+capped != 9 || held == 0 {
		t.Errorf("%d requests were refused as the budget held, %d at the cap in flight; want nine, some held:\n%s", held, capped, h.logs)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d requests reached the provider, want the one admitted", n)
	}
	used, err := h.st.SessionUsage(context.Background(), sess.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	reserved, _, err := h.st.ModelReservations(context.Background(), sess.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	// One reservation: a body of about 150 bytes (with include_usage
	// added) plus the default output reservation.
	const outputReservation = 8192
	const oneReservation = 200/4 + 1 + outputReservation + 64
	charged := used.TotalTokens + reserved
	if charged < outputReservation || charged > 1000+oneReservation {
		t.Errorf("charged %d (used %+v, %d reserved): the hang-up is charged its reservation, and no more than the budget plus one", charged, used, reserved)
	}
	if sess.Reason != "token_budget" {
		t.Errorf("session = %s/%s %s: %s\n%s", sess.State(), sess.Outcome, sess.Reason, sess.Detail, h.logs)
	}
}

// With http.write_timeout at 2 s, a model stream of 5 s still arrives
// whole: each write of an egress answer extends its own deadline. (Under a
// fixed deadline the stream would be cut at its fifth word.)
func TestASlowModelStreamOutlastsTheWriteTimeout(t *testing.T) {
	h, model, lx := newModelHarness(t, 0)
	h.stop()
	h.cfg.HTTP.WriteTimeout = 2 * time.Second
	h.serverTimeouts = true
	h.start()
	model.Script(fakemodel.Turn{Message: "one two three four five six seven eight nine ten", Pace: 500 * time.Millisecond,
		Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 10}})
	agent := `out=$(mktemp)
curl -sS -N -H 'Content-Type: application/json' -d '{"model":"scripted-1","messages":[{"role":"user","content":"count"}],"stream":true}' http://127.0.0.1:8931/v1/providers/scripted/chat/completions > "$out"
{ echo "words: $(grep -o '"content":"[a-z]* *"' "$out" | wc -l)"; grep -c 'DONE' "$out" | sed 's/^/done: /'; } > "$INSPECT_ANSWER_FILE"
`
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\n",
	}, "a patient agent")
	sess := h.runSandboxSession(lx, "/inspect count slowly")
	for _, want := range []string{"words: 10", "done: 1"} {
		if !strings.Contains(sess.Detail, want) {
			t.Errorf("the agent's answer lacks %q:\n%s\n%s", want, sess.Detail, h.logs)
		}
	}
}
