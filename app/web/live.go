package web

import (
	"bufio"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
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
// after which the stream ends; "ended" (data: {"reason"}) when the
// viewer may no longer read it (decision 0060), after which it ends too.
// A reconnecting EventSource sends Last-Event-ID and gets only what came
// after it.

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
// session's page, and for as long as they stay so: the sign-in and the
// repository's read are checked again while it runs (liveAccess). One
// user holds at most web.max_live_streams streams on this replica.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	sess, _, ok := s.viewableSession(w, r, v)
	if !ok {
		return
	}
	release, ok := s.holdLiveStream(v.UserID)
	if !ok {
		s.fail(w, http.StatusTooManyRequests, fmt.Sprintf("You have %d live views open already, the most one person may have at once. "+
			"Close another session's page, then reload this one.", s.maxLive))
		return
	}
	defer release()
	access := &liveAccess{s: s, idHash: v.idHash, userID: v.UserID, repoID: sess.RepoID, checked: s.now()}
	after, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64) // absent or not ours: from the start
	if err := streamLive(r.Context(), w, s.st, sess.ID, max(after, 0), s.livePoll, liveMaxStream, access.check); err != nil && r.Context().Err() == nil {
		s.log.Warn().Err(err).Str("session", sess.ID).Msg("dashboard: a live view ended early")
	}
}

// holdLiveStream takes one of the user's live streams on this replica;
// release gives it back. ok is false when they hold web.max_live_streams.
//
// The class this closes (decision 0060): work that one request makes the
// server do for as long as it likes, multiplied without bound by one
// user. Each stream reads the store every livePoll for up to
// liveMaxStream.
func (s *Server) holdLiveStream(userID int64) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.liveOpen[userID] >= s.maxLive {
		return nil, false
	}
	s.liveOpen[userID]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.liveOpen[userID]--
		if s.liveOpen[userID] <= 0 {
			delete(s.liveOpen, userID)
		}
	}, true
}

// The reasons an ended event gives.
const (
	liveSignedOut  = "Your sign-in has ended. Reload the page to sign in again."
	liveUnreadable = "You can no longer read this session's repository. Reload the page."
)

// liveAccess is a stream's viewer, checked again while the stream runs.
//
// The class it closes (decision 0060): an authorisation that outlives what
// it was given for, checked once at the start of a response that lasts. A
// stream is authorised as a page is, and then re-authorised as a page
// would be: the sign-in read from the store, the user's token (refreshed
// if due), and the repositories it reads, at least every
// web.permission_cache, and at once when this replica's cache of the
// user's repositories is dropped (a sign-out here) or expires. So access
// ends within web.permission_cache of going, on any replica, as decision
// 0037 promises of pages.
type liveAccess struct {
	s       *Server
	idHash  string // the sign-in's
	userID  int64
	repoID  int64     // the session's repository
	checked time.Time // the last time all of it held
}

// check is "" while the viewer may still read the stream, else why not.
// An error (the store or GitHub not answering) ends the stream too: the
// browser reconnects, and its new request is authorised afresh.
func (a *liveAccess) check(ctx context.Context) (ended string, err error) {
	now := a.s.now()
	if now.Sub(a.checked) < a.s.permTTL && a.s.permissionsCached(a.userID, now) {
		return "", nil
	}
	l, err := a.s.st.GetWebLogin(ctx, a.idHash, now)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return liveSignedOut, nil // signed out, here or elsewhere, expired, or revoked at GitHub
	case err != nil:
		return "", err
	}
	u, token, ok, err := a.s.signedInUser(ctx, l.UserID)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return liveSignedOut, nil
	}
	repos, err := a.s.readable(ctx, &viewer{UserID: u.UserID, Login: u.Login, idHash: a.idHash, token: token})
	if err != nil {
		return "", err
	}
	if _, ok := repos[a.repoID]; !ok {
		return liveUnreadable, nil
	}
	a.checked = now
	return "", nil
}

type liveOutputEvent struct {
	Phase   string `json:"phase"`
	Command string `json:"command"`
	Text    string `json:"text"`
}

// liveEndedEvent is the last event of a stream whose viewer may no longer
// read it; the page stops listening.
type liveEndedEvent struct {
	Reason string `json:"reason"`
}

type liveStateEvent struct {
	State   string `json:"state"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

// streamLive writes the session's output after chunk id after, then what
// arrives, polling st every poll, and its state whenever it changes, until
// the session is done and all of its output sent, ctx ends, or maxFor
// passes. Before each poll it asks still (nil: always) whether the viewer
// may still read the stream; when they may not, it sends an "ended" event
// with the reason and ends.
func streamLive(ctx context.Context, w http.ResponseWriter, st liveStore, sessionID string, after int64, poll, maxFor time.Duration,
	still func(context.Context) (ended string, err error)) error {
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
		if still != nil {
			ended, err := still(ctx)
			if err != nil {
				return err
			}
			if ended != "" {
				if err := writeEvent(bw, "ended", "", liveEndedEvent{Reason: ended}); err != nil {
					return err
				}
				if err := bw.Flush(); err != nil {
					return err
				}
				return rc.Flush()
			}
		}
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
