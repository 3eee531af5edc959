package images

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// TestSkopeoReadsPushedSnapshot checks the pushed snapshot with a client
// that shares no code with go-containerregistry: what skopeo reads is what
// a registry, a runtime or a person would see.
func TestSkopeoReadsPushedSnapshot(t *testing.T) {
	skopeo, err := exec.LookPath("skopeo")
	if err != nil {
		t.Fatalf("skopeo is not installed (%v): run .ci/ensure-skopeo", err)
	}
	reg := newTestRegistry(t)
	s := reg.store(t)
	base := newBaseImage(t)
	fx := newRepoFixture(t)
	in := fx.input(t, base, 0, nil)
	out := assemble(t, in)
	snap, err := s.Push(t.Context(), out.Image)
	if err != nil {
		t.Fatal(err)
	}

	ref := "docker://" + reg.host() + "/inspect/acme/widget:latest"
	cmd := exec.CommandContext(t.Context(), skopeo, "inspect", "--tls-verify=false", ref)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("skopeo inspect %s: %v\n%s", ref, err, stderr.String())
	}
	var inspected struct {
		Digest string
		Labels map[string]string
		Layers []string
		Env    []string
	}
	if err := json.Unmarshal(raw, &inspected); err != nil {
		t.Fatalf("skopeo output: %v\n%s", err, raw)
	}
	if inspected.Digest != snap.Digest.String() {
		t.Errorf("skopeo sees digest %s, Push returned %s", inspected.Digest, snap.Digest)
	}
	wantLabels := map[string]string{
		LabelRepo:    testRepo,
		LabelSHA:     in.SHA,
		LabelBuilt:   "2025-03-04T05:06:07.00000089Z",
		LabelVersion: in.Version,
		LabelCaches:  `[{"path":"/cache/go/mod","key":"` + in.Caches[0].Key + `"}]`,
		baseLabel:    "toolchain",
	}
	for k, v := range wantLabels {
		if inspected.Labels[k] != v {
			t.Errorf("skopeo sees label %s = %q, want %q", k, inspected.Labels[k], v)
		}
	}
	if len(inspected.Layers) != 3 {
		t.Errorf("skopeo sees %d layers, want 3 (base, cache, workspace): %v", len(inspected.Layers), inspected.Layers)
	}
	if len(inspected.Env) != 2 {
		t.Errorf("skopeo sees env %v, want the base image's", inspected.Env)
	}
}
