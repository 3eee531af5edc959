package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/session"
)

// Every handler is registered with go-githubapp's dispatcher.
var (
	_ githubapp.EventHandler = (*handlers.IssueComment)(nil)
	_ githubapp.EventHandler = (*handlers.Push)(nil)
	_ githubapp.EventHandler = handlers.Ping{}
	_ githubapp.EventHandler = (*handlers.Issues)(nil)
	_ githubapp.EventHandler = (*handlers.CheckRun)(nil)
	_ githubapp.EventHandler = (*handlers.CheckSuite)(nil)
	_ githubapp.EventHandler = (*handlers.Status)(nil)
	_ githubapp.EventHandler = (*handlers.PullRequestReviewComment)(nil)
)

// fakeSink records what the handlers hand over and returns err, if set, from
// every call.
type fakeSink struct {
	err error

	mu       sync.Mutex
	triggers []session.Trigger
	pushes   []session.ConfigPush
	failures []session.CheckFailure
	moved    []session.Repo
}

func (s *fakeSink) DefaultBranchMoved(_ context.Context, r session.Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moved = append(s.moved, r)
}

var _ handlers.Sink = (*fakeSink)(nil)

func (s *fakeSink) AcceptTrigger(_ context.Context, t session.Trigger) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.triggers = append(s.triggers, t)
	return s.err
}

func (s *fakeSink) AcceptConfigPush(_ context.Context, p session.ConfigPush) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushes = append(s.pushes, p)
	return s.err
}

func (s *fakeSink) AcceptCheckFailure(_ context.Context, f session.CheckFailure) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f)
	return s.err
}

// recordedFailures is what AcceptCheckFailure got.
func (s *fakeSink) recordedFailures() []session.CheckFailure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]session.CheckFailure(nil), s.failures...)
}

func (s *fakeSink) recorded() ([]session.Trigger, []session.ConfigPush) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]session.Trigger(nil), s.triggers...), append([]session.ConfigPush(nil), s.pushes...)
}

// testContext carries a real logger, so the handlers' log lines are built.
func testContext() context.Context {
	l := zerolog.New(io.Discard)
	return l.WithContext(context.Background())
}

// loadFixture decodes one of the octokit/webhooks payloads. Numbers stay
// json.Number so that re-encoding reproduces them exactly.
func loadFixture(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "github-webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// setPath sets a dotted path ("comment.user.login") in a decoded payload,
// creating objects on the way.
func setPath(t *testing.T, m map[string]any, path string, v any) {
	t.Helper()
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			if m[k] != nil {
				t.Fatalf("setPath %s: %q is a %T, not an object", path, k, m[k])
			}
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// deletePath removes a dotted path from a decoded payload; the parent must
// exist.
func deletePath(t *testing.T, m map[string]any, path string) {
	t.Helper()
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("deletePath %s: %q is a %T, not an object", path, k, m[k])
		}
		m = next
	}
	if _, ok := m[keys[len(keys)-1]]; !ok {
		t.Fatalf("deletePath %s: not in the payload", path)
	}
	delete(m, keys[len(keys)-1])
}

// fixtureValue reads a dotted path ("check_run.app.id") off a decoded
// payload; a number indexes a list ("check_run.pull_requests.0.number").
// Numbers come back as json.Number.
func fixtureValue(t *testing.T, m map[string]any, path string) any {
	t.Helper()
	var v any = m
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				t.Fatalf("fixture %s: no %q", path, k)
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				t.Fatalf("fixture %s: no element %q in a list of %d", path, k, len(x))
			}
			v = x[i]
		default:
			t.Fatalf("fixture %s: %q is in a %T", path, k, v)
		}
	}
	return v
}

// checkFixture compares values read off a fixture with the values a test's
// expectation holds, so the expectation cannot drift from the data. Numbers
// are compared as int64s.
func checkFixture(t *testing.T, name string, want map[string]any) {
	t.Helper()
	m := loadFixture(t, name)
	for path, w := range want {
		got := fixtureValue(t, m, path)
		if n, ok := got.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				t.Fatalf("%s %s: %v", name, path, err)
			}
			got = i
		}
		switch x := w.(type) {
		case int:
			w = int64(x)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %s = %#v, the expectation has %#v", name, path, got, w)
		}
	}
}

func encode(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edited returns base() changed by edit, or nil when edit is nil (no call
// expected).
func edited[T any](base func() T, edit func(*T)) *T {
	if edit == nil {
		return nil
	}
	v := base()
	edit(&v)
	return &v
}

// expectCalls checks that the sink saw exactly want, or no call when want
// is nil.
func expectCalls[T any](t *testing.T, what string, got []T, want *T) {
	t.Helper()
	if want == nil {
		if len(got) != 0 {
			t.Fatalf("%s called with %+v, want no call", what, got)
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("%s called %d times, want once", what, len(got))
	}
	if !reflect.DeepEqual(got[0], *want) {
		t.Errorf("%s got\n  %s\nwant\n  %s", what, show(got[0]), show(*want))
	}
}

// show prints v with its pointers followed (a Trigger's Review).
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// buildPayload is raw when it is non-nil, and otherwise the fixture with
// each list of edits applied in turn.
func buildPayload(t *testing.T, raw []byte, fixture string, edits ...[]edit) []byte {
	t.Helper()
	if raw != nil {
		return raw
	}
	m := loadFixture(t, fixture)
	for _, list := range edits {
		for _, e := range list {
			e(t, m)
		}
	}
	return encode(t, m)
}

// expectSink checks everything the sink saw: the one trigger or check
// failure wanted (nil: none), and no other call of any kind.
func expectSink(t *testing.T, s *fakeSink, trigger *session.Trigger, failure *session.CheckFailure) {
	t.Helper()
	triggers, pushes := s.recorded()
	expectCalls(t, "AcceptConfigPush", pushes, nil)
	expectCalls(t, "AcceptTrigger", triggers, trigger)
	expectCalls(t, "AcceptCheckFailure", s.recordedFailures(), failure)
	s.mu.Lock()
	moved := append([]session.Repo(nil), s.moved...)
	s.mu.Unlock()
	expectCalls(t, "DefaultBranchMoved", moved, nil)
}

// checkMsg checks that a payload error mentions msg, when msg is set.
func checkMsg(t *testing.T, err error, msg string) {
	t.Helper()
	if msg != "" && (err == nil || !strings.Contains(err.Error(), msg)) {
		t.Errorf("Handle: %v, want it to mention %q", err, msg)
	}
}

// selfFor is the identity a case runs with: ours unless the case names one.
func selfFor(id *handlers.Identity) func() handlers.Identity {
	self := handlers.Identity{AppID: testAppID, AppSlug: testAppSlug}
	if id != nil {
		self = *id
	}
	return func() handlers.Identity { return self }
}

// deliveryFor is the X-GitHub-Delivery a case sends.
func deliveryFor(noID bool) string {
	if noID {
		return ""
	}
	return testDelivery
}
