// Package fakemodel is a scripted stand-in for an LLM provider, for tests
// only: real agent CLIs (Codex CLI, for one) are pointed at it and it plays
// the model's part from a script. cmd/inspect never imports it.
//
// It is an httptest.Server that answers the OpenAI Responses API at
// POST /v1/responses (streamed as server-sent events when the request asks
// for "stream": true, as Codex CLI does, or as one JSON response otherwise)
// and the Anthropic Messages API at POST /v1/messages. Each accepted request
// consumes the next Turn of the script: the commands the "model" wants run
// (one exec_command function call each, or Bash tool use for Messages), or a
// final assistant message, with the token usage to report. Like a provider,
// it checks the API key and the request body and answers with the provider's
// status codes and error bodies; every request is recorded for assertions,
// and the outputs of the commands the client ran, which come back in the
// next request, are collected (FunctionOutputs).
//
// Files: server.go the server, script, auth and recording; responses.go the
// OpenAI Responses API; messages.go the Anthropic Messages API.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// maxBodyBytes bounds a request body. Agent requests carry the whole
// conversation, tool definitions and instructions, but never this much.
const maxBodyBytes = 32 << 20

// Usage is the token usage a turn reports, in each API's own fields.
// When TotalTokens is zero it is reported as InputTokens+OutputTokens
// (OpenAI's; Messages reports no total).
//
// The prompt cache is reported as each provider does. OpenAI's cached
// input is a part of its input: CacheReadTokens is
// input_tokens_details.cached_tokens (Responses) or
// prompt_tokens_details.cached_tokens (Chat Completions), and should be at
// most InputTokens (https://platform.openai.com/docs/guides/prompt-caching).
// Anthropic's cache reads and writes are beside its input: InputTokens is
// input_tokens, the input after the last cache breakpoint only,
// CacheReadTokens cache_read_input_tokens and CacheWriteTokens
// cache_creation_input_tokens
// (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching).
// OpenAI reports no cache writes: CacheWriteTokens is Messages' only.
type Usage struct {
	InputTokens, OutputTokens, TotalTokens int64
	CacheReadTokens, CacheWriteTokens      int64
}

func (u Usage) total() int64 {
	if u.TotalTokens == 0 {
		return u.InputTokens + u.OutputTokens
	}
	return u.TotalTokens
}

// Turn is one scripted model response; each accepted request consumes one.
type Turn struct {
	// Exec lists the commands the model asks the client to run: one
	// function call each, named "exec_command" with arguments
	// {"cmd": "..."}, or "bash" with {"command": "..."} when that is the
	// shell tool the request offers (Responses), or one "Bash" tool use with input
	// {"command": "..."} (Messages). When Exec is set, Message is ignored:
	// a response either calls tools or ends the task.
	Exec []string
	// Message is a final assistant message.
	Message string
	// Usage is the token usage reported with the response.
	Usage Usage
	// Status, when neither 0 nor 200, makes the turn answer that status
	// with the provider's error body instead. Clients retry some failures,
	// each retry consuming the next turn: Codex CLI 0.171.0 retried a 500
	// (and a 401) five times, but gave up on this server's 429 at once.
	Status int
	// EchoHeaders makes the turn answer with the request's headers (the
	// key among them), one byte per write.
	EchoHeaders bool
	// HoldUsage, when set, holds a streamed Chat Completions turn after its
	// content, before its end and usage, until it is closed or the client
	// hangs up.
	HoldUsage <-chan struct{}
	// Pace, when set, streams a Chat Completions turn's Message a word at a
	// time, Pace apart: a slow model.
	Pace time.Duration
	// Hold, when set, holds the turn's response, in every API, before
	// anything of it is written, until Hold is closed or the client hangs
	// up: a model still thinking, for a test that stops the client while
	// it waits. Holding, when set, is closed once the request is recorded
	// and held (a hook: the test knows the client is waiting).
	Hold    <-chan struct{}
	Holding chan<- struct{}
}

// Request is one request the server received, for assertions. Refused
// requests are recorded too, with the status they were answered.
type Request struct {
	Method string
	Path   string
	// Query is the raw query string, without the "?".
	Query  string
	Header http.Header
	Body   []byte
	// Model is the body's "model", when it has one.
	Model string
	// Input is the body's "input" (Responses) or "messages" (Messages), as
	// sent.
	Input json.RawMessage
	// Status is the status answered. 200 for a stream, even one that the
	// client dropped midway.
	Status int
	// Turn is the index into the script of the turn that answered it, or
	// -1 when none did (refused, or the script was exhausted).
	Turn int
	// At is when the request (its whole body) arrived: a benchmark's
	// clock for "the model's next request".
	At time.Time
}

