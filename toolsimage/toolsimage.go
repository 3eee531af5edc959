// Package toolsimage is the agents' tools image (decision 0069): the
// pinned agent CLIs (Codex CLI, OpenCode, Claude Code) with the Node
// runtime, the ELF loader and the shared libraries they need, as one
// self-contained, one-layer OCI image. The supervisor flattens it once per
// host (as it does a base image) and binds it read-only at MountPath in
// every sandbox, whatever the sandbox's root is, so a repository's dev
// image needs nothing of Inspect's.
//
// Everything in it runs through its own loader (lib/LOADER --library-path
// lib), never the root's: the root may have no libc at all (busybox), or
// one older than the binaries need, and a library path in the environment
// would leak into the commands the agent runs with the root's binaries.
// The launchers in bin/ are /bin/sh scripts; every agent needs a shell in
// the root to run its commands anyway.
package toolsimage

import (
	"path"

	"github.com/inspecthq/inspect/contract"
)

// MountPath is where the tools image's root is bound, read-only, in every
// sandbox.
const MountPath = contract.ToolsMountPath

// The CLIs' launchers, by name, under MountPath/bin.
const (
	Node     = "node"
	Codex    = "codex"
	OpenCode = "opencode"
	Claude   = "claude"
)

// Bin is the absolute path, inside the sandbox, of the launcher name.
func Bin(name string) string { return path.Join(MountPath, "bin", name) }
