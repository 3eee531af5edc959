package supervisor

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// flightRecorder sends the running agent's flight recorder (decision
// 0071): what the disk watch's walk saw it write, and its newest process,
// about once a second (sandbox.Spec.Watch). The watch hands over the
// newest and never waits; one goroutine sends, dropping what a slow
// channel could not keep up with.
type flightRecorder struct {
	s      *session
	turn   int
	mu     sync.Mutex
	latest *contract.Recorder
	// last is the newest report, and lastRaw its files as the sandbox
	// named them (before redaction), for the line counts at the end.
	last    *contract.Recorder
	lastRaw []string
	wake    chan struct{}
	stop    chan struct{}
	done    sync.WaitGroup
}

// startRecorder starts the sender for the agent's run of turn.
func (s *session) startRecorder(turn int) *flightRecorder {
	r := &flightRecorder{s: s, turn: turn, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		for {
			select {
			case <-r.stop:
				return
			case <-r.wake:
				r.send()
			}
		}
	}()
	return r
}

// update is sandbox.Spec.Watch: it keeps the report, redacted and cut to
// what the contract takes, as the newest.
func (r *flightRecorder) update(rep sandbox.WatchReport) {
	r.mu.Lock()
	turn := r.turn
	r.mu.Unlock()
	rec := &contract.Recorder{Time: r.s.cfg.Now(), Phase: contract.PhaseAgent, Turn: turn, FilesTruncated: rep.Truncated,
		Command: contract.CleanProgressMessage(r.s.red.Redact(rep.Command)), Files: []contract.RecorderFile{}}
	rec.Command = policy.TruncateUTF8(rec.Command, contract.MaxRecorderCommandBytes)
	var raw []string // each of rec.Files as the sandbox named it
	for _, f := range rep.Files {
		p := r.s.red.Redact(f.Path)
		if contract.ValidatePath(p) != nil || len(rec.Files) == contract.MaxRecorderFiles {
			rec.FilesTruncated = true
			continue
		}
		rec.Files = append(rec.Files, contract.RecorderFile{Path: p, Size: f.Size})
		raw = append(raw, f.Path)
	}
	r.mu.Lock()
	r.latest, r.last, r.lastRaw = rec, rec, raw
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default: // a send is due already; it takes the newest
	}
}

// setTurn says the run now works on turn n: a served agent takes its
// turns in one run (served.go).
func (r *flightRecorder) setTurn(n int) {
	r.mu.Lock()
	r.turn = n
	r.mu.Unlock()
}

func (r *flightRecorder) send() {
	r.mu.Lock()
	rec := r.latest
	r.latest = nil
	r.mu.Unlock()
	if rec == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.s.parent), r.s.cfg.RequestTimeout)
	defer cancel()
	if err := r.s.ch.recorder(ctx, *rec); err != nil {
		r.s.log.Debug().Str("error", r.s.red.Redact(err.Error())).Msg("flight recorder not delivered")
	}
}

// close stops the sender, after sending the last report it holds; then,
// the run being over (its sandbox and every process in it gone), it sends
// that report again with each file's line count.
func (r *flightRecorder) close() {
	close(r.stop)
	r.done.Wait()
	r.send()
	r.mu.Lock()
	last, raw := r.last, r.lastRaw
	r.mu.Unlock()
	if last == nil {
		return
	}
	counted := *last
	counted.Time = r.s.cfg.Now()
	counted.Files = countLines(r.s.ws.work, raw, last.Files)
	r.mu.Lock()
	r.latest = &counted
	r.mu.Unlock()
	r.send()
}

// countLines adds the line count of each of files (named raw[i] in the
// workspace) that is a regular file of at most
// contract.MaxRecorderCountBytes, read through an os.Root at work: a link
// the agent left leads nowhere outside it.
func countLines(work string, raw []string, files []contract.RecorderFile) []contract.RecorderFile {
	out := append([]contract.RecorderFile(nil), files...)
	root, err := os.OpenRoot(work)
	if err != nil {
		return out
	}
	defer root.Close()
	for i := range out {
		if i < len(raw) {
			if n, ok := linesOf(root, raw[i]); ok {
				out[i].Lines = &n
			}
		}
	}
	return out
}

// linesOf counts the newlines of a regular file, without following a
// final link, when it is small enough.
func linesOf(root *os.Root, name string) (int64, bool) {
	fi, err := root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > contract.MaxRecorderCountBytes {
		return 0, false
	}
	f, err := root.Open(name)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, contract.MaxRecorderCountBytes+1))
	if err != nil || int64(len(b)) > contract.MaxRecorderCountBytes {
		return 0, false
	}
	return int64(bytes.Count(b, []byte{'\n'})), true
}