// Server is the stand-in. Create it with New and stop it with Close.
// Methods are safe for concurrent use.
type Server struct {
	ts *httptest.Server

	// mu guards everything below.
	mu        sync.Mutex
	key       string // "" means any non-empty key is accepted
	script    []Turn
	next      int // index of the next turn in script
	requests  []Request
	exhausted int
	outputs   []string
	seenCalls map[string]bool // call ids whose output was collected
	lastID    int64
	// recordDir is $INSPECT_FAKEMODEL_RECORD_DIR ("" records nothing),
	// and recorded counts the requests written there.
	recordDir string
	recorded  int64
}

// New starts a stand-in on a loopback port, with an empty script and no key
// set (any non-empty key is accepted until RequireKey).
func New() *Server {
	s := &Server{seenCalls: map[string]bool{}, recordDir: os.Getenv(RecordDirEnv)}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// Close shuts the server down, waiting for requests in flight.
func (s *Server) Close() { s.ts.Close() }

// URL is the root URL, e.g. http://127.0.0.1:1234. Clients that want a base
// URL including the API version (Codex CLI's base_url) take URL()+"/v1".
func (s *Server) URL() string { return s.ts.URL }

// RequireKey sets the API key requests must present: "Authorization:
// Bearer KEY" (or, for Messages, "x-api-key: KEY"). Until it is called any
// non-empty key is accepted; a request with none is always refused.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Script queues turns after those not yet used. Each accepted model request
// consumes the next one, in order.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// Remaining is how many scripted turns have not been used yet.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

// Exhausted counts the requests that came when the script had no turn left
// (each answered 500).
func (s *Server) Exhausted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exhausted
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// FunctionOutputs returns, in the order they first arrived, the outputs the
// client sent back for the commands it ran: the "output" of each
// function_call_output item (Responses) or the content of each tool_result
// block (Messages). Clients resend the whole conversation with every
// request, so each call id is counted once, the first time it is seen.
func (s *Server) FunctionOutputs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.outputs...)
}

// nextID hands out the numbers in response, item and call ids. Callers
// hold s.mu.
func (s *Server) nextID() int64 {
	s.lastID++
	return s.lastID
}

// dialect is what differs between the provider APIs served.
type dialect struct {
	// inputField names the body field holding the conversation.
	inputField string
	// apiKey extracts the key the request presents ("" for none).
	apiKey func(r *http.Request) string
	// errBody is the provider's error body for a status.
	errBody func(status int, kind, msg string) any
	// validate checks the parsed body beyond model and input, returning
	// an error message, or "".
	validate func(r *http.Request, body map[string]json.RawMessage) string
	// outputs extracts (call id, output) pairs from the conversation.
	outputs func(input json.RawMessage) [][2]string
	// answer writes the turn's response; n is a fresh number for the ids
	// of the response and its items.
	answer func(w http.ResponseWriter, req *parsedRequest, t Turn, n int64)
}

// parsedRequest is an accepted request body.
type parsedRequest struct {
	model  string
	stream bool
	raw    map[string]json.RawMessage
	// ctx is the request's: done when the client hangs up.
	ctx context.Context
}

