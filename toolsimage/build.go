package toolsimage

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// ProjectName is the npm project Install makes, as its package.json and
// lockfiles name it.
const ProjectName = "inspect-tools"

// Package is one npm package at a pinned version.
type Package struct{ Name, Version string }

// Install installs pkgs, exactly at their versions, into dir (an npm
// prefix: dir/node_modules, with dir/package.json and the lockfile) from
// the npm registry npm is configured for. Install scripts are not run:
// the image points at each CLI's native binary in its platform package
// itself, so no package's code runs on the building host. Optional
// dependencies (the platform packages) are installed, as npm does by
// default.
func Install(ctx context.Context, npm, dir string, pkgs []Package) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A name of its own: without one npm names the project, in both
	// lockfiles, after dir, a temporary directory, and the same packages
	// would give another image each build.
	manifest := []byte(`{"name":"` + ProjectName + `","version":"0.0.0","private":true}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, "package.json"), manifest, 0o644); err != nil {
		return err
	}
	args := []string{"install", "--prefix", dir, "--ignore-scripts", "--no-fund", "--no-audit",
		"--save-exact", "--include=optional", "--loglevel=error"}
	for _, p := range pkgs {
		args = append(args, p.Name+"@"+p.Version)
	}
	cmd := exec.CommandContext(ctx, npm, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm install: %w\n%s", err, tail(out.Bytes(), 4<<10))
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Inputs are what one tools image is built from.
type Inputs struct {
	// Node is the host's node binary (/usr/bin/node).
	Node string
	// Prefix is an npm prefix Install filled: Prefix/node_modules holds
	// the CLIs and their platform packages.
	Prefix string
	// Packages are the pinned CLIs (Prefix's), recorded in the image's
	// labels.
	Packages []Package
	// LibDirs are where the shared libraries an ELF file needs are looked
	// for, in order; nil for DefaultLibDirs.
	LibDirs []string
	// Arch is the GOARCH the image is for; "" for runtime.GOARCH.
	Arch string
}

// DefaultLibDirs are the host's library directories, as Debian's loader
// searches them.
var DefaultLibDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// entry is one file of the image's root.
type entry struct {
	name  string // slash separated, relative: bin/node
	mode  fs.FileMode
	src   string // a host file to copy, or
	data  []byte // the content, or
	link  string // a symlink's target
	isDir bool
	size  int64
}

// tarName is the entry's name in the layer: a directory's ends in "/".
func (e entry) tarName() string {
	if e.isDir {
		return e.name + "/"
	}
	return e.name
}

// npmArch is the npm name of GOARCH, for the platform packages' names.
func npmArch(goarch string) (string, error) {
	switch goarch {
	case "amd64":
		return "x64", nil
	case "arm64":
		return "arm64", nil
	}
	return "", fmt.Errorf("no tools image for %s: the CLIs ship linux x64 and arm64 binaries", goarch)
}

// cliPaths are the files the launchers run, relative to the image's root.
type cliPaths struct{ codexJS, opencode, claude string }

// findCLIs finds, under modules (node_modules), the Codex CLI's script and
// the native binaries of OpenCode and Claude Code in their platform
// packages. OpenCode's baseline build is chosen: it runs on every x86-64
// CPU, and the image is built on one host and run on others.
func findCLIs(modules, arch string) (cliPaths, error) {
	opencodePkg := "opencode-linux-" + arch
	if arch == "x64" {
		opencodePkg += "-baseline"
	}
	want := []struct {
		what string
		rels []string
	}{
		{"Codex CLI", []string{"@openai/codex/bin/codex.js"}},
		{"OpenCode", []string{opencodePkg + "/bin/opencode", "opencode-ai/node_modules/" + opencodePkg + "/bin/opencode"}},
		{"Claude Code", []string{"@anthropic-ai/claude-code-linux-" + arch + "/claude", "@anthropic-ai/claude-code/node_modules/@anthropic-ai/claude-code-linux-" + arch + "/claude"}},
	}
	var found []string
	for _, w := range want {
		hit := ""
		for _, rel := range w.rels {
			if fi, err := os.Stat(filepath.Join(modules, filepath.FromSlash(rel))); err == nil && fi.Mode().IsRegular() {
				hit = "node_modules/" + rel
				break
			}
		}
		if hit == "" {
			return cliPaths{}, fmt.Errorf("%s is not installed under %s (looked for %s): was it installed with its optional dependencies?", w.what, modules, strings.Join(w.rels, ", "))
		}
		found = append(found, hit)
	}
	return cliPaths{codexJS: found[0], opencode: found[1], claude: found[2]}, nil
}

// gather lists the image's root: the node_modules tree, node, the
// libraries every dynamically linked executable in them needs (with the
// loader), and the launchers.
func gather(in Inputs) ([]entry, map[string]string, error) {
	goarch := in.Arch
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	arch, err := npmArch(goarch)
	if err != nil {
		return nil, nil, err
	}
	libDirs := in.LibDirs
	if libDirs == nil {
		libDirs = DefaultLibDirs
	}
	modules := filepath.Join(in.Prefix, "node_modules")
	clis, err := findCLIs(modules, arch)
	if err != nil {
		return nil, nil, err
	}
	var out []entry
	dirs := map[string]bool{}
	addDir := func(name string) {
		for d := name; d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			out = append(out, entry{name: d, isDir: true, mode: 0o755})
		}
	}
	addFile := func(name, src string, fi fs.FileInfo) {
		addDir(path.Dir(name))
		mode := fs.FileMode(0o644)
		if fi.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		out = append(out, entry{name: name, src: src, mode: mode, size: fi.Size()})
	}

	// node_modules, as npm left it, without its .bin links (bin/ holds
	// the launchers) and with no symlink leading out of it.
	var executables []string // ELF files that may need libraries
	err = filepath.WalkDir(modules, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(in.Prefix, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".bin" {
				return fs.SkipDir
			}
			addDir(name)
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if path.IsAbs(target) || !strings.HasPrefix(path.Clean(path.Join(path.Dir(name), target)), "node_modules/") {
				return fmt.Errorf("%s is a symlink out of node_modules (%s)", p, target)
			}
			addDir(path.Dir(name))
			out = append(out, entry{name: name, link: target, mode: 0o777})
		case fi.Mode().IsRegular():
			addFile(name, p, fi)
			if fi.Mode().Perm()&0o111 != 0 {
				executables = append(executables, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", modules, err)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		p := filepath.Join(in.Prefix, f)
		if fi, err := os.Stat(p); err == nil {
			addFile(f, p, fi)
		}
	}

	// node itself, by its real path (Debian's /usr/bin/node may be a link).
	node, err := filepath.EvalSymlinks(in.Node)
	if err != nil {
		return nil, nil, fmt.Errorf("node: %w", err)
	}
	nfi, err := os.Stat(node)
	if err != nil {
		return nil, nil, fmt.Errorf("node: %w", err)
	}
	addFile("libexec/node", node, nfi)

	// Every library an executable needs (recursively), from the host's
	// directories, and the loader: node's, which the launchers run. The
	// CLIs' own binaries must resolve; another executable in a package
	// (codex's voice host, with its own lib/ beside it) may need what it
	// carries itself, so what the host lacks is skipped for those.
	loader, err := interpreter(node)
	if err != nil || loader == "" {
		return nil, nil, fmt.Errorf("node %s: no ELF interpreter: %v", node, err)
	}
	libs := map[string]string{} // soname -> host path
	required := map[string]bool{node: true,
		filepath.Join(in.Prefix, filepath.FromSlash(clis.opencode)): true,
		filepath.Join(in.Prefix, filepath.FromSlash(clis.claude)):   true}
	for _, exe := range append([]string{node}, executables...) {
		interp, err := interpreter(exe)
		if err != nil || interp == "" {
			continue // not a dynamically linked ELF executable
		}
		if path.Base(interp) != path.Base(loader) {
			if required[exe] {
				return nil, nil, fmt.Errorf("%s wants the loader %s, node %s", exe, interp, loader)
			}
			continue
		}
		found := maps.Clone(libs)
		if err := neededLibs(exe, libDirs, found); err != nil {
			if required[exe] {
				return nil, nil, err
			}
			continue // none of its libraries, then
		}
		libs = found
	}
	libs[path.Base(loader)] = loader
	for soname, p := range libs {
		fi, err := os.Stat(p) // the library's content, through its links
		if err != nil {
			return nil, nil, err
		}
		addFile("lib/"+soname, p, fi)
	}

	// The launchers: each runs its program through the image's loader
	// with the image's libraries, so the root's libc (if any) is never
	// involved, and nothing is left in the environment for the commands
	// the agent runs.
	run := path.Join(MountPath, "lib", path.Base(loader)) + " --library-path " + path.Join(MountPath, "lib")
	abs := func(rel string) string { return path.Join(MountPath, rel) }
	nodeRun := run + " " + abs("libexec/node")
	launchers := map[string]string{
		Node:     nodeRun + ` "$@"`,
		Codex:    nodeRun + " " + abs(clis.codexJS) + ` "$@"`,
		OpenCode: run + " " + abs(clis.opencode) + ` "$@"`,
		Claude:   run + " " + abs(clis.claude) + ` "$@"`,
	}
	addDir("bin")
	for name, cmd := range launchers {
		data := []byte("#!/bin/sh\n# The Inspect tools image's launcher (decision 0069): through the image's own loader.\nexec " + cmd + "\n")
		out = append(out, entry{name: "bin/" + name, data: data, mode: 0o755, size: int64(len(data))})
	}

	// By the names the tar holds (a directory's with its slash): parents
	// come before their entries, and the order is the bytes' order.
	sort.Slice(out, func(i, j int) bool { return out[i].tarName() < out[j].tarName() })
	for i := 1; i < len(out); i++ {
		if out[i].name == out[i-1].name {
			return nil, nil, fmt.Errorf("the image would hold %s twice", out[i].name)
		}
	}
	labels := map[string]string{"org.opencontainers.image.title": "Inspect agent tools"}
	for _, p := range in.Packages {
		labels["io.inspect.tools.npm."+p.Name] = p.Version
	}
	return out, labels, nil
}

// interpreter is the ELF file's PT_INTERP, "" when it has none (static,
// or a shared library); an error when it is not an ELF file.
func interpreter(p string) (string, error) {
	f, err := elf.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return "", err
			}
			return string(bytes.TrimRight(b, "\x00")), nil
		}
	}
	return "", nil
}

// neededLibs adds, to libs, every library exe needs (DT_NEEDED,
// recursively) as found in dirs.
func neededLibs(exe string, dirs []string, libs map[string]string) error {
	queue := []string{exe}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		f, err := elf.Open(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		needed, err := f.ImportedLibraries()
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, n := range needed {
			if _, ok := libs[n]; ok {
				continue
			}
			found := ""
			for _, d := range dirs {
				if _, err := os.Stat(filepath.Join(d, n)); err == nil {
					found = filepath.Join(d, n)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, which is in none of %s", exe, n, strings.Join(dirs, ", "))
			}
			libs[n] = found
			queue = append(queue, found)
		}
	}
	return nil
}
