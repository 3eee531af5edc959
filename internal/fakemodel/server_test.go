package fakemodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

const testKey = "sk-test-0123456789"

func newServer(t *testing.T) *Server {
	t.Helper()
	s := New()
	t.Cleanup(s.Close)
	s.RequireKey(testKey)
	return s
}

// post sends body to path with the test key and returns the response with
// its body read.
func post(t *testing.T, s *Server, path, key string, body any, header ...string) (*http.Response, []byte) {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, s.URL()+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func responsesBody(stream bool, input any) map[string]any {
	return map[string]any{"model": "gpt-test", "stream": stream, "input": input}
}

type event struct {
	name string
	data map[string]any
}

// parseSSE reads server-sent events strictly: each "event: NAME" then
// "data: JSON" then a blank line, the data's "type" equal to NAME.
func parseSSE(t *testing.T, body []byte) []event {
	t.Helper()
	var events []event
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			t.Fatalf("want an event: line, got %q", sc.Text())
		}
		if !sc.Scan() {
			t.Fatalf("event %s has no data line", name)
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			t.Fatalf("want a data: line after event %s, got %q", name, sc.Text())
		}
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("event %s: want a blank line after data", name)
		}
		var e event
		e.name = name
		if err := json.Unmarshal([]byte(data), &e.data); err != nil {
			t.Fatalf("event %s: data is not JSON: %v", name, err)
		}
		if e.data["type"] != name {
			t.Fatalf("event %s carries type %v", name, e.data["type"])
		}
		events = append(events, e)
	}
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	return events
}

func names(events []event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.name)
	}
	return out
}

func only(t *testing.T, events []event, name string) []event {
	t.Helper()
	var out []event
	for _, e := range events {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// obj walks nested JSON objects.
func obj(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("at %q: %v is not an object", k, v)
		}
		v = m[k]
	}
	return v
}