// Error kinds, mapped to each provider's error type names.
const (
	errAuth      = "auth"
	errInvalid   = "invalid"
	errNotFound  = "not_found"
	errMethod    = "method"
	errTooLarge  = "too_large"
	errExhausted = "exhausted"
	errScripted  = "scripted"
)

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var d *dialect
	switch r.URL.Path {
	case "/v1/responses":
		d = &responsesDialect
	case "/v1/messages":
		d = &messagesDialect
	case "/v1/chat/completions":
		d = &chatDialect
	default:
		body, _ := standin.ReadBody(r, maxBodyBytes)
		s.refuse(w, r, body, &responsesDialect, http.StatusNotFound, errNotFound,
			fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), nil)
		return
	}
	body, tooBig := standin.ReadBody(r, maxBodyBytes)
	if r.Method != http.MethodPost {
		s.refuse(w, r, body, d, http.StatusMethodNotAllowed, errMethod,
			fmt.Sprintf("Method %s not allowed for %s; use POST.", r.Method, r.URL.Path),
			http.Header{"Allow": {http.MethodPost}})
		return
	}
	if tooBig {
		s.refuse(w, r, body, d, http.StatusRequestEntityTooLarge, errTooLarge, "Request body too large.", nil)
		return
	}
	if msg := s.checkKey(d.apiKey(r)); msg != "" {
		s.refuse(w, r, body, d, http.StatusUnauthorized, errAuth, msg, nil)
		return
	}
	req, msg := parse(r, body, d)
	if msg != "" {
		s.refuse(w, r, body, d, http.StatusBadRequest, errInvalid, msg, nil)
		return
	}

	s.mu.Lock()
	rec := newRequest(r, body, d)
	for _, o := range d.outputs(rec.Input) {
		if o[0] != "" {
			if s.seenCalls[o[0]] {
				continue
			}
			s.seenCalls[o[0]] = true
		}
		s.outputs = append(s.outputs, o[1])
	}
	if s.next >= len(s.script) {
		s.exhausted++
		n := len(s.script)
		rec.Status = http.StatusInternalServerError
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		writeJSON(w, http.StatusInternalServerError, d.errBody(http.StatusInternalServerError, errExhausted,
			fmt.Sprintf("fakemodel: script exhausted: all %d scripted turns were used; this request had none left", n)), nil)
		return
	}
	turn := s.script[s.next]
	rec.Turn = s.next
	s.next++
	rec.Status = http.StatusOK
	if turn.Status != 0 && turn.Status != http.StatusOK {
		rec.Status = turn.Status
	}
	s.requests = append(s.requests, rec)
	n := s.nextID()
	if s.recordDir != "" {
		s.recorded++
		if err := recordTo(s.recordDir, s.ts.Listener.Addr().(*net.TCPAddr).AddrPort().Port(), s.recorded, rec); err != nil {
			// A recording was asked for by hand; the request is answered
			// anyway, and the gap is said where the person running it sees it.
			fmt.Fprintf(os.Stderr, "fakemodel: recording a request: %v\n", err)
		}
	}
	s.mu.Unlock()

	if rec.Status != http.StatusOK {
		writeJSON(w, rec.Status, d.errBody(rec.Status, errScripted,
			fmt.Sprintf("fakemodel: scripted failure (turn %d): %s", rec.Turn, http.StatusText(rec.Status))), nil)
		return
	}
	if turn.EchoHeaders {
		echoHeaders(w, r)
		return
	}
	if turn.Hold != nil {
		if turn.Holding != nil {
			close(turn.Holding)
		}
		select {
		case <-turn.Hold:
		case <-r.Context().Done():
			return // the client hung up while the model "thought"
		}
	}
	d.answer(w, req, turn, n)
}

// checkKey returns why the key is refused, or "".
func (s *Server) checkKey(got string) string {
	s.mu.Lock()
	want := s.key
	s.mu.Unlock()
	switch {
	case got == "":
		return "You didn't provide an API key."
	case want != "" && got != want:
		return "Incorrect API key provided: " + redact(got) + "."
	}
	return ""
}

// redact shows a key as providers do in their errors: its ends only.
func redact(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
}

// parse checks a body as a provider would: a JSON object with a string
// "model" and the conversation field, plus the dialect's own rules.
func parse(r *http.Request, body []byte, d *dialect) (*parsedRequest, string) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return nil, "We could not parse the JSON body of your request. The body must be a JSON object."
	}
	req := &parsedRequest{raw: raw, ctx: r.Context()}
	m, ok := raw["model"]
	if !ok || json.Unmarshal(m, &req.model) != nil || req.model == "" {
		return nil, "Missing required parameter: 'model'."
	}
	in, ok := raw[d.inputField]
	if !ok || string(in) == "null" {
		return nil, fmt.Sprintf("Missing required parameter: '%s'.", d.inputField)
	}
	if st, ok := raw["stream"]; ok && string(st) != "null" {
		if json.Unmarshal(st, &req.stream) != nil {
			return nil, "Invalid type for 'stream': expected a boolean."
		}
	}
	if d.validate != nil {
		if msg := d.validate(r, raw); msg != "" {
			return nil, msg
		}
	}
	return req, ""
}

// newRequest builds the record of a request, with what can be read from
// the body even when it is refused. The caller sets Status (and Turn).
func newRequest(r *http.Request, body []byte, d *dialect) Request {
	rec := Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(),
		Body: body, Turn: -1, At: time.Now(),
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) == nil {
		_ = json.Unmarshal(raw["model"], &rec.Model)
		rec.Input = raw[d.inputField]
	}
	return rec
}

// refuse records and answers a request that no turn answers.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, body []byte, d *dialect, status int, kind, msg string, header http.Header) {
	rec := newRequest(r, body, d)
	rec.Status = status
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	writeJSON(w, status, d.errBody(status, kind, msg), header)
}

func writeJSON(w http.ResponseWriter, status int, body any, header http.Header) {
	standin.WriteResponse(w, status, body, nil, header, nil)
}
