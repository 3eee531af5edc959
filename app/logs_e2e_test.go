package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/session"
)

// Every log line of a session's path, from the webhook that started it
// through the workers, the session channel and the report, carries the
// session's id and the delivery id of that webhook; and every line is
// zerolog JSON. A line belongs to the path when any field names the
// session, its attempt or the delivery. The webhook's lines before the
// session exists (received, parsed) carry the delivery id alone: the
// session's id is not made yet, and the session records the delivery.
func TestEachLogLineOfASessionCarriesItsIDs(t *testing.T) {
	h, _, lx := newModelHarness(t, 0)
	// A model request the proxy refuses, so the session channel logs too.
	agent := `curl -sS -o /dev/null -d '{}' http://127.0.0.1:8931/v1/providers/openai/responses
echo done > "$INSPECT_ANSWER_FILE"
`
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\n",
	}, "an agent that answers")
	sess := h.runSandboxSession(lx, "/inspect say hello")
	if sess.State() != session.Done || sess.DeliveryID == "" {
		t.Fatalf("session = %s/%s delivery %q: %s\n%s", sess.State(), sess.Outcome, sess.DeliveryID, sess.Detail, h.logs)
	}
	ids := []string{sess.ID, sess.AttemptID, sess.DeliveryID}
	var onPath, fromChannel int
	sessionKnown := false
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var fields map[string]any
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Errorf("log line %d is not JSON: %v\n%s", i, err, line)
			continue
		}
		if !mentionsAny(fields, ids) {
			continue
		}
		onPath++
		if _, ok := fields["channel"]; ok {
			fromChannel++
		}
		msg, _ := fields["message"].(string)
		seen[msg] = true
		sessionKnown = sessionKnown || fields["session_id"] == sess.ID
		if !sessionKnown {
			if fields["delivery_id"] != sess.DeliveryID {
				t.Errorf("line %d, before the session, lacks the delivery id: %s", i, line)
			}
			continue
		}
		if fields["session_id"] != sess.ID || fields["delivery_id"] != sess.DeliveryID {
			t.Errorf("line %d lacks the session's ids (session_id %v, delivery_id %v): %s", i, fields["session_id"], fields["delivery_id"], line)
		}
	}
	// The path was logged at all: intake, the workers, the channel.
	if onPath < 5 || fromChannel == 0 {
		t.Fatalf("only %d lines on the session's path, %d from the channel:\n%s", onPath, fromChannel, h.logs)
	}
	t.Logf("%d lines on the session's path: %v", onPath, seen)
}

// mentionsAny says whether any string field holds one of ids.
func mentionsAny(fields map[string]any, ids []string) bool {
	for _, v := range fields {
		s, ok := v.(string)
		if !ok {
			continue
		}
		for _, id := range ids {
			if id != "" && strings.Contains(s, id) {
				return true
			}
		}
	}
	return false
}
