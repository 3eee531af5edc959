package app_test

import (
	"context"
	"sync"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/ghconformance"
)

// Every end-to-end test ends by checking each REST request Inspect (and
// the test) sent the GitHub stand-in against GitHub's published
// description (internal/ghconformance): a request GitHub's description
// does not allow fails the test, as it could fail on GitHub.

var (
	conformanceOnce    sync.Once
	conformanceChecker *ghconformance.Checker
	conformanceErr     error
)

// checkConformance checks gh's recorded REST requests, each distinct
// failure once.
func checkConformance(t testing.TB, gh *fakegithub.Server) {
	t.Helper()
	conformanceOnce.Do(func() { conformanceChecker, conformanceErr = ghconformance.New() })
	if conformanceErr != nil {
		t.Fatal(conformanceErr)
	}
	seen := map[string]bool{}
	for _, r := range gh.Requests() {
		if !r.IsREST() {
			continue
		}
		err := conformanceChecker.Request(context.Background(), r.Method, r.EscapedPath, r.RawQuery, r.Body)
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			t.Errorf("a request GitHub's description does not allow: %v", err)
		}
	}
}
