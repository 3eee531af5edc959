package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// A workspace restored from a refreshed snapshot (a workspace layer at one
// commit, drift layers at a later one) catches up to any later commit of
// the branch, and to one of a history force-pushed over the snapshot's
// commit, with the commits since the snapshot's counted (issue 35). The
// workspace layer's commit has history before it, as a real repository's
// has: git walks from it too (it is a ref of the borrowed object store's
// repository), so the private repository's shallow boundary must hold it.
func TestRestoredDriftCatchesUpWithTheBranch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		move  func(ch *channeltest.Server, layer, refreshed string) string
		drift int
	}{
		{"the branch moved on", func(ch *channeltest.Server, _, _ string) string {
			ch.Seed(map[string]string{"main.txt": "three\n"})
			return ch.Seed(map[string]string{"main.txt": "four\n"})
		}, 2},
		{"a force-push over the snapshot's commit", func(ch *channeltest.Server, layer, _ string) string {
			ch.GitHub.CreateBranch(channeltest.Owner, channeltest.Repo, "main", layer)
			return ch.Seed(map[string]string{"forced.txt": "forced\n"})
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ch := channeltest.New(t)
			cloneURL := ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo)
			ch.Seed(map[string]string{"history.txt": "before the snapshot\n"})
			layerSHA := ch.Seed(map[string]string{"main.txt": "zero\n"})
			clone := func(sha string) *workspace {
				t.Helper()
				ws, err := newWorkspace(t.TempDir(), "snapshot-build")
				if err != nil {
					t.Fatal(err)
				}
				if err := ws.fetch(ctx, &git{bin: "git", home: ws.homeDir, path: os.Getenv("PATH")}, cloneURL, sha, ""); err != nil {
					t.Fatal(err)
				}
				return ws
			}
			// The workspace layer's .git, and the drift layers' objects and
			// boundary: shallow clones at their commits, as a snapshot
			// build leaves them.
			layer := clone(layerSHA)
			ch.Seed(map[string]string{"main.txt": "one\n"})
			refreshed := ch.Seed(map[string]string{"main.txt": "two\n"})
			drifts := clone(refreshed)
			driftShallow, err := os.ReadFile(filepath.Join(drifts.work, ".git", "shallow"))
			if err != nil {
				t.Fatal(err)
			}
			pinned := tc.move(ch, layerSHA, refreshed)

			w, err := newWorkspace(t.TempDir(), "session")
			if err != nil {
				t.Fatal(err)
			}
			w.snapshotGit = filepath.Join(layer.work, ".git")
			w.driftObjects, w.driftShallow = filepath.Join(drifts.work, ".git", "objects"), driftShallow
			g := &git{bin: "git", home: w.homeDir, path: os.Getenv("PATH")}
			drift, err := w.fetchOnto(ctx, g, cloneURL, pinned, "", refreshed)
			if err != nil {
				t.Fatalf("catching up from %s to %s: %v", refreshed, pinned, err)
			}
			if drift != tc.drift {
				t.Errorf("drift = %d commits, want %d", drift, tc.drift)
			}
			head, err := g.run(ctx, w.work, nil, nil, "rev-parse", "HEAD")
			if err != nil || strings.TrimSpace(string(head)) != pinned {
				t.Errorf("the workspace's HEAD = %q (%v), want %s", head, err, pinned)
			}
		})
	}
}

func TestMergeShallowIsTheSortedUnion(t *testing.T) {
	const (
		a = "1111111111111111111111111111111111111111"
		b = "2222222222222222222222222222222222222222"
		c = "cccccccccccccccccccccccccccccccccccccccc"
	)
	for _, tc := range []struct {
		name         string
		layer, drift string
		want         string
		wantErr      bool
	}{
		{"the layer's alone", a + "\n", "", a + "\n", false},
		{"the drifts' alone", "", c + "\n" + b + "\n", b + "\n" + c + "\n", false},
		{"both, once each", c + "\n" + a + "\n", a + "\n" + b + "\n", a + "\n" + b + "\n" + c + "\n", false},
		{"no final newline", a, b, a + "\n" + b + "\n", false},
		{"neither", "", "", "", false},
		{"a SHA-256 name", strings.Repeat("e", 64) + "\n", "", strings.Repeat("e", 64) + "\n", false},
		{"not an object name", a + "\n", "--upload-pack=x\n", "", true},
		{"upper-case hex", strings.ToUpper(c) + "\n", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeShallow([]byte(tc.layer), []byte(tc.drift))
			if (err != nil) != tc.wantErr || string(got) != tc.want {
				t.Errorf("mergeShallow = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