func TestStreamExecFraming(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Exec: []string{"echo hi > out.txt", "ls -la"}, Usage: Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}})

	resp, body := post(t, s, "/v1/responses", testKey, responsesBody(true, "write hi"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := parseSSE(t, body)
	got := names(events)
	if got[0] != "response.created" || got[len(got)-1] != "response.completed" {
		t.Fatalf("events %v: want response.created first and response.completed last", got)
	}
	for i, e := range events {
		if n := e.data["sequence_number"]; n != float64(i) {
			t.Fatalf("event %d (%s) has sequence_number %v", i, e.name, n)
		}
	}
	respID := obj(t, events[0].data, "response", "id")
	if id, _ := respID.(string); !strings.HasPrefix(id, "resp_") {
		t.Fatalf("response id %v", respID)
	}
	if obj(t, events[0].data, "response", "status") != "in_progress" {
		t.Fatalf("created: %v", events[0].data)
	}

	added := only(t, events, "response.output_item.added")
	done := only(t, events, "response.output_item.done")
	if len(added) != 2 || len(done) != 2 {
		t.Fatalf("events %v: want two items added and done", got)
	}
	callIDs := map[string]bool{}
	for i, cmd := range []string{"echo hi > out.txt", "ls -la"} {
		if done[i].data["output_index"] != float64(i) || added[i].data["output_index"] != float64(i) {
			t.Fatalf("item %d: output_index %v / %v", i, added[i].data["output_index"], done[i].data["output_index"])
		}
		item := done[i].data["item"].(map[string]any)
		if item["type"] != "function_call" || item["name"] != "exec_command" || item["status"] != "completed" {
			t.Fatalf("item %d: %v", i, item)
		}
		var args map[string]string
		if err := json.Unmarshal([]byte(item["arguments"].(string)), &args); err != nil || args["cmd"] != cmd || len(args) != 1 {
			t.Fatalf("item %d: arguments %v (%v)", i, item["arguments"], err)
		}
		callID, _ := item["call_id"].(string)
		if callID == "" || callIDs[callID] {
			t.Fatalf("item %d: call_id %q missing or repeated", i, callID)
		}
		callIDs[callID] = true
		if obj(t, added[i].data, "item", "call_id") != callID {
			t.Fatalf("item %d: added with another call_id: %v", i, added[i].data)
		}
	}
	// The arguments stream as deltas too, for clients that assemble them.
	if n := len(only(t, events, "response.function_call_arguments.done")); n != 2 {
		t.Fatalf("%d function_call_arguments.done events", n)
	}

	completed := events[len(events)-1].data
	if obj(t, completed, "response", "id") != respID || obj(t, completed, "response", "status") != "completed" {
		t.Fatalf("completed: %v", completed)
	}
	if out := obj(t, completed, "response", "output").([]any); len(out) != 2 {
		t.Fatalf("completed output: %v", out)
	}
	usage := obj(t, completed, "response", "usage")
	for k, want := range map[string]float64{"input_tokens": 120, "output_tokens": 30, "total_tokens": 150} {
		if got := obj(t, usage, k); got != want {
			t.Errorf("usage %s = %v, want %v", k, got, want)
		}
	}
	if obj(t, usage, "input_tokens_details", "cached_tokens") != float64(0) ||
		obj(t, usage, "output_tokens_details", "reasoning_tokens") != float64(0) {
		t.Errorf("usage details: %v", usage)
	}
}

func TestStreamMessage(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Message: "All done.", Usage: Usage{InputTokens: 7, OutputTokens: 5}})

	_, body := post(t, s, "/v1/responses", testKey, responsesBody(true, "hi"))
	events := parseSSE(t, body)
	done := only(t, events, "response.output_item.done")
	if len(done) != 1 {
		t.Fatalf("events %v", names(events))
	}
	item := done[0].data["item"].(map[string]any)
	if item["type"] != "message" || item["role"] != "assistant" {
		t.Fatalf("item %v", item)
	}
	content := item["content"].([]any)
	if len(content) != 1 || obj(t, content[0], "type") != "output_text" || obj(t, content[0], "text") != "All done." {
		t.Fatalf("content %v", content)
	}
	deltas := only(t, events, "response.output_text.delta")
	if len(deltas) != 1 || deltas[0].data["delta"] != "All done." {
		t.Fatalf("deltas %v", deltas)
	}
	// TotalTokens left zero is reported as the sum.
	usage := obj(t, events[len(events)-1].data, "response", "usage")
	if obj(t, usage, "total_tokens") != float64(12) || obj(t, usage, "input_tokens") != float64(7) || obj(t, usage, "output_tokens") != float64(5) {
		t.Fatalf("usage %v", usage)
	}
}

// flushCounter is a ResponseWriter that counts flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

func TestStreamFlushesEachEvent(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Exec: []string{"true"}})
	r := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(`{"model":"m","stream":true,"input":"x"}`))
	r.Header.Set("Authorization", "Bearer "+testKey)
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	s.serveHTTP(w, r)
	events := parseSSE(t, w.Body.Bytes())
	// One flush for the headers, then one per event.
	if w.flushes != len(events)+1 {
		t.Fatalf("%d flushes for %d events", w.flushes, len(events))
	}
}

func TestNonStreaming(t *testing.T) {
	s := newServer(t)
	s.Script(
		Turn{Exec: []string{"make test"}, Usage: Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 9}},
		Turn{Message: "ok"},
	)
	for i, body := range []map[string]any{
		responsesBody(false, "x"),
		{"model": "gpt-test", "input": []any{}}, // no "stream" at all
	} {
		resp, b := post(t, s, "/v1/responses", testKey, body)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("request %d: %d %s: %s", i, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r["object"] != "response" || r["status"] != "completed" || r["model"] != "gpt-test" {
			t.Fatalf("request %d: %v", i, r)
		}
		out := r["output"].([]any)
		if len(out) != 1 {
			t.Fatalf("request %d: output %v", i, out)
		}
		switch i {
		case 0:
			if obj(t, out[0], "type") != "function_call" || obj(t, out[0], "arguments") != `{"cmd":"make test"}` {
				t.Fatalf("output %v", out)
			}
			if obj(t, r, "usage", "total_tokens") != float64(9) {
				t.Fatalf("usage %v", r["usage"])
			}
		case 1:
			if obj(t, out[0], "type") != "message" {
				t.Fatalf("output %v", out)
			}
		}
	}
}

