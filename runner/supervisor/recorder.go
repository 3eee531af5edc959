package supervisor

import (
	"context"
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
	wake   chan struct{}
	stop   chan struct{}
	done   sync.WaitGroup
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
	rec := &contract.Recorder{Time: r.s.cfg.Now(), Phase: contract.PhaseAgent, Turn: r.turn, FilesTruncated: rep.Truncated,
		Command: contract.CleanProgressMessage(r.s.red.Redact(rep.Command)), Files: []contract.RecorderFile{}}
	rec.Command = policy.TruncateUTF8(rec.Command, contract.MaxRecorderCommandBytes)
	for _, f := range rep.Files {
		p := r.s.red.Redact(f.Path)
		if contract.ValidatePath(p) != nil || len(rec.Files) == contract.MaxRecorderFiles {
			rec.FilesTruncated = true
			continue
		}
		rec.Files = append(rec.Files, contract.RecorderFile{Path: p, Size: f.Size})
	}
	r.mu.Lock()
	r.latest = rec
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default: // a send is due already; it takes the newest
	}
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

// close stops the sender, after sending the last report it holds.
func (r *flightRecorder) close() {
	close(r.stop)
	r.done.Wait()
	r.send()
}
