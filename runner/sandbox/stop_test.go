package sandbox

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// readyWriter closes ready the first time "ready" is written to it.
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	ready chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), "ready") {
		w.once.Do(func() { close(w.ready) })
	}
	return n, err
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestStopEndsTheCommandGentlyWithinTheGrace(t *testing.T) {
	out := &readyWriter{ready: make(chan struct{})}
	s := newSpec(t, "/bin/sh", "-c", `trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.1; done`)
	s.Stdout = out
	stop := make(chan struct{})
	s.Stop, s.StopGrace = stop, time.Minute
	go func() {
		<-out.ready
		close(stop)
	}()
	res, _, _ := run(t, s)
	if !res.Stopped || res.ExitCode != 7 || res.Signal != "" || !strings.Contains(out.String(), "got-term") {
		t.Errorf("result %+v, output %q", res, out.String())
	}
}

func TestStopKillsACommandThatIgnoresItAfterTheGrace(t *testing.T) {
	out := &readyWriter{ready: make(chan struct{})}
	s := newSpec(t, "/bin/sh", "-c", `trap '' TERM; echo ready; while :; do sleep 0.1; done`)
	s.Stdout = out
	stop := make(chan struct{})
	s.Stop, s.StopGrace = stop, 300*time.Millisecond
	go func() {
		<-out.ready
		close(stop)
	}()
	res, _, _ := run(t, s)
	if !res.Stopped || res.Signal != "SIGKILL" || res.ExitCode != -1 {
		t.Errorf("result %+v", res)
	}
}
