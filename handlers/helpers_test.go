package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/handlers"
)

// Every handler is registered with go-githubapp's dispatcher.
var (
	_ githubapp.EventHandler = (*handlers.IssueComment)(nil)
	_ githubapp.EventHandler = (*handlers.Push)(nil)
	_ githubapp.EventHandler = handlers.Ping{}
)

// fakeSink records what the handlers hand over and returns err, if set, from
// every call.
type fakeSink struct {
	err error

	mu       sync.Mutex
	triggers []handlers.Trigger
	pushes   []handlers.ConfigPush
	moved    []handlers.Repo
}

func (s *fakeSink) DefaultBranchMoved(_ context.Context, r handlers.Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moved = append(s.moved, r)
}

var _ handlers.Sink = (*fakeSink)(nil)

func (s *fakeSink) AcceptTrigger(_ context.Context, t handlers.Trigger) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.triggers = append(s.triggers, t)
	return s.err
}

func (s *fakeSink) AcceptConfigPush(_ context.Context, p handlers.ConfigPush) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushes = append(s.pushes, p)
	return s.err
}

func (s *fakeSink) recorded() ([]handlers.Trigger, []handlers.ConfigPush) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]handlers.Trigger(nil), s.triggers...), append([]handlers.ConfigPush(nil), s.pushes...)
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
		t.Errorf("%s got\n  %+v\nwant\n  %+v", what, got[0], *want)
	}
}
