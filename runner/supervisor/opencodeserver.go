package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// OpenCode steered through its own server (decision 0084). `opencode run`
// spends 7–14 s of its own start before its first model request, at each
// run (decision 0073's measurements), so a steer that stops and resumes it
// cannot reach the model within issue 36's 2 s. With steering on, the
// agent phase instead runs `opencode serve` once, in the sandbox, and the
// supervisor hands it each turn over its HTTP API: a message posted to a
// running server reaches the model in about 0.1 s.
//
// The server listens on the sandbox's loopback (OpenCodeServeAddr), which
// nothing outside its network namespace reaches; the forwarder (`inspect
// runner forward --expose`) relays a Unix socket in AgentSocketDir to it,
// and the supervisor dials that socket (dialAgentSocket: never a link the
// sandbox put there). Everything the server answers is the sandbox's, so
// every body read is capped and only the few fields used are decoded.
//
// The API is OpenCode 1.18.33's own (its OpenAPI document, GET /doc):
//
//	GET  /global/health                       ready
//	POST /session                             a new conversation: {"id":"ses_…"}
//	POST /session/{id}/prompt_async           a user message; 204, the run starts
//	POST /session/{id}/abort                  stops the run
//	GET  /session/status                      {"ses_…":{"type":"busy"|"retry"|"idle"}}
//	GET  /event                               server-sent events: session.status,
//	                                          session.idle, session.error,
//	                                          permission.asked, question.asked, …
//	POST /permission/{id}/reply               {"reply":"once"}
//	POST /question/{id}/reject

const (
	// OpenCodeServeAddr is where `opencode serve` listens inside the
	// sandbox: its own loopback, a port next to the egress forwarder's.
	OpenCodeServeAddr = "127.0.0.1:8932"
	// AgentSocketDir is the directory, bound in from the host, where the
	// forwarder's exposed socket is made (OpenCodeSocket).
	AgentSocketDir = "/run/inspect/agent"
	// openCodeSocketName is the exposed socket's name in AgentSocketDir.
	openCodeSocketName = "opencode.sock"
)

// maxOpenCodeBody caps what the supervisor reads of an answer of the
// server's, and maxOpenCodeEvent one server-sent event's line: a part's
// text can be long, and a longer line is skipped, not read.
const (
	maxOpenCodeBody  = 1 << 20
	maxOpenCodeEvent = 8 << 20
)

// openCodeServeInvocation is inv, an `opencode run` invocation
// (AgentInvocation's or ResumeInvocation's), as `opencode serve` with the
// same configuration (Files, Env): no prompt on its standard input, which
// the API carries instead.
func openCodeServeInvocation(inv Invocation) Invocation {
	host, port, _ := net.SplitHostPort(OpenCodeServeAddr) // a constant that splits
	out := inv
	out.Argv = []string{inv.Argv[0], "serve", "--pure", "--hostname", host, "--port", port}
	out.StdinFile = ""
	out.StdoutTranscript = false
	return out
}

// servedAgent says whether agent a, with steer, runs as a server steered
// through its API rather than a CLI stopped and resumed.
func servedAgent(a contract.Agent, steer *contract.Steer) bool {
	return steer != nil && a.Preset == contract.PresetOpenCode
}

// openCodeClient speaks to one sandbox's `opencode serve`.
type openCodeClient struct {
	hc *http.Client
}

// newOpenCodeClient reaches the server through the socket in hostDir (the
// host's side of AgentSocketDir).
func newOpenCodeClient(hostDir string) *openCodeClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialAgentSocket(ctx, hostDir, openCodeSocketName)
		},
		MaxIdleConnsPerHost:   4,
		ResponseHeaderTimeout: 30 * time.Second,
	}
	return &openCodeClient{hc: &http.Client{Transport: tr}}
}

// close drops the client's idle connections: the forwarder waits for
// every relayed connection before it exits.
func (c *openCodeClient) close() { c.hc.CloseIdleConnections() }

// errOpenCodeStatus is an answer with an unexpected status.
type errOpenCodeStatus struct {
	what   string
	status int
	body   string
}

func (e *errOpenCodeStatus) Error() string {
	return fmt.Sprintf("OpenCode's server answered %s with %d: %s", e.what, e.status, e.body)
}

// do sends a request and reads its answer (at most maxOpenCodeBody) when
// its status is want, into out when out is not nil.
func (c *openCodeClient) do(ctx context.Context, method, p string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://opencode"+p, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // read to the cap; the rest is dropped with the connection
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxOpenCodeBody))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return &errOpenCodeStatus{what: method + " " + p, status: resp.StatusCode, body: cleanText(string(data), 512)}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// healthy says the server answers.
func (c *openCodeClient) healthy(ctx context.Context) error {
	var h struct {
		Healthy bool `json:"healthy"`
	}
	if err := c.do(ctx, http.MethodGet, "/global/health", nil, http.StatusOK, &h); err != nil {
		return err
	}
	if !h.Healthy {
		return errors.New("OpenCode's server says it is not healthy")
	}
	return nil
}

