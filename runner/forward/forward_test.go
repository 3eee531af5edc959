package forward

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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
