package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The demo is the README's first command; it must keep working.
func TestDemoShowsTheControlPlane(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), t.TempDir(), &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"HTTP 200",
		"@alice  preparing",
		"@bob  done outcome=refused reason=insufficient_permission",
		"Inspect on 3f78685: queued",
		":eyes: by inspect-app[bot]",
		"fix the flaky test",
		"/inspect retry",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