// newSession starts a conversation and returns its id.
func (c *openCodeClient) newSession(ctx context.Context) (string, error) {
	var s struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, http.MethodPost, "/session", struct{}{}, http.StatusOK, &s); err != nil {
		return "", err
	}
	if !openCodeIDRE.MatchString(s.ID) {
		return "", fmt.Errorf("OpenCode's server named its new session %q, not a session id", cleanText(s.ID, 80))
	}
	return s.ID, nil
}

// prompt sends msg, untrusted text, as the conversation's next user
// message (a JSON string: never a command line), and returns once the
// server has taken it; the run goes on in the server.
func (c *openCodeClient) prompt(ctx context.Context, id, msg string) error {
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	body := struct {
		Parts []part `json:"parts"`
	}{Parts: []part{{Type: "text", Text: msg}}}
	return c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(id)+"/prompt_async", body, http.StatusNoContent, nil)
}

// abort stops the conversation's run, if one is going.
func (c *openCodeClient) abort(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(id)+"/abort", nil, http.StatusOK, nil)
}

// busy says whether the conversation has a run going (busy, or waiting to
// retry a model request); a session the server lists no status for is
// idle.
func (c *openCodeClient) busy(ctx context.Context, id string) (bool, error) {
	var st map[string]struct {
		Type string `json:"type"`
	}
	if err := c.do(ctx, http.MethodGet, "/session/status", nil, http.StatusOK, &st); err != nil {
		return false, err
	}
	s, ok := st[id]
	return ok && s.Type != "idle", nil
}

// answerAsk answers a permission or a question the server asks of
// somebody (ok is false for any other event), as `opencode run --auto`
// does for permissions: each is granted once (the configuration denies
// what must not be done; the sandbox is the wall), and a question, which
// nobody is there to answer, is rejected: people talk to the agent
// through its turns. Every conversation on the server is the agent's, its
// subagents' too.
func (c *openCodeClient) answerAsk(ctx context.Context, ev openCodeEvent) (bool, error) {
	switch ev.Type {
	case "permission.asked":
		body := struct {
			Reply string `json:"reply"`
		}{Reply: "once"}
		return true, c.do(ctx, http.MethodPost, "/permission/"+url.PathEscape(ev.Properties.ID)+"/reply", body, http.StatusOK, nil)
	case "question.asked":
		return true, c.do(ctx, http.MethodPost, "/question/"+url.PathEscape(ev.Properties.ID)+"/reject", nil, http.StatusOK, nil)
	}
	return false, nil
}

// openCodeEvent is what the supervisor reads of one server-sent event.
type openCodeEvent struct {
	Type       string `json:"type"`
	Properties struct {
		// ID is a permission's or a question's (permission.asked,
		// question.asked).
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
		Status    struct {
			Type string `json:"type"`
		} `json:"status"`
		Error *struct {
			Name string `json:"name"`
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		} `json:"error"`
	} `json:"properties"`
}

// idle says the event is the end of session id's run.
func (e openCodeEvent) idle(id string) bool {
	if e.Properties.SessionID != id {
		return false
	}
	return e.Type == "session.idle" || (e.Type == "session.status" && e.Properties.Status.Type == "idle")
}

// busy says the event is session id's run going.
func (e openCodeEvent) busy(id string) bool {
	return e.Properties.SessionID == id && e.Type == "session.status" && e.Properties.Status.Type != "" && e.Properties.Status.Type != "idle"
}

// failure is the error the event reports for session id, "" for none (an
// abort's is not one: the supervisor asked for it).
func (e openCodeEvent) failure(id string) string {
	if e.Properties.SessionID != id || e.Type != "session.error" || e.Properties.Error == nil || e.Properties.Error.Name == "MessageAbortedError" {
		return ""
	}
	if m := e.Properties.Error.Data.Message; m != "" {
		return e.Properties.Error.Name + ": " + m
	}
	return e.Properties.Error.Name
}

// events subscribes to the server's events and sends each on the channel
// it returns, which is closed when the stream ends (ctx ending, the
// server going); it returns once the server has answered the subscription,
// so that no event after that is missed.
func (c *openCodeClient) events(ctx context.Context) (<-chan openCodeEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://opencode/event", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close() // the status is the error
		return nil, &errOpenCodeStatus{what: "GET /event", status: resp.StatusCode}
	}
	out := make(chan openCodeEvent, 64)
	go func() {
		defer close(out)
		defer func() { _ = resp.Body.Close() }() // a stream read to its end or cut
		readOpenCodeEvents(ctx, resp.Body, out)
	}()
	return out, nil
}

// readOpenCodeEvents reads server-sent events from r: each `data:` line
// is one JSON event (OpenCode sends one line per event). A line over
// maxOpenCodeEvent is skipped, as is one that is not an event.
func readOpenCodeEvents(ctx context.Context, r io.Reader, out chan<- openCodeEvent) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxOpenCodeEvent {
			line, skipping = line[:0], true
		} else if !skipping {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return
		}
		if skipping {
			skipping = false
			continue
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		line = line[:0]
		if !ok {
			continue
		}
		var ev openCodeEvent
		if json.Unmarshal(bytes.TrimSpace(data), &ev) != nil || ev.Type == "" {
			continue
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
	}
}
