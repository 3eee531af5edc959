package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/layertest"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// onTheDebianRoot passes only on the Debian root of .ci/ensure-distroot:
// its config's Env sets DISTROOT, it has no git (the host has), and it
// has no /etc/debian_version (its base-files were left out; a Debian or
// Ubuntu host, which ensure-distroot needs, has one).
const onTheDebianRoot = `test "$DISTROOT" = debian && ! command -v git >/dev/null && test ! -e /etc/debian_version`

// A session of a repository with no snapshot: section runs on the spec's
// base image as a restored one runs on its snapshot's base (decision
// 0079): its setup, its agent, its service (and the service's ready
// check) and its verify all see the image's root, its Env and an
// /etc/passwd naming the sandbox uid, and the evidence names the image.
func TestAColdSessionRunsOnTheBaseImage(t *testing.T) {
	ref := distributionRootRef(t)
	ch := channeltest.New(t)
	pinned := ch.Seed(map[string]string{"README.md": "hi\n"})
	spec := ch.Spec("s-coldbase", "a-coldbase", pinned,
		[]string{"sh", "-c", `{ echo "root=$DISTROOT"; command -v git || echo "no git"; test -e /etc/debian_version && echo "the host's /etc"; echo "user=$(whoami)"; } > seen.txt 2>&1`},
		command("on the root", time.Minute, "sh", "-c", onTheDebianRoot+` && test "$(whoami)" = inspect && grep -q 'root=debian' seen.txt`))
	spec.BaseImage = ref
	spec.Setup = []contract.Command{command("setup on the root", time.Minute, "sh", "-c", onTheDebianRoot)}
	spec.Services = []contract.Service{{
		Name: "on-the-root",
		Argv: []string{"sh", "-c", "exec sleep 600"},
		// Ready only on the image's root: on the host's the session
		// would end in error, the service never ready.
		Ready:        contract.ServiceReady{Argv: []string{"sh", "-c", onTheDebianRoot}},
		ReadyTimeout: contract.Duration(10 * time.Second),
	}}
	if spec.Snapshot != nil {
		t.Fatal("the spec has a snapshot section; this test is of a cold session")
	}
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\ncommands %+v\nservices %+v", ev.Outcome, ev.Reason, ev.Commands, ev.Services)
	}
	if got, want := seenFile(t, u), "root=debian\nno git\nuser=inspect\n"; got != want {
		t.Errorf("the agent saw\n%s\nwant\n%s", got, want)
	}
	ran := map[string]bool{}
	for _, c := range ev.Commands {
		ran[c.Name] = c.ExitCode == 0
	}
	if !ran["setup on the root"] || !ran["on the root"] {
		t.Errorf("setup and verify did not both pass on the root: %+v", ev.Commands)
	}
	if len(ev.Services) != 1 || !ev.Services[0].Ready {
		t.Errorf("services = %+v, want on-the-root ready", ev.Services)
	}
	w := ev.Workspace
	if w == nil || w.Source != contract.WorkspaceClone {
		t.Fatalf("workspace evidence = %+v, want a clone", w)
	}
	if w.ImageRoot == nil || w.ImageRoot.Layers != 1 {
		t.Errorf("image root = %+v, want the one-layer Debian root", w.ImageRoot)
	}
	name, digest, _ := strings.Cut(ref, "@")
	if b := w.BaseImage; b == nil || b.Name != name || b.Digest != digest {
		t.Errorf("base image = %+v, want %s at %s", b, name, digest)
	}
}

// Without a base image a cold session keeps the host's toolchain, as
// before: git is there, and the evidence names no image.
func TestAColdSessionWithoutABaseImageKeepsTheHostsToolchain(t *testing.T) {
	ch := channeltest.New(t)
	pinned := ch.Seed(map[string]string{"README.md": "hi\n"})
	spec := ch.Spec("s-coldhost", "a-coldhost", pinned, []string{"sh", "-c", "true"},
		command("the host's toolchain", time.Minute, "sh", "-c", `command -v git && test -z "$DISTROOT"`))
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	if len(ev.Commands) == 0 || ev.Commands[len(ev.Commands)-1].ExitCode != 0 {
		t.Errorf("verify did not pass on the host's toolchain: %+v", ev.Commands)
	}
	if w := ev.Workspace; w == nil || w.Source != contract.WorkspaceClone || w.ImageRoot != nil || w.BaseImage != nil {
		t.Errorf("workspace evidence = %+v, want a clone on no image", w)
	}
}

// A restore that fails (a snapshot whose base layer climbs out) leaves a
// cold clone, and that clone runs on the spec's base image too, its
// snapshot setup included.
func TestAFailedRestoreClonesColdOntoTheBaseImage(t *testing.T) {
	evil := layertest.Layer(t, layertest.File("opt/../../escape", "x", 0o644))
	f := newSnapshotFixtureOn(t, layertest.Image(t, []string{"PATH=/usr/bin:/bin"}, sharedToolchainLayer(t), evil), nil)
	spec := f.spec(f.first)
	spec.BaseImage = distributionRootRef(t)
	spec.Snapshot.Setup = []contract.Command{command("deps", time.Minute, "sh", "-c", onTheDebianRoot+" && echo rebuilt > /cache/deps/marker")}
	spec.Agent.Command = []string{"sh", "-c", `echo "root=$DISTROOT" > seen.txt`}
	h := newHarness(t, f.ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	w := ev.Workspace
	if w == nil || w.Source != contract.WorkspaceClone || w.RestoreError == "" || w.ImageRoot == nil || w.BaseImage == nil {
		t.Fatalf("workspace evidence = %+v, want a cold clone on the base image after a failed restore", w)
	}
	if !setupRan(ev) {
		t.Errorf("the snapshot setup did not pass on the base image: %+v", ev.Commands)
	}
	if got := seenFile(t, u); got != "root=debian\n" {
		t.Errorf("the agent saw %q", got)
	}
}

// A base image that cannot be opened ends the session error, naming it,
// rather than running the repository's commands on the host's toolchain.
func TestAColdSessionWhoseBaseImageIsMissingEndsError(t *testing.T) {
	ch := channeltest.New(t)
	pinned := ch.Seed(map[string]string{"README.md": "hi\n"})
	spec := ch.Spec("s-coldgone", "a-coldgone", pinned, []string{"sh", "-c", "echo ran > seen.txt"},
		command("never", time.Minute, "true"))
	spec.BaseImage = "oci:" + t.TempDir() + "/missing@sha256:" + strings.Repeat("0", 64)
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeError || !strings.Contains(ev.Reason, "preparing the base image") || !strings.Contains(ev.Reason, "/missing") {
		t.Fatalf("outcome %s: %q, want error naming the base image", ev.Outcome, ev.Reason)
	}
	if len(ev.Commands) != 0 {
		t.Errorf("commands ran without their toolchain: %+v", ev.Commands)
	}
}
