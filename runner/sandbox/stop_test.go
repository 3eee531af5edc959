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

// The disk watch's walk tells Spec.Watch what the command wrote and what
// runs now (the session page's flight recorder), without reading a file.
func TestWatchReportsTheFilesWrittenAndTheNewestCommand(t *testing.T) {
	s := newSpec(t, "/bin/sh", "-c", `mkdir -p sub .git && echo hello > sub/a.txt && echo x > .git/HEAD && exec sleep 60`)
	stop := make(chan struct{})
	var once sync.Once
	var got WatchReport
	s.Stop, s.StopGrace, s.WatchSince = stop, time.Second, time.Now().Add(-time.Second)
	s.Watch = func(r WatchReport) {
		if len(r.Files) == 1 && strings.HasPrefix(r.Command, "sleep") {
			once.Do(func() {
				got = r
				close(stop)
			})
		}
	}
	res, _, _ := run(t, s)
	if !res.Stopped {
		t.Fatalf("the watch never saw the file and the command: %+v", res)
	}
	if got.Files[0] != (ChangedFile{Path: "sub/a.txt", Size: 6}) || got.Command != "sleep 60" || got.Truncated {
		t.Errorf("report %+v", got)
	}
}
