package supervisor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/opencode-1.18.33-events.sse is GET /event of a real `opencode
// serve --pure` (1.18.33) as curl -N saved it: a session created, a
// prompt posted while the model's address refused connections (so the
// run retried), then POST /session/ID/abort.
const recordedOpenCodeSession = "ses_dad1eeed9ffeYu88katGL7412O"

func TestOpenCodeEventsAreReadFromTheServersStream(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "opencode-1.18.33-events.sse"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := make(chan openCodeEvent, 1000)
	readOpenCodeEvents(context.Background(), f, out)
	close(out)
	var types []string
	busy, idle := 0, 0
	for ev := range out {
		types = append(types, ev.Type)
		if ev.busy(recordedOpenCodeSession) {
			busy++
		}
		if ev.idle(recordedOpenCodeSession) {
			idle++
			if busy == 0 {
				t.Error("the run's end came before its start")
			}
		}
		if ev.idle("ses_another") || ev.busy("ses_another") {
			t.Errorf("%s is taken for another session's", ev.Type)
		}
		if f := ev.failure(recordedOpenCodeSession); f != "" {
			t.Errorf("an abort is no failure: %q", f)
		}
	}
	if types[0] != "server.connected" || types[len(types)-1] != "server.heartbeat" {
		t.Errorf("events %v", types)
	}
	// busy, retry, busy, retry (a run waiting to retry is a run going),
	// then the abort's status idle and session.idle.
	if busy != 5 || idle != 2 {
		t.Errorf("busy %d, idle %d; want 5 and 2", busy, idle)
	}
}

func TestAnOverlongEventIsSkippedAndTheNextRead(t *testing.T) {
	long := `data: {"type":"message.part.updated","properties":{"sessionID":"ses_x","part":"` + strings.Repeat("a", maxOpenCodeEvent) + `"}}` + "\n\n"
	stream := long + `data: {"type":"session.idle","properties":{"sessionID":"ses_abcdefgh12"}}` + "\n\n" + "event: ping\ndata: not json\n\n"
	out := make(chan openCodeEvent, 10)
	readOpenCodeEvents(context.Background(), strings.NewReader(stream), out)
	close(out)
	var got []openCodeEvent
	for ev := range out {
		got = append(got, ev)
	}
	if len(got) != 1 || !got[0].idle("ses_abcdefgh12") {
		t.Errorf("events %+v", got)
	}
}

func TestOpenCodeFailuresAreItsErrorsButNotAnAbort(t *testing.T) {
	for _, c := range []struct {
		data, want string
	}{
		{`{"type":"session.error","properties":{"sessionID":"ses_a1b2c3d4e5","error":{"name":"APIError","data":{"message":"rate limited","isRetryable":false}}}}`, "APIError: rate limited"},
		{`{"type":"session.error","properties":{"sessionID":"ses_a1b2c3d4e5","error":{"name":"ProviderAuthError","data":{}}}}`, "ProviderAuthError"},
		{`{"type":"session.error","properties":{"sessionID":"ses_a1b2c3d4e5","error":{"name":"MessageAbortedError","data":{"message":"aborted"}}}}`, ""},
		{`{"type":"session.error","properties":{"sessionID":"ses_other12345","error":{"name":"APIError","data":{"message":"x"}}}}`, ""},
		{`{"type":"session.error","properties":{"sessionID":"ses_a1b2c3d4e5"}}`, ""},
	} {
		out := make(chan openCodeEvent, 1)
		readOpenCodeEvents(context.Background(), strings.NewReader("data: "+c.data+"\n\n"), out)
		close(out)
		ev := <-out
		if got := ev.failure("ses_a1b2c3d4e5"); got != c.want {
			t.Errorf("%s: failure %q, want %q", c.data, got, c.want)
		}
	}
}

// The socket's directory is the sandbox's to write: a link in the
// socket's place, to a socket of the host's, is never followed.
func TestTheAgentSocketIsNeverALinkTheSandboxPlanted(t *testing.T) {
	host, sandboxDir := t.TempDir(), t.TempDir()
	hostSock := filepath.Join(host, "host.sock")
	ln, err := net.Listen("unix", hostSock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed at the test's end
			}
			c.Close()
			t.Error("the host's socket was reached through the sandbox's link")
		}
	}()
	if err := os.Symlink(hostSock, filepath.Join(sandboxDir, openCodeSocketName)); err != nil {
		t.Fatal(err)
	}
	if c, err := dialAgentSocket(context.Background(), sandboxDir, openCodeSocketName); err == nil || !strings.Contains(err.Error(), "not a socket") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dialled through a link: %v", err)
	}
	// A directory link in the directory's place is refused too.
	linked := filepath.Join(t.TempDir(), "agent")
	if err := os.Symlink(host, linked); err != nil {
		t.Fatal(err)
	}
	if c, err := dialAgentSocket(context.Background(), linked, "host.sock"); err == nil {
		c.Close()
		t.Fatal("dialled through a linked directory")
	}

	// The sandbox's own socket is reached.
	if err := os.Remove(filepath.Join(sandboxDir, openCodeSocketName)); err != nil {
		t.Fatal(err)
	}
	own, err := net.Listen("unix", filepath.Join(sandboxDir, openCodeSocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	accepted := make(chan struct{})
	go func() {
		if c, err := own.Accept(); err == nil {
			c.Close()
			close(accepted)
		}
	}()
	c, err := dialAgentSocket(context.Background(), sandboxDir, openCodeSocketName)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-accepted
}
