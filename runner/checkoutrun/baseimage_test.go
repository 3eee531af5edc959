package checkoutrun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/sandboxtest"
)

// `inspect run --server-config` runs a repository with no snapshot:
// section on the server config's snapshots.base_image, as the server's
// sessions do (decision 0079): the agent and verify see the Debian root
// (its Env's DISTROOT, and no git, which the host has).
func TestRunUsesTheServersBaseImage(t *testing.T) {
	t.Parallel()
	repo, _ := newRepo(t, map[string]string{".github/inspect.yml": `agent:
  preset: command
  command: ["sh", "-c", "echo \"root=$DISTROOT\" > \"$INSPECT_ANSWER_FILE\""]
verify:
  - name: on the root
    run: ["sh", "-c", "test \"$DISTROOT\" = debian && ! command -v git >/dev/null"]
`})
	var progress lockedBuffer
	opt := options(t, repo, &progress)
	server := config.Defaults()
	server.Snapshots.BaseImage = sandboxtest.DistributionRoot(t, filepath.Join("..", ".."))
	opt.Server, opt.ServerSource = &server, "server.yaml"
	res, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	ev := res.Evidence
	if ev.Outcome != contract.OutcomeOK || ev.FinalAnswer != "root=debian\n" {
		t.Fatalf("%s (%s), answer %q\n%+v", ev.Outcome, ev.Reason, ev.FinalAnswer, ev.Commands)
	}
	if res.Spec.BaseImage != server.Snapshots.BaseImage {
		t.Errorf("spec's base image = %q, want snapshots.base_image", res.Spec.BaseImage)
	}
	name, digest, _ := strings.Cut(server.Snapshots.BaseImage, "@")
	if w := ev.Workspace; w == nil || w.Source != contract.WorkspaceClone || w.ImageRoot == nil ||
		w.BaseImage == nil || w.BaseImage.Name != name || w.BaseImage.Digest != digest {
		t.Errorf("workspace evidence = %+v", w)
	}
}