func TestAuthRefused(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Message: "hello"})

	for _, key := range []string{"", "sk-wrong-0000000000"} {
		resp, b := post(t, s, "/v1/responses", key, responsesBody(true, "x"))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("key %q: status %d", key, resp.StatusCode)
		}
		var e map[string]any
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("key %q: %s", key, b)
		}
		if obj(t, e, "error", "type") != "invalid_request_error" || obj(t, e, "error", "message") == "" {
			t.Fatalf("key %q: %s", key, b)
		}
		if strings.Contains(string(b), "sk-wrong-0000000000") {
			t.Fatalf("the error echoes the whole key: %s", b)
		}
	}
	if s.Remaining() != 1 {
		t.Fatalf("refused requests consumed turns: %d left", s.Remaining())
	}
	resp, _ := post(t, s, "/v1/responses", testKey, responsesBody(true, "x"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("right key: %d", resp.StatusCode)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	for i, want := range []int{401, 401, 200} {
		if reqs[i].Status != want {
			t.Errorf("request %d: status %d, want %d", i, reqs[i].Status, want)
		}
	}
	if reqs[1].Header.Get("Authorization") != "Bearer sk-wrong-0000000000" || reqs[0].Turn != -1 || reqs[2].Turn != 0 {
		t.Fatalf("records: %+v", reqs)
	}
}

func TestAnyKeyUntilRequireKey(t *testing.T) {
	s := New()
	defer s.Close()
	s.Script(Turn{Message: "a"})
	if resp, _ := post(t, s, "/v1/responses", "", responsesBody(false, "x")); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
	if resp, _ := post(t, s, "/v1/responses", "anything", responsesBody(false, "x")); resp.StatusCode != http.StatusOK {
		t.Fatalf("some key: %d", resp.StatusCode)
	}
}

func TestBadRequests(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Message: "unused"})
	for name, body := range map[string]string{
		"not JSON":    `{"model":`,
		"not object":  `["model"]`,
		"no model":    `{"input":"x","stream":true}`,
		"empty model": `{"model":"","input":"x"}`,
		"no input":    `{"model":"m","stream":true}`,
		"bad input":   `{"model":"m","input":42}`,
		"bad stream":  `{"model":"m","input":"x","stream":"yes"}`,
	} {
		resp, b := post(t, s, "/v1/responses", testKey, body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d", name, resp.StatusCode)
			continue
		}
		var e map[string]any
		if err := json.Unmarshal(b, &e); err != nil || obj(t, e, "error", "type") != "invalid_request_error" {
			t.Errorf("%s: body %s", name, b)
		}
	}
	if s.Remaining() != 1 {
		t.Fatalf("bad requests consumed turns")
	}
	reqs := s.Requests()
	if len(reqs) != 7 {
		t.Fatalf("%d recorded", len(reqs))
	}
	for _, r := range reqs {
		if r.Status != http.StatusBadRequest || r.Body == nil {
			t.Errorf("record %+v", r)
		}
	}
}

