package supervisor

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/runner/sandbox"
)

// maxImageAccountsFile caps how much of an image's /etc/passwd or
// /etc/group is read: a real one is a few KB.
const maxImageAccountsFile = 1 << 20

// sandboxAccountName names the sandbox uid when the image has no entry
// for it.
const sandboxAccountName = "inspect"

// identityMounts writes, under dir, an /etc/passwd and an /etc/group that
// name the sandbox's uid and gid (with HOME /tmp, which every command has
// fresh and writable), from the image root's own files, and returns the
// read-only binds that put them over the image's. initdb, ssh, npm and
// whoami look the running user up and fail without an entry. The image's
// entries for other ids are kept; one for the same id is replaced (its
// name kept), so the lookup gives one answer.
func identityMounts(dir, rootFS string, uid, gid uint32) ([]sandbox.Mount, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The attempt's directory is only traversable: the files must be
	// readable by the sandbox's uid through it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	var mounts []sandbox.Mount
	for _, f := range []struct {
		name  string
		id    uint32
		entry func(name string) string
	}{
		{"passwd", uid, func(n string) string { return fmt.Sprintf("%s:x:%d:%d:Inspect sandbox:/tmp:/bin/sh", n, uid, gid) }},
		{"group", gid, func(n string) string { return fmt.Sprintf("%s:x:%d:", n, gid) }},
	} {
		image, err := readImageEtc(rootFS, f.name)
		if err != nil {
			return nil, err
		}
		out := accountsFile(image, f.id, f.entry)
		host := filepath.Join(dir, f.name)
		if err := os.WriteFile(host, out, 0o644); err != nil {
			return nil, err
		}
		mounts = append(mounts, sandbox.Mount{Source: host, Target: "/etc/" + f.name, ReadOnly: true, File: true})
	}
	return mounts, nil
}

// readImageEtc reads /etc/<name> of the image root, never following a
// link out of it; a missing file reads as empty.
func readImageEtc(rootFS, name string) ([]byte, error) {
	root, err := os.OpenRoot(rootFS)
	if err != nil {
		return nil, err
	}
	// Read-only.
	defer func() { _ = root.Close() }()
	f, err := root.Open("etc/" + name)
	if err != nil {
		// Missing, or a link leading out of the image: there is nothing
		// of the image's to keep, and the session's file replaces it.
		return nil, nil
	}
	// Read-only.
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxImageAccountsFile))
	if err != nil {
		return nil, fmt.Errorf("reading the image's /etc/%s: %w", name, err)
	}
	return b, nil
}

// accountsFile is an /etc/passwd or /etc/group (name:x:id:...) with the
// entries for id, and any other of the name chosen for it, replaced by
// entry(name): the image's name for id when it has one.
func accountsFile(image []byte, id uint32, entry func(name string) string) []byte {
	var lines []string
	names := map[string]bool{}
	chosen := ""
	sc := bufio.NewScanner(bytes.NewReader(image))
	sc.Buffer(make([]byte, 0, 4096), maxImageAccountsFile)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Split(line, ":")
		if len(fields) >= 3 {
			if n, err := strconv.ParseUint(fields[2], 10, 32); err == nil && uint32(n) == id {
				if chosen == "" {
					chosen = fields[0]
				}
				continue
			}
			names[fields[0]] = true
		}
		lines = append(lines, line)
	}
	if chosen == "" {
		chosen = sandboxAccountName
	}
	if names[chosen] {
		// The image gives the name to another id: keep its entry out, so
		// a lookup by name finds the sandbox's.
		kept := lines[:0]
		for _, l := range lines {
			if n, _, _ := strings.Cut(l, ":"); n != chosen {
				kept = append(kept, l)
			}
		}
		lines = kept
	}
	lines = append(lines, entry(chosen))
	return []byte(strings.Join(lines, "\n") + "\n")
}

// checkSandboxIDs refuses, for a root supervisor, nobody's uid or gid for
// the sandbox: host daemons run as nobody, and one of them could read a
// workspace, plant a file in it, or connect to the egress socket. Any
// other id is the operator's to dedicate (an account named for it in
// /etc/passwd is fine, a daemon's is not). An unprivileged supervisor runs
// the sandbox as itself.
func checkSandboxIDs(uid, gid uint32) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if uid == nobodyID || gid == nobodyID {
		return fmt.Errorf("supervisor: the sandbox may not run as nobody (%d): host daemons share it; use a dedicated uid and gid (default %d)", nobodyID, DefaultSandboxID)
	}
	return nil
}

// identityRoot is the root whose /etc/passwd and /etc/group the sandbox's
// own are made from (identityMounts), or "" when the sandbox can use the
// host's as they are: the image root's, or the host's when the sandbox
// runs on the host toolchain as an id the host's files do not name (the
// dedicated default, DefaultSandboxID, has no host account).
func identityRoot(rootFS string, uid uint32) string {
	if rootFS != "" {
		return rootFS
	}
	if b, err := os.ReadFile("/etc/passwd"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Split(line, ":"); len(f) >= 3 && f[2] == strconv.FormatUint(uint64(uid), 10) {
				return "" // the host names it already
			}
		}
	}
	return "/"
}
