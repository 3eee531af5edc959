package main

import (
	"testing"

	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/supervisor"
)

// TestMain builds inspect for the sandbox's egress forwarder: `inspect
// run` runs in-process here, and this test binary is not inspect.
func TestMain(m *testing.M) {
	sandboxtest.MainWithForwarder(m, func(path, goCache string) {
		forwarderBinary = path
		supervisor.UseSharedGoCache(goCache)
	})
}
