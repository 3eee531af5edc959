package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/inspecthq/inspect/internal/sandboxtest"
)

// TestMain builds inspect once for the sandbox's egress forwarder: `inspect
// run` runs in-process here, and this test binary is not inspect.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "inspect-forwarder-")
	if err == nil {
		forwarderBinary, err = sandboxtest.BuildInspect(dir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "building inspect for the forwarder: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir) // a leftover temp dir is harmless
	os.Exit(code)
}
