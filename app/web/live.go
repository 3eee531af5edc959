package web

import (
	"bufio"
	"context"
	"embed"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/session"
)

// The live view of a session's page (decision 0038): GET
// /sessions/{id}/live is a server-sent event stream of the output the
// supervisor streamed (redacted there, kept as a tail in the store) and of
// the session's state. It reads only the store, polling it, so that any
// replica serves it: the output arrives at whichever replica the
// supervisor's channel reaches.
//
// Events: "output" (id: the chunk's store id; data: {"phase", "command",
// "text"}), "state" (data: {"state", "outcome", "reason"}) when the state
// changes, and "done" once the session is done and its output is all sent,
// after which the stream ends. A reconnecting EventSource sends
// Last-Event-ID and gets only what came after it.

const (
	// livePoll is how often a stream reads the store for news.
	livePoll = 200 * time.Millisecond
	// liveBatch caps the chunks one read of the store returns.
	liveBatch = 256
	// liveMaxStream ends a stream after this long; the browser reconnects
	// with Last-Event-ID, so nothing is lost, and no stream holds a
	// connection (and its polling) for ever.
	liveMaxStream = 30 * time.Minute
)

// liveStore is what a stream reads.
type liveStore interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	OutputAfter(ctx context.Context, sessionID string, afterID int64, limit int) ([]store.OutputChunk, error)
}

//go:embed static/live.js
var staticFiles embed.FS

// liveRoutes adds the live view's routes.
func (s *Server) liveRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /sessions/{id}/live", s.signedIn(s.live))
	mux.HandleFunc("GET /static/live.js", serveLiveScript)
}

func serveLiveScript(w http.ResponseWriter, r *http.Request) {
	b, err := staticFiles.ReadFile("static/live.js")
	if err != nil { // embedded at build time: cannot happen
		http.Error(w, "no script", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b) // a client that went away needs no answer
}

// live serves the stream, to the same viewers, with the same 404, as the
// session's page.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	sess, _, ok := s.viewableSession(w, r, viewerOf(r))
	if !ok {
		return
	}
	after, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64) // absent or not ours: from the start
	if err := streamLive(r.Context(), w, s.st, sess.ID, max(after, 0), livePoll, liveMaxStream); err != nil && r.Context().Err() == nil {
		s.log.Warn().Err(err).Str("session", sess.ID).Msg("dashboard: a live view ended early")
	}
}

type liveOutputEvent struct {
	Phase   string `json:"phase"`
	Command string `json:"command"`
	Text    string `json:"text"`
}

type liveStateEvent struct {
	State   string `json:"state"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

// streamLive writes the session's output after chunk id after, then what
// arrives, polling st every poll, and its state whenever it changes, until
// the session is done and all of its output sent, ctx ends, or maxFor
// passes.
func streamLive(ctx context.Context, w http.ResponseWriter, st liveStore, sessionID string, after int64, poll, maxFor time.Duration) error {
	rc := http.NewResponseController(w)
	// The server's write timeout is for pages; a stream lasts as long as
	// the session (or maxFor). Not every writer has a deadline to clear.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // a buffering proxy would hold the events back
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	var last liveStateEvent
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	stop := time.NewTimer(maxFor)
	defer stop.Stop()
	for {
		// The session first: output stored before it was done is then
		// surely in the read that follows.
		sess, err := st.GetSession(ctx, sessionID)
		if err != nil {
			return err
		}
		drained := false
		for !drained {
			chunks, err := st.OutputAfter(ctx, sessionID, after, liveBatch)
			if err != nil {
				return err
			}
			for _, c := range chunks {
				if err := writeEvent(bw, "output", strconv.FormatInt(c.ID, 10), liveOutputEvent{Phase: c.Phase, Command: c.Command, Text: c.Text}); err != nil {
					return err
				}
				after = c.ID
			}
			drained = len(chunks) < liveBatch
		}
		if now := (liveStateEvent{State: string(sess.State()), Outcome: string(sess.Outcome), Reason: sess.Reason}); now != last {
			if err := writeEvent(bw, "state", "", now); err != nil {
				return err
			}
			last = now
		}
		done := sess.State() == session.Done
		if done {
			if _, err := bw.WriteString("event: done\ndata: {}\n\n"); err != nil {
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := rc.Flush(); err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-stop.C:
			return nil
		case <-ticker.C:
		}
	}
}

// writeEvent writes one event. data is JSON, a single line, so no text in
// it can end the event or forge another.
func writeEvent(bw *bufio.Writer, name, id string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	ev := make([]byte, 0, len(b)+len(name)+len(id)+24)
	if id != "" {
		ev = append(append(append(ev, "id: "...), id...), '\n')
	}
	ev = append(append(append(append(append(ev, "event: "...), name...), "\ndata: "...), b...), "\n\n"...)
	_, err = bw.Write(ev)
	return err
}
