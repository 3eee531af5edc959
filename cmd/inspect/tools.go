package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/inspecthq/inspect/runner/supervisor"
	"github.com/inspecthq/inspect/toolsimage"
)

const toolsUsage = `Usage:
  inspect tools build --out DIR [--node /usr/bin/node] [--npm npm]

build makes the agents' tools image (decision 0069): the Codex CLI, OpenCode
and Claude Code at the versions this build pins, installed with
npm install --prefix from the npm registry npm is configured for (install
scripts are not run), the host's node, and the ELF loader and shared
libraries they need, taken from the host. It is written as a one-layer OCI
image layout at DIR (new or empty); the same inputs give the same digest.
It prints the reference to set as agents.tools_image:
oci:DIR@sha256:<hex>. Copy the layout to a registry with any OCI tool
(skopeo copy oci:DIR docker://REGISTRY/NAME) to name it there by digest
instead. Sandboxes see its root read-only at /opt/inspect/tools.

Exit status: 0 on success, 1 when the build failed, 2 for usage errors.
`

func toolsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "build" {
		fmt.Fprint(stderr, toolsUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	fs := flag.NewFlagSet("tools build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, toolsUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	out := fs.String("out", "", "the OCI layout directory to write (new or empty)")
	node := fs.String("node", "/usr/bin/node", "the node binary to put in the image")
	npm := fs.String("npm", "npm", "the npm to install the CLIs with")
	if code, done := parseFlags(fs, args[1:]); done {
		return code
	}
	if *out == "" || fs.NArg() != 0 {
		fmt.Fprint(stderr, toolsUsage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	img, err := buildTools(ctx, *out, *node, *npm)
	if err != nil {
		fmt.Fprintf(stderr, "inspect tools build: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, img.Ref())
	return 0
}

// buildTools installs the pinned CLIs into a temporary npm prefix and
// builds the image from it.
func buildTools(ctx context.Context, out, node, npm string) (toolsimage.Image, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return toolsimage.Image{}, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return toolsimage.Image{}, err
	}
	// Before npm runs for a minute: the layout needs a directory of its own.
	if ents, err := os.ReadDir(abs); err != nil || len(ents) != 0 {
		return toolsimage.Image{}, fmt.Errorf("%s must be a new or empty directory", abs)
	}
	prefix, err := os.MkdirTemp(filepath.Dir(abs), ".inspect-tools-npm-*")
	if err != nil {
		return toolsimage.Image{}, err
	}
	defer os.RemoveAll(prefix) // best effort: a temp dir beside the output
	pkgs := supervisor.ToolsPackages()
	if err := toolsimage.Install(ctx, npm, prefix, pkgs); err != nil {
		return toolsimage.Image{}, err
	}
	return toolsimage.Build(ctx, toolsimage.Inputs{Node: node, Prefix: prefix, Packages: pkgs}, abs)
}
