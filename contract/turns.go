package contract

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// The turns of a session (decision 0071): a message someone sent while it
// runs reaches the supervisor over the session channel, never by polling
// GitHub. The supervisor asks for the turns after the last one it has, and
// the request waits (a long poll) until there is one or the wait is over;
// asking for the turns after N says it has every turn up to N, which the
// app records as delivered.
const (
	// PathTurns: GET the session's turns after ?after=N (0: every turn
	// after the request), waiting up to ?wait= (a Go duration, at most
	// MaxTurnsWait; 0 answers at once) for one. Session token.
	PathTurns  = "/v1/attempts/{attempt}/turns"
	RouteTurns = "GET " + PathTurns
)

// Bounds of the turns route.
const (
	// MaxTurnsWait is the longest a turns request waits for a turn: a
	// proxy between Buildkite's agent and the app must not cut it first.
	MaxTurnsWait = 25 * time.Second
	// TurnsPollInterval is how often a waiting turns request asks the
	// backend again: the bound, with the supervisor's own wait, on how
	// late a message reaches the agent.
	TurnsPollInterval = 200 * time.Millisecond
	// MaxTurnMessageBytes caps a turn's message (a command's
	// instructions' cap).
	MaxTurnMessageBytes = 16 << 10
	// MaxTurnsPerResponse caps the turns one answer carries.
	MaxTurnsPerResponse = 20
)

// Steer is how a session takes the turns that come while it runs (spec v7).
// A spec without it takes none: the supervisor never asks.
type Steer struct {
	// Mode is "interrupt" (stop the agent's run and continue its
	// conversation with the message at once) or "queue" (deliver it when
	// the run ends).
	Mode string `json:"mode"`
	// TurnTimeout caps each of the agent's runs (0: none but the
	// session's deadline, which covers them all).
	TurnTimeout Duration `json:"turn_timeout,omitempty"`
}

// The steer modes a spec names.
const (
	SteerInterrupt = "interrupt"
	SteerQueue     = "queue"
)

// Turn is one message of a session's conversation as the supervisor gets
// it. Message is untrusted text; it reaches the agent as a file or an
// argument, never a shell string.
type Turn struct {
	// Seq is the turn's place in the session: 1 for the first message
	// after the request.
	Seq int `json:"seq"`
	// Author is the GitHub login who sent it.
	Author string `json:"author"`
	// Message is what they asked; empty for Stop.
	Message string `json:"message,omitempty"`
	// Stop ends the agent's current run: the session goes on to collect,
	// verify and report what the workspace holds.
	Stop bool `json:"stop,omitempty"`
}

// TurnsResponse answers a turns request.
type TurnsResponse struct {
	Turns []Turn `json:"turns"`
}

// Validate reports the turn's faults.
func (t Turn) Validate() error {
	var f faults
	if t.Seq < 1 {
		f.add("seq", "must be 1 or more")
	}
	checkLine(&f, "author", t.Author, MaxNameBytes, true)
	checkText(&f, "message", t.Message, MaxTurnMessageBytes, false)
	if t.Stop && t.Message != "" {
		f.add("message", "must be empty for a stop")
	}
	if !t.Stop && t.Message == "" {
		f.add("message", "is required")
	}
	return f.err("turn")
}

// turns serves RouteTurns: it asks the backend until it has a turn or the
// wait is over, every TurnsPollInterval (the request's context ends it
// sooner). The backend answers from its store, which any replica writes,
// so the wait needs no message between replicas.
func (s *ChannelServer[A]) turns(w http.ResponseWriter, r *http.Request, a A) {
	q := r.URL.Query()
	after, err := strconv.Atoi(q.Get("after"))
	if err != nil || after < 0 {
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "after must be a turn number, 0 or more"}, err)
		return
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		if wait, err = time.ParseDuration(v); err != nil || wait < 0 {
			s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "wait must be a duration, 0 or more"}, err)
			return
		}
	}
	// The wall clock, not s.now: that one judges the token's expiry, and
	// a test's fixed clock would never let the wait end.
	until := time.Now().Add(min(wait, MaxTurnsWait))
	for {
		turns, err := s.backend.Turns(r.Context(), a, after)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(turns) > MaxTurnsPerResponse {
			turns = turns[:MaxTurnsPerResponse]
		}
		for i, t := range turns {
			if err := t.Validate(); err != nil {
				s.fail(w, r, fmt.Errorf("turn %d: %w", i, err))
				return
			}
		}
		left := time.Until(until)
		if len(turns) > 0 || left <= 0 {
			WriteJSON(w, 0, TurnsResponse{Turns: append([]Turn{}, turns...)})
			return
		}
		t := time.NewTimer(min(s.turnsPoll, left))
		select {
		case <-r.Context().Done():
			t.Stop()
			return // the supervisor left; nothing to answer
		case <-t.C:
		}
	}
}

