package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/inspecthq/inspect/images"
)

// A session on a repo with a snapshot gets the newest one pinned by digest
// in its spec, with the caches and the snapshot setup to catch it up; the
// repo's env and session setup come along too.
func TestDispatchPinsTheNewestSnapshot(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": "agent: {preset: command, command: [./agent.sh]}\n" +
		"env: {GOFLAGS: -trimpath}\n" +
		"setup: [{name: tools, run: [make, tools]}]\n" +
		"snapshot:\n  setup: [{name: deps, run: [go, mod, download]}]\n  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n"}, "snapshots on")

	// Two snapshots; the second is the newest.
	dir := strings.TrimPrefix(h.cfg.Snapshots.Store, images.LayoutPrefix)
	st, err := images.NewLayoutStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var newest string
	for i, sha := range []string{strings.Repeat("1", 40), strings.Repeat("2", 40)} {
		ws := t.TempDir()
		if err := os.WriteFile(filepath.Join(ws, "go.sum"), []byte{byte('a' + i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		built, err := images.Assemble(images.Input{Base: base, Repo: owner + "/" + repoName, SHA: sha, Version: "test",
			Built: time.Now().Add(time.Duration(i) * time.Minute).UTC(), WorkspaceDir: ws})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := st.Push(context.Background(), built.Image)
		if err != nil {
			t.Fatal(err)
		}
		newest = snap.Digest.String()
	}

	_, spec := startOnPR(t, h, ex, "/inspect fix it")
	sn := spec.Snapshot
	if sn == nil || sn.Digest != newest || sn.Store != h.cfg.Snapshots.Store {
		t.Fatalf("snapshot = %+v, want %s in %s", sn, newest, h.cfg.Snapshots.Store)
	}
	if len(sn.Caches) != 1 || sn.Caches[0].Path != "/cache/go" || len(sn.Setup) != 1 || sn.Setup[0].Name != "snapshot deps" {
		t.Errorf("snapshot = %+v", sn)
	}
	if spec.Env["GOFLAGS"] != "-trimpath" || len(spec.Setup) != 1 || spec.Setup[0].Name != "tools" {
		t.Errorf("env %v, setup %+v", spec.Env, spec.Setup)
	}
}

// Without a snapshot yet, or with snapshots off, the session clones cold.
func TestDispatchWithoutASnapshotClonesCold(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": "agent: {preset: command, command: [./agent.sh]}\n" +
		"snapshot:\n  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n"}, "snapshots on")
	_, spec := startOnPR(t, h, ex, "/inspect fix it")
	if spec.Snapshot != nil {
		t.Fatalf("snapshot = %+v, want none", spec.Snapshot)
	}
}
