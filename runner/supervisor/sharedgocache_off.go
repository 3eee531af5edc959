//go:build !inspecttest

package supervisor

// A build without the inspecttest tag, production's among them, shares no
// Go build cache between sessions (sharedgocache.go).
func sharedGoCacheDir() string { return "" }

// UseSharedGoCache does nothing without the inspecttest build tag: tests
// run without it (a plain `go test`) are only slower. internal/layers
// fails on a call outside test support.
func UseSharedGoCache(string) {}