// MaxTurnsResponseBytes caps a TurnsResponse.
const MaxTurnsResponseBytes = MaxTurnsPerResponse*(6*MaxTurnMessageBytes+1<<10) + 1<<10

// Validate reports the answer's faults: too many turns, a bad one, or
// turns out of order.
func (r TurnsResponse) Validate() error {
	if len(r.Turns) > MaxTurnsPerResponse {
		return fmt.Errorf("turns: %d turns; at most %d", len(r.Turns), MaxTurnsPerResponse)
	}
	for i, t := range r.Turns {
		if err := t.Validate(); err != nil {
			return err
		}
		if i > 0 && t.Seq <= r.Turns[i-1].Seq {
			return fmt.Errorf("turns: turn %d comes after turn %d", t.Seq, r.Turns[i-1].Seq)
		}
	}
	return nil
}

// DecodeTurnsResponse reads and validates a TurnsResponse strictly.
func DecodeTurnsResponse(r io.Reader) (TurnsResponse, error) {
	var t TurnsResponse
	err := decodeMessage(r, "turns", MaxTurnsResponseBytes, &t)
	return t, err
}

// The flight recorder (decision 0071): what the running agent has written
// so far and what it runs now, from the disk watch's walk of the workspace
// (decision 0031; never a git command on it while it runs), sent about
// once a second. The app keeps the newest for the session's page.
const (
	// PathRecorder: POST one Recorder. Session token. Best effort.
	PathRecorder  = "/v1/attempts/{attempt}/recorder"
	RouteRecorder = "POST " + PathRecorder
	// MaxRecorderFiles caps Recorder.Files.
	MaxRecorderFiles = 200
	// MaxRecorderBytes caps a Recorder message.
	MaxRecorderBytes = 128 << 10
	// MaxRecorderCommandBytes caps Recorder.Command.
	MaxRecorderCommandBytes = 512
)

// Recorder is the running agent's flight recorder. Paths and the command
// are the sandbox's: untrusted text, redacted by the supervisor, shown as
// text.
type Recorder struct {
	Time  time.Time `json:"time"`
	Phase Phase     `json:"phase"`
	// Turn is the agent's run it describes: 0 the first, N the run the
	// message of turn N started.
	Turn int `json:"turn"`
	// Command is the newest process's command line, cut.
	Command string `json:"command,omitempty"`
	// Files are the files written since the agent started, by path, with
	// their sizes; FilesTruncated says there were more.
	Files          []RecorderFile `json:"files"`
	FilesTruncated bool           `json:"files_truncated,omitempty"`
}

// RecorderFile is one file the agent wrote.
type RecorderFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Lines is its line count, counted when the agent's run ended (nil
	// while it runs, or for a file over MaxRecorderCountBytes).
	Lines *int64 `json:"lines,omitempty"`
}

// MaxRecorderCountBytes caps the files whose lines are counted at the end
// of a run.
const MaxRecorderCountBytes = 1 << 20

// Validate reports the recorder's faults.
func (r Recorder) Validate() error {
	var f faults
	if r.Time.IsZero() {
		f.add("time", "is required")
	}
	if r.Turn < 0 {
		f.add("turn", "must be 0 or more")
	}
	checkText(&f, "command", r.Command, MaxRecorderCommandBytes, false)
	if len(r.Files) > MaxRecorderFiles {
		f.add("files", "has %d files; at most %d", len(r.Files), MaxRecorderFiles)
	}
	for i, file := range r.Files {
		if err := ValidatePath(file.Path); err != nil {
			f.add(fmt.Sprintf("files[%d].path", i), "%v", err)
		}
		if file.Size < 0 {
			f.add(fmt.Sprintf("files[%d].size", i), "must not be negative")
		}
		if file.Lines != nil && *file.Lines < 0 {
			f.add(fmt.Sprintf("files[%d].lines", i), "must not be negative")
		}
	}
	return f.err("recorder")
}

// DecodeRecorder reads and validates a Recorder strictly.
func DecodeRecorder(r io.Reader) (Recorder, error) {
	var rec Recorder
	err := decodeMessage(r, "recorder", MaxRecorderBytes, &rec)
	return rec, err
}

func (s *ChannelServer[A]) recorder(w http.ResponseWriter, r *http.Request, a A) {
	rec, err := DecodeRecorder(r.Body)
	if err != nil {
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "invalid recorder: " + err.Error()}, err)
		return
	}
	if err := s.backend.Recorder(r.Context(), a, rec); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
