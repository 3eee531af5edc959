package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strings"
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
		msg := memoized("request", func() string {
			if err := conformanceChecker.Request(context.Background(), r.Method, r.EscapedPath, r.RawQuery, r.Body); err != nil {
				return err.Error()
			}
			return ""
		}, r.Method, r.EscapedPath, r.RawQuery, r.Body)
		if msg != "" && !seen[msg] {
			seen[msg] = true
			t.Errorf("a request GitHub's description does not allow: %s", msg)
		}
		if msg == "" {
			checkResponse(t, r, seen)
			checkPermission(t, r, seen)
		}
	}
}

// checked memoizes checks across the package's tests: validating the same
// request or answer again (a poll, the same fixture in another test) says
// the same, and kin-openapi's validation is the costly part of a test's
// cleanup.
var checked sync.Map // hash of the check's kind and inputs → its messages

// memoized is check's result for these inputs, computed once.
func memoized(kind string, check func() string, parts ...any) string {
	h := sha256.New()
	fmt.Fprint(h, kind)
	for _, p := range parts {
		switch v := p.(type) {
		case []byte:
			fmt.Fprintf(h, "\x00%d:", len(v))
			h.Write(v)
		default:
			s := fmt.Sprint(v)
			fmt.Fprintf(h, "\x00%d:%s", len(s), s)
		}
	}
	key := string(h.Sum(nil))
	if v, ok := checked.Load(key); ok {
		return v.(string)
	}
	msg := check()
	checked.Store(key, msg)
	return msg
}

// manifestPermissions are .github/app-manifest.json's default_permissions,
// read once (checkPermission and permissions_test.go).
var manifestPermissions = sync.OnceValues(func() (map[string]string, error) {
	raw, err := os.ReadFile("../.github/app-manifest.json")
	if err != nil {
		return nil, err
	}
	var m struct {
		DefaultPermissions map[string]string `json:"default_permissions"`
	}
	err = json.Unmarshal(raw, &m)
	return m.DefaultPermissions, err
})

// checkPermission checks r against GitHub's own permissions table
// (ghconformance.Permissions): the credential is one the route takes; the
// manifest asks for a permission that is enough for it; and the stand-in
// accepted no permission for it that GitHub's table does not name, so that
// a route passing here cannot need more on GitHub.
func checkPermission(t testing.TB, r fakegithub.Request, seen map[string]bool) {
	t.Helper()
	if r.Status == 401 || r.Auth == "none" {
		return // refused before any permission counts, or sent bare by a test
	}
	manifest, err := manifestPermissions()
	if err != nil {
		t.Fatal(err)
	}
	rp, err := conformanceChecker.Permissions(r.Method, r.EscapedPath)
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !seen[msg] {
			seen[msg] = true
			t.Error(msg)
		}
	}
	if err != nil {
		fail("permissions: %v", err)
		return
	}
	want := ghconformance.AuthInstallation
	if rp.Unlisted != nil {
		want = rp.Unlisted.Auth
	}
	switch {
	case r.Auth == want, r.Auth == ghconformance.AuthUser && want == ghconformance.AuthInstallation:
	default:
		fail("%s was sent with a %s credential; GitHub's route takes %s", rp.Operation, r.Auth, want)
		return
	}
	if len(rp.Grants) == 0 {
		return // no permission governs it (ghconformance.UnlistedOperations says why)
	}
	held := false
	names := map[string]bool{}
	for _, g := range rp.Grants {
		held = held || g.HeldBy(manifest)
		names[g.Name] = true
	}
	if !held {
		fail("%s needs one of %v, which .github/app-manifest.json does not ask for", rp.Operation, rp.Grants)
	}
	for _, area := range r.GateAreas {
		if !names[area] {
			fail("the stand-in accepts %s for %s, which GitHub's table does not name (it names %v)", area, rp.Operation, rp.Grants)
		}
	}
}

// checkResponse checks the stand-in's answer to r against the
// operation's response schema, less ResponseExcuses. Left out: answers
// the stand-in was told to fail (5xx, which tests inject as GitHub's
// outages) and bodies cut short by the recording.
func checkResponse(t testing.TB, r fakegithub.Request, seen map[string]bool) {
	t.Helper()
	if r.Status >= 500 || len(r.Response) >= fakegithub.MaxRecordedResponse {
		return
	}
	msgs := memoized("response", func() string {
		err := conformanceChecker.Response(context.Background(), r.Method, r.EscapedPath, r.RawQuery, r.Status, r.ContentType, r.Response)
		if err == nil {
			return ""
		}
		op := conformanceChecker.OperationID(r.Method, r.EscapedPath)
		var out []string
		for _, p := range ghconformance.Problems(err) {
			if !ghconformance.ExcusedResponse(op, p) {
				out = append(out, fmt.Sprintf("the stand-in answered %s %s (%s) with what GitHub's description does not allow: %d %s: %s", r.Method, r.Path, op, r.Status, p.Pointer, p.Reason))
			}
		}
		return strings.Join(out, "\n")
	}, r.Method, r.EscapedPath, r.RawQuery, r.Status, r.ContentType, r.Response)
	for _, msg := range strings.Split(msgs, "\n") {
		if msg != "" && !seen[msg] {
			seen[msg] = true
			t.Error(msg)
		}
	}
}
