package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The demo is the README's first command; it must keep working. It runs a
// real session: the local executor, the sandbox, the stand-in agent.
func TestDemoRunsTheWholeLoop(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), t.TempDir(), &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"HTTP 200",
		": changed (",
		"Co-authored-by: alice <1+alice@users.noreply.github.com>",
		"Inspect-Session: ",
		`Check run "Inspect" on`,
		"completed, success",
		"reviewers: alice",
		"Fixes #7",
		"`go test -json ./...` | ✅ passed",
		"needs the write, maintain or admin role",
		"/inspect retry",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
