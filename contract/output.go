package contract

import (
	"io"
	"time"
)

// PathOutput: POST one OutputChunk, the newest of a running command's
// output, for the dashboard's live view. Session token. Best effort: the
// app keeps chunks in seq order, ignores a seq it has seen, and keeps only
// a tail of each attempt's output (MaxLiveOutputBytes).
const (
	PathOutput  = "/v1/attempts/{attempt}/output"
	RouteOutput = "POST " + PathOutput
)

// Caps on live output.
const (
	// MaxOutputChunkTextBytes caps an OutputChunk's text; the supervisor
	// sends a batch when it reaches this size or every LiveOutputInterval.
	MaxOutputChunkTextBytes = 16 << 10
	// MaxOutputChunkBytes caps an OutputChunk message (JSON escaping can
	// grow the text sixfold).
	MaxOutputChunkBytes = 6*MaxOutputChunkTextBytes + 1<<10
	// MaxLiveOutputBytes is how much of an attempt's newest output the app
	// keeps for the live view.
	MaxLiveOutputBytes = 64 << 10
	// LiveOutputInterval is how often the supervisor sends what a command
	// printed since the last chunk.
	LiveOutputInterval = 250 * time.Millisecond
)

// OutputChunk is a batch of a command's output in the agent or verify
// phase, redacted by the supervisor before it is sent. Text is untrusted:
// valid UTF-8 with no NUL, possibly several lines; the dashboard shows it
// as text, never as markup.
type OutputChunk struct {
	// Seq numbers the attempt's chunks from 1.
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Phase   Phase     `json:"phase"`
	Command string    `json:"command"`
	Text    string    `json:"text"`
}

// Validate reports the chunk's faults.
func (c OutputChunk) Validate() error {
	var f faults
	if c.Seq < 1 {
		f.add("seq", "must be 1 or more")
	}
	if c.Time.IsZero() {
		f.add("time", "is required")
	}
	switch c.Phase {
	case PhaseAgent, PhaseVerify:
	case "":
		f.add("phase", "is required")
	default:
		f.add("phase", "must be agent or verify, not %s", safeQuote(string(c.Phase)))
	}
	checkLine(&f, "command", c.Command, MaxNameBytes, true)
	checkText(&f, "text", c.Text, MaxOutputChunkTextBytes, true)
	return f.err("output chunk")
}

// DecodeOutputChunk reads and validates an OutputChunk strictly.
func DecodeOutputChunk(r io.Reader) (OutputChunk, error) {
	var c OutputChunk
	err := decodeMessage(r, "output chunk", MaxOutputChunkBytes, &c)
	return c, err
}