func TestRoutesAndMethods(t *testing.T) {
	s := newServer(t)
	resp, b := post(t, s, "/v1/files", testKey, responsesBody(false, "x"))
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "Invalid URL") {
		t.Fatalf("unknown path: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/v1/responses", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != http.MethodPost {
		t.Fatalf("GET: %d Allow=%q", r.StatusCode, r.Header.Get("Allow"))
	}
	if n := len(s.Requests()); n != 2 {
		t.Fatalf("%d recorded", n)
	}
}

// messageText reads the text of a streamed Responses turn's message.
func messageText(t *testing.T, body []byte) string {
	t.Helper()
	for _, e := range parseSSE(t, body) {
		if e.name == "response.output_item.done" && obj(t, e.data, "item", "type") == "message" {
			return obj(t, e.data, "item", "content").([]any)[0].(map[string]any)["text"].(string)
		}
	}
	t.Fatalf("no message in %s", body)
	return ""
}

func TestScriptOrder(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Message: "one"}, Turn{Message: "two"})
	s.Script(Turn{Message: "three"}) // queued after the others
	if s.Remaining() != 3 {
		t.Fatalf("remaining %d", s.Remaining())
	}
	for _, want := range []string{"one", "two", "three"} {
		_, b := post(t, s, "/v1/responses", testKey, responsesBody(true, "x"))
		if got := messageText(t, b); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	for i, r := range s.Requests() {
		if r.Turn != i || r.Model != "gpt-test" || string(r.Input) != `"x"` || r.Method != http.MethodPost || r.Path != "/v1/responses" {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	if s.Remaining() != 0 || s.Exhausted() != 0 {
		t.Fatalf("remaining %d exhausted %d", s.Remaining(), s.Exhausted())
	}
}

func TestFunctionOutputs(t *testing.T) {
	s := newServer(t)
	s.Script(
		Turn{Exec: []string{"echo hi", "echo there"}},
		Turn{Exec: []string{"cat out.txt"}},
		Turn{Message: "done"},
	)
	_, b := post(t, s, "/v1/responses", testKey, responsesBody(true, "go"))
	var calls []map[string]any
	for _, e := range only(t, parseSSE(t, b), "response.output_item.done") {
		calls = append(calls, e.data["item"].(map[string]any))
	}
	if len(s.FunctionOutputs()) != 0 {
		t.Fatalf("outputs before any came back: %q", s.FunctionOutputs())
	}

	// The client sends back the calls and their outputs, as Codex CLI does:
	// the whole conversation so far, with one function_call_output each.
	history := []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "go"}}}}
	for _, c := range calls {
		history = append(history, c)
	}
	history = append(history,
		map[string]any{"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "Process exited with code 0\nOutput:\nhi\n"},
		// A list of content parts is read as its joined texts.
		map[string]any{"type": "function_call_output", "call_id": calls[1]["call_id"], "output": []any{
			map[string]any{"type": "input_text", "text": "there"}, map[string]any{"type": "input_text", "text": "\n"},
		}},
	)
	_, b = post(t, s, "/v1/responses", testKey, responsesBody(true, history))
	want := []string{"Process exited with code 0\nOutput:\nhi\n", "there\n"}
	if got := s.FunctionOutputs(); !slices.Equal(got, want) {
		t.Fatalf("outputs %q, want %q", got, want)
	}

	// The third request repeats the history; only the new output is added.
	call := only(t, parseSSE(t, b), "response.output_item.done")[0].data["item"]
	history = append(history, call, map[string]any{"type": "function_call_output", "call_id": obj(t, call, "call_id"), "output": "hi\n"})
	resp, _ := post(t, s, "/v1/responses", testKey, responsesBody(true, history))
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	want = append(want, "hi\n")
	if got := s.FunctionOutputs(); !slices.Equal(got, want) {
		t.Fatalf("outputs %q, want %q", got, want)
	}
	var input []map[string]any
	if err := json.Unmarshal(s.Requests()[2].Input, &input); err != nil || len(input) != len(history) {
		t.Fatalf("recorded input: %v (%v)", input, err)
	}
}

func TestExhausted(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Message: "only"})
	post(t, s, "/v1/responses", testKey, responsesBody(true, "x"))

	for i := 1; i <= 2; i++ {
		resp, b := post(t, s, "/v1/responses", testKey, responsesBody(true, "x"))
		if resp.StatusCode != http.StatusInternalServerError || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var e map[string]any
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s", b)
		}
		if obj(t, e, "error", "code") != "script_exhausted" || obj(t, e, "error", "type") != "server_error" ||
			!strings.Contains(obj(t, e, "error", "message").(string), "script exhausted") {
			t.Fatalf("body %s", b)
		}
		if s.Exhausted() != i {
			t.Fatalf("Exhausted %d, want %d", s.Exhausted(), i)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 3 || reqs[2].Status != 500 || reqs[2].Turn != -1 {
		t.Fatalf("records %+v", reqs)
	}
	// More turns can be scripted afterwards.
	s.Script(Turn{Message: "more"})
	_, b := post(t, s, "/v1/responses", testKey, responsesBody(true, "x"))
	if messageText(t, b) != "more" {
		t.Fatal("no turn after rescripting")
	}
}

