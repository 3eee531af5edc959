package forward

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRelaysToTheSocketAndReturnsTheAgentsStatus(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "via the socket: %s %s", r.Method, r.URL.Path)
	})}
	go func() { _ = srv.Serve(ln) }() // ends when the test closes it
	defer srv.Close()

	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is needed to play the agent: %v", err)
	}
	addr := freeLoopback(t)
	var out bytes.Buffer
	code, err := Run(context.Background(), Options{
		Listen: addr, Socket: sock, Stdout: &out, Stderr: &out,
		Argv: []string{"sh", "-c", `curl -sS "http://$0/v1/providers/openai/responses"; exit 7`, addr},
	})
	if err != nil || code != 7 {
		t.Fatalf("Run = %d, %v; output:\n%s", code, err, out.String())
	}
	if !strings.Contains(out.String(), "via the socket: GET /v1/providers/openai/responses") {
		t.Errorf("the agent did not reach the socket:\n%s", out.String())
	}
	// The agent has exited: the listener is gone with it.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the forwarder still listens after the agent exited")
	}
}

// The way in: a connection to the exposed socket reaches a server on the
// sandbox's loopback (here one the test runs, as the agent's would be),
// while the agent runs. The agent says it has started, and waits until the
// test has its answer, through two FIFOs.
func TestExposesALoopbackServerOnASocket(t *testing.T) {
	dir := t.TempDir()
	srvLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "the agent's server: %s %s", r.Method, r.URL.Path)
	})}
	go func() { _ = srv.Serve(srvLn) }() // ends when the test closes it
	defer srv.Close()

	sock, started, finished := filepath.Join(dir, "agent.sock"), filepath.Join(dir, "started"), filepath.Join(dir, "finished")
	for _, f := range []string{started, finished} {
		if err := exec.Command("mkfifo", f).Run(); err != nil {
			t.Fatal(err)
		}
	}
	answered := make(chan string, 1)
	go func() {
		// Opening a FIFO blocks until the other side opens it too.
		if _, err := os.ReadFile(started); err != nil {
			answered <- err.Error()
			return
		}
		defer func() { _ = os.WriteFile(finished, []byte("done\n"), 0o600) }() // the agent's read ends either way
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
		resp, err := c.Get("http://agent/session/status")
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		c.CloseIdleConnections() // the test's server outlives the agent; its connection must not
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- string(b)
	}()
	var out bytes.Buffer
	code, err := Run(context.Background(), Options{
		Listen: freeLoopback(t), Socket: "/nonexistent", Stdout: &out, Stderr: &out,
		ExposeSocket: sock, ExposeAddr: srvLn.Addr().String(),
		Argv: []string{"sh", "-c", `echo up > "$0"; read line < "$1"`, started, finished},
	})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v; output:\n%s", code, err, out.String())
	}
	if got := <-answered; got != "the agent's server: GET /session/status" {
		t.Errorf("through the socket: %q", got)
	}
	if fi, err := os.Lstat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			t.Error("the exposed socket still answers after the agent exited")
		}
	}
}

func TestExposeTakesOnlyALoopbackAddress(t *testing.T) {
	for _, o := range []Options{
		{ExposeSocket: "/tmp/x.sock", ExposeAddr: "0.0.0.0:4096"},
		{ExposeSocket: "/tmp/x.sock"},
		{ExposeAddr: "127.0.0.1:4096"},
	} {
		o.Listen, o.Socket, o.Argv, o.Stdout, o.Stderr = freeLoopback(t), "/nonexistent", []string{"true"}, io.Discard, io.Discard
		if code, err := Run(context.Background(), o); err == nil || code != 2 {
			t.Errorf("%+v: %d, %v; want a refusal", o, code, err)
		}
	}
}

func TestRefusesANonLoopbackListenAddress(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8931", "10.0.0.1:80", "localhost", ""} {
		if code, err := Run(context.Background(), Options{Listen: addr, Socket: "/nonexistent", Argv: []string{"true"}, Stdout: io.Discard, Stderr: io.Discard}); err == nil || code != 2 {
			t.Errorf("Listen %q: %d, %v; want a refusal", addr, code, err)
		}
	}
}

func TestSignalledAgentReportsTheSignal(t *testing.T) {
	code, err := Run(context.Background(), Options{Listen: freeLoopback(t), Socket: "/nonexistent",
		Argv: []string{"sh", "-c", "kill -TERM $$"}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil || code != 128+15 {
		t.Errorf("Run = %d, %v; want 143", code, err)
	}
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
