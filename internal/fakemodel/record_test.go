package fakemodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With RecordDirEnv set, each accepted request is written to the
// directory with the headers that name API features and its body, and
// never the key; a refused one is not written.
func TestRecordsAcceptedRequestsWithoutTheKey(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(RecordDirEnv, dir)
	s := newServer(t)
	s.Script(Turn{Message: "hi", Usage: Usage{InputTokens: 1, OutputTokens: 1}})
	body := messagesBody(false, []any{map[string]any{"role": "user", "content": "hi"}})
	post(t, s, "/v1/messages", "", body, "X-Api-Key", "wrong-key", "Anthropic-Version", "2023-06-01")
	post(t, s, "/v1/messages", "", body, "X-Api-Key", testKey, "Anthropic-Version", "2023-06-01", "Anthropic-Beta", "a-1,b-2")
	files, err := filepath.Glob(filepath.Join(dir, "request-*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("recordings %v %v; want the one accepted request", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), testKey) {
		t.Errorf("the recording holds the key:\n%s", b)
	}
	var rec Recorded
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body, &got); err != nil || got["model"] != "claude-test" {
		t.Errorf("body %s (%v)", rec.Body, err)
	}
	if rec.Method != "POST" || rec.Path != "/v1/messages" || strings.Join(rec.Header["Anthropic-Beta"], "") != "a-1,b-2" || len(rec.Header["X-Api-Key"]) != 0 {
		t.Errorf("recorded %+v", rec)
	}
}