func TestScriptedStatus(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Status: http.StatusServiceUnavailable}, Turn{Status: http.StatusTooManyRequests}, Turn{Message: "recovered"})
	for _, want := range []struct {
		status  int
		errType string
	}{{503, "server_error"}, {429, "requests"}} {
		resp, b := post(t, s, "/v1/responses", testKey, responsesBody(true, "x"))
		if resp.StatusCode != want.status {
			t.Fatalf("status %d, want %d", resp.StatusCode, want.status)
		}
		var e map[string]any
		if err := json.Unmarshal(b, &e); err != nil || obj(t, e, "error", "type") != want.errType {
			t.Fatalf("%d: body %s", want.status, b)
		}
	}
	_, b := post(t, s, "/v1/responses", testKey, responsesBody(true, "x"))
	if messageText(t, b) != "recovered" {
		t.Fatal("third turn")
	}
	if reqs := s.Requests(); reqs[0].Status != 503 || reqs[0].Turn != 0 || reqs[1].Turn != 1 {
		t.Fatalf("records %+v", reqs)
	}
}

func TestConcurrentRequestsEachGetOneTurn(t *testing.T) {
	s := newServer(t)
	const n = 20
	var turns []Turn
	for i := range n {
		turns = append(turns, Turn{Message: fmt.Sprint(i)})
	}
	s.Script(turns...)
	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/responses", strings.NewReader(`{"model":"m","stream":true,"input":"x"}`))
			req.Header.Set("Authorization", "Bearer "+testKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			got[i] = string(b)
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, b := range got {
		seen[messageText(t, []byte(b))] = true
	}
	if len(seen) != n || s.Remaining() != 0 || len(s.Requests()) != n {
		t.Fatalf("%d distinct turns, %d remaining, %d recorded", len(seen), s.Remaining(), len(s.Requests()))
	}
}

// Chat Completions streams its usage only when asked to, as the API does.
func TestChatCompletionsStreamsUsageOnlyWhenAsked(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	for _, tc := range []struct {
		body      string
		wantUsage bool
	}{
		{`{"model":"m","messages":[],"stream":true}`, false},
		{`{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}`, true},
		{`{"model":"m","messages":[]}`, true},
	} {
		s.Script(Turn{Message: "hi", Usage: Usage{InputTokens: 5, OutputTokens: 2}})
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/chat/completions", strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.Contains(string(b), `"total_tokens":7`); got != tc.wantUsage || !strings.Contains(string(b), "hi") {
			t.Errorf("%s: usage %v, want %v:\n%s", tc.body, got, tc.wantUsage, b)
		}
	}
}

// A Responses request calls the shell tool the client offers: OpenCode's
// bash {"command"} when that is listed, Codex CLI's exec_command {"cmd"}
// when it is, or when the request lists no shell tool at all.
func TestExecCallsTheOfferedShellTool(t *testing.T) {
	for _, tc := range []struct {
		tools    []any
		name, at string
	}{
		{[]any{map[string]any{"type": "function", "name": "read"}, map[string]any{"type": "function", "name": "bash"}}, "bash", `{"command":"go test ./..."}`},
		{[]any{map[string]any{"type": "function", "name": "exec_command"}, map[string]any{"type": "function", "name": "bash"}}, "exec_command", `{"cmd":"go test ./..."}`},
		{nil, "exec_command", `{"cmd":"go test ./..."}`},
	} {
		s := newServer(t)
		s.Script(Turn{Exec: []string{"go test ./..."}})
		body := responsesBody(false, "x")
		if tc.tools != nil {
			body["tools"] = tc.tools
		}
		resp, b := post(t, s, "/v1/responses", testKey, body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d: %s", resp.StatusCode, b)
		}
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out := r["output"].([]any)
		if len(out) != 1 || obj(t, out[0], "name") != tc.name || obj(t, out[0], "arguments") != tc.at {
			t.Errorf("tools %v: output %v, want %s %s", tc.tools, out, tc.name, tc.at)
		}
	}
}

