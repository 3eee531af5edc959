package screenshots

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

type fakeStore struct {
	attempts  map[string]store.Attempt
	artifacts map[string][]store.Artifact
}

func (f fakeStore) GetAttempt(_ context.Context, id string) (store.Attempt, error) {
	a, ok := f.attempts[id]
	if !ok {
		return store.Attempt{}, store.ErrNotFound
	}
	return a, nil
}

func (f fakeStore) Artifacts(_ context.Context, id string) ([]store.Artifact, error) {
	return f.artifacts[id], nil
}

func attempt(t *testing.T, id string, repo int64, ev contract.Evidence) store.Attempt {
	t.Helper()
	b, err := json.Marshal(contract.ResultUpload{Evidence: ev})
	if err != nil {
		t.Fatal(err)
	}
	return store.Attempt{ID: id, RepoID: repo, Result: string(b)}
}

// Pairs match by (command, path) across the change and the base the
// evidence names; a side the store does not hold as an image is missing,
// whatever the evidence says; a base of another repository is none.
func TestPairsMatchByCommandAndPathAndTrustTheStore(t *testing.T) {
	mark := func(cmd string, names ...string) []contract.Artifact {
		var out []contract.Artifact
		for _, n := range names {
			out = append(out, contract.Artifact{Name: n, Screenshot: cmd})
		}
		return out
	}
	png := func(id string, names ...string) []store.Artifact {
		var out []store.Artifact
		for _, n := range names {
			out = append(out, store.Artifact{AttemptID: id, Name: n, ContentType: "image/png", SHA256: n})
		}
		return out
	}
	// A session attempt records no repository: the session has it.
	change := attempt(t, "c", 0, contract.Evidence{
		Artifacts: append(mark("ui", "a.png", "b.png", "fake.png"), contract.Artifact{Name: "report.txt"}),
		Baseline:  &contract.BaselineComparison{AttemptID: "b"},
	})
	f := fakeStore{
		attempts: map[string]store.Attempt{
			"c": change,
			"b": attempt(t, "b", 1, contract.Evidence{Artifacts: append(mark("ui", "a.png", "old.png"), mark("e2e", "b.png")...)}),
		},
		artifacts: map[string][]store.Artifact{
			"c": append(append(png("c", "a.png", "b.png"), store.Artifact{Name: "fake.png", ContentType: "text/plain"}), store.Artifact{Name: "report.txt", ContentType: "text/plain"}),
			"b": png("b", "a.png", "old.png", "b.png"),
		},
	}
	pairs, err := Pairs(context.Background(), f, change, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pairs {
		got = append(got, p.Command+":"+p.Name+":"+side(p.Base)+side(p.Change))
		if p.Anchor != Anchor(p.Command, p.Name) {
			t.Errorf("%s's anchor %q", p.Name, p.Anchor)
		}
	}
	want := "e2e:b.png:B- ui:a.png:BC ui:b.png:-C ui:old.png:B-"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("pairs = %s, want %s", g, want)
	}
	// The same base under another repository's id: no base side at all.
	other := f.attempts["b"]
	other.RepoID = 2
	f.attempts["b"] = other
	pairs, err = Pairs(context.Background(), f, change, 1)
	if err != nil || len(pairs) != 2 || pairs[0].Base != nil || pairs[1].Base != nil {
		t.Errorf("pairs with another repository's base: %+v, %v", pairs, err)
	}
}

func side(s *Shot) string {
	if s == nil {
		return "-"
	}
	return map[string]string{"b": "B", "c": "C"}[s.AttemptID]
}
