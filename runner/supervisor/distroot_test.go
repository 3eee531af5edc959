package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/sandboxtest"
)

// distributionRoot opens the Debian root .ci/ensure-distroot built on this
// machine (make test runs it first).
func distributionRoot(t testing.TB) v1.Image {
	t.Helper()
	img, err := images.OpenBaseImage(context.Background(), distributionRootRef(t))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// distributionRootRef is the Debian root's reference, as
// snapshots.base_image names an OCI layout.
func distributionRootRef(t testing.TB) string {
	t.Helper()
	return sandboxtest.DistributionRoot(t, filepath.Join("..", ".."))
}

// A real Debian root serves a whole session: the stand-in agent (sh, sed,
// wc from the root) makes its fix, and a verify that needs only the root's
// own tools passes. git, which the host has, is not there: the host's
// toolchain is not what ran.
func TestSessionOnADistributionRoot(t *testing.T) {
	agent, err := os.ReadFile(filepath.Join("..", "..", "examples", "stand-in-agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	f := newSnapshotFixtureOn(t, distributionRoot(t), nil)
	pinned := f.ch.Seed(map[string]string{
		"calc.go":                           "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b + 1\n}\n",
		"scripts/inspect-stand-in-agent.sh": string(agent),
	})
	spec := f.spec(pinned)
	spec.Agent.Command = []string{"sh", "scripts/inspect-stand-in-agent.sh"}
	spec.Verify = []contract.Command{{
		Name: "the root's tools",
		Argv: []string{"bash", "-c", `set -e
grep -q 'return a + b$' calc.go
sort --version | head -n1 | grep -q 'GNU coreutils'
test "$DISTROOT" = debian
test "$(awk 'BEGIN { print 6 * 7 }')" = 42
find . -name calc.go | grep -q calc.go
if command -v git; then echo "git is the host's"; exit 1; fi
test "$(whoami)" = inspect`},
		Timeout: contract.Duration(time.Minute),
	}}
	h := newHarness(t, f.ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	if w := ev.Workspace; w == nil || w.Source != contract.WorkspaceSnapshot || w.ImageRoot == nil || w.ImageRoot.Layers != 1 {
		t.Fatalf("workspace evidence = %+v", w)
	}
	if u.Manifest == nil || len(u.Manifest.Files) != 1 || u.Manifest.Files[0].Path != "calc.go" {
		t.Fatalf("the change is not the agent's fix: %+v", u.Manifest)
	}
	if got := string(u.Manifest.Files[0].Content); !strings.Contains(got, "return a + b\n") {
		t.Errorf("calc.go after the agent:\n%s", got)
	}
}