// A Responses request in the background that does not stream is answered
// at once, queued, with no output and "usage": null
// (https://platform.openai.com/docs/guides/background); in the
// foreground, the cached input is reported in input_tokens_details.
func TestResponsesInTheBackgroundAreQueuedWithoutUsage(t *testing.T) {
	s := newServer(t)
	u := Usage{InputTokens: 2000, CacheReadTokens: 1536, OutputTokens: 30}
	s.Script(Turn{Message: "later", Usage: u}, Turn{Message: "now", Usage: u})
	body := responsesBody(false, "hi")
	body["background"] = true
	resp, b := post(t, s, "/v1/responses", testKey, body)
	var r map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &r) != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if r["object"] != "response" || r["status"] != "queued" || r["background"] != true || len(r["output"].([]any)) != 0 {
		t.Errorf("background answer %s", b)
	}
	if v, ok := r["usage"]; !ok || v != nil {
		t.Errorf("usage %v (present %v), want null", v, ok)
	}
	if s.Remaining() != 1 {
		t.Errorf("remaining %d: the queued answer used its turn", s.Remaining())
	}
	_, b = post(t, s, "/v1/responses", testKey, responsesBody(false, "hi"))
	if err := json.Unmarshal(b, &r); err != nil || r["status"] != "completed" ||
		obj(t, r, "usage", "input_tokens_details", "cached_tokens") != float64(1536) || obj(t, r, "usage", "input_tokens") != float64(2000) {
		t.Errorf("foreground answer %s", b)
	}
}

// Chat Completions answers every choice n asks for, each at its index,
// and charges them all (https://platform.openai.com/docs/api-reference/chat/create):
// completion_tokens is n times the turn's output.
func TestChatCompletionsAnswersEveryChoice(t *testing.T) {
	s := newServer(t)
	u := Usage{InputTokens: 10, CacheReadTokens: 4, OutputTokens: 1000}
	s.Script(Turn{Message: "hi", Usage: u}, Turn{Message: "hi", Usage: u})
	resp, b := post(t, s, "/v1/chat/completions", testKey, `{"model":"m","messages":[],"n":3}`)
	var c struct {
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage map[string]any `json:"usage"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &c) != nil || len(c.Choices) != 3 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	for i, ch := range c.Choices {
		if ch.Index != i || ch.Message.Content != "hi" {
			t.Errorf("choice %d: %+v", i, ch)
		}
	}
	if c.Usage["completion_tokens"] != float64(3000) || c.Usage["total_tokens"] != float64(3010) || obj(t, c.Usage, "prompt_tokens_details", "cached_tokens") != float64(4) {
		t.Errorf("usage %v", c.Usage)
	}
	_, b = post(t, s, "/v1/chat/completions", testKey, `{"model":"m","messages":[],"n":3,"stream":true,"stream_options":{"include_usage":true}}`)
	seen := map[float64]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk map[string]any
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, ch := range chunk["choices"].([]any) {
			seen[obj(t, ch, "index").(float64)] = true
		}
	}
	if len(seen) != 3 || !strings.Contains(string(b), `"completion_tokens":3000`) {
		t.Errorf("streamed choices %v:\n%s", seen, b)
	}
}

// A held turn answers nothing until Hold closes, and says it holds; a
// client that hangs up while held ends the hold. Each API holds alike.
func TestHeldTurnWaitsForItsRelease(t *testing.T) {
	s := newServer(t)
	hold, holding := make(chan struct{}), make(chan struct{})
	s.Script(Turn{Message: "after the hold", Hold: hold, Holding: holding})
	got := make(chan []byte, 1)
	go func() {
		_, b := post(t, s, "/v1/responses", testKey, responsesBody(false, "x"))
		got <- b
	}()
	<-holding
	select {
	case b := <-got:
		t.Fatalf("the held turn answered before its release: %s", b)
	default:
	}
	close(hold)
	if b := <-got; !strings.Contains(string(b), "after the hold") {
		t.Errorf("after the release: %s", b)
	}

	// A client that gives up while the turn is held.
	holding2 := make(chan struct{})
	s.Script(Turn{Message: "never", Hold: make(chan struct{}), Holding: holding2})
	ctx, cancel := context.WithCancel(context.Background())
	raw, err := json.Marshal(map[string]any{"model": "claude-test", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", testKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-holding2
	cancel()
	if err := <-errc; err == nil {
		t.Error("the held request answered")
	}
	// Close (the cleanup) waits for requests in flight: it returns only
	// because the hang-up ended the hold.
}
