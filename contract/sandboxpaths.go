package contract

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
)

// Which paths of the sandbox may be writable directories of a repo's own:
// its snapshot caches, and the directories its env names (decision 0020).
// The rule is here once; the repo config, Spec.Validate, the supervisor and
// the snapshot builder all use it.

// systemDirs are the sandbox's own top-level directories, whatever its root
// (the host's toolchain or an image's): no repo directory may be, or lie
// under, one of them.
var systemDirs = []struct{ dir, why string }{
	{"/usr", "the sandbox's toolchain, which is read-only"},
	{"/bin", "the sandbox's toolchain, which is read-only"},
	{"/sbin", "the sandbox's toolchain, which is read-only"},
	{"/lib", "the sandbox's toolchain, which is read-only"},
	{"/lib32", "the sandbox's toolchain, which is read-only"},
	{"/lib64", "the sandbox's toolchain, which is read-only"},
	{"/libx32", "the sandbox's toolchain, which is read-only"},
	{"/etc", "which the sandbox binds read-only, file by file"},
	{"/proc", "which the sandbox makes fresh"},
	{"/dev", "which the sandbox makes fresh"},
	{"/tmp", "which the sandbox makes fresh"},
	{"/sys", "which the sandbox never has"},
	{"/run", "where Inspect puts the sandbox's egress socket"},
}

// ToolsMountPath is where the agents' tools image is bound, read-only, in
// every sandbox (decision 0069). No repo directory may be it, lie under it
// or hold it: the mount would hide the one or write its mount point into
// the other.
const ToolsMountPath = "/opt/inspect/tools"

// ValidateCachePath checks a cache's path: absolute, clean, not the root,
// not /workspace itself (a cache inside it, like node_modules, is fine),
// not under one of the sandbox's system directories (/usr, /etc, /proc,
// /tmp, /run, ...), not inside a .git and not under /workspace/.inspect.
func ValidateCachePath(p string) error {
	switch {
	case !path.IsAbs(p) || path.Clean(p) != p:
		return errors.New("must be an absolute, clean path")
	case p == "/" || p == "/workspace":
		return errors.New("must not be / or /workspace itself")
	case slices.Contains(strings.Split(p, "/"), ".git"):
		// Setup (repo code) fills caches; a .git it wrote would be read by
		// the supervisor's own git.
		return errors.New("must not be or lie inside a .git directory")
	case within(p, "/workspace/.inspect"):
		return errors.New("must not be under /workspace/.inspect, which Inspect reserves")
	case within(p, ToolsMountPath) || within(ToolsMountPath, p):
		return fmt.Errorf("must not be, hold or lie under %s, where Inspect mounts the agents' tools read-only", ToolsMountPath)
	}
	for _, s := range systemDirs {
		if within(p, s.dir) {
			return fmt.Errorf("must not be under %s, %s", s.dir, s.why)
		}
	}
	return nil
}

// readOnlyEnvNames are variables that name part of the toolchain (a
// directory, a search list, a program, a certificate bundle): the sandbox
// provides those read-only, so their values are never made into writable
// directories and may point anywhere.
var readOnlyEnvNames = []string{
	"CC", "CURL_CA_BUNDLE", "CXX", "GIT_SSL_CAINFO", "GOROOT", "JAVA_HOME",
	"MANPATH", "NODE_EXTRA_CA_CERTS", "NODE_PATH", "PATH", "PKG_CONFIG_PATH",
	"PYTHONHOME", "PYTHONPATH", "REQUESTS_CA_BUNDLE", "SHELL", "SSL_CERT_DIR",
	"SSL_CERT_FILE",
}

// ReadOnlyEnvNames lists the variables whose values are never made into
// writable directories, sorted.
func ReadOnlyEnvNames() []string { return slices.Clone(readOnlyEnvNames) }

// envPath says whether an env value names a path that the rule is about,
// and which (cleaned): one absolute path (it starts with '/' and holds no
// ':' list separator and no space), other than / itself, for a variable not
// in readOnlyEnvNames.
func envPath(name, value string) (string, bool) {
	if !strings.HasPrefix(value, "/") || strings.ContainsRune(value, ':') || strings.ContainsFunc(value, unicode.IsSpace) ||
		slices.Contains(readOnlyEnvNames, name) {
		return "", false
	}
	p := path.Clean(value)
	return p, p != "/"
}

// needsDir says whether an env path needs a directory made for it: /tmp is
// fresh in every sandbox, and /workspace is the repository's, where the
// command makes what it needs itself.
func needsDir(p string) bool {
	return !within(p, "/tmp") && !within(p, "/workspace")
}

// ValidateEnvPath checks one variable of a repo's env: when its value names
// a path outside /workspace and /tmp, that path must be able to be a
// writable directory of the session (ValidateCachePath). The error names
// the path and says what to do; nil for any other value.
func ValidateEnvPath(name, value string) error {
	p, ok := envPath(name, value)
	if !ok {
		return nil
	}
	var err error
	switch {
	case needsDir(p):
		err = ValidateCachePath(p)
	case within(p, "/workspace") && p != "/workspace":
		err = ValidateCachePath(p) // only .git and .inspect can fault there
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("names %s, which cannot be the writable directory every session makes for a path outside /workspace and /tmp: it %v; "+
		"choose another, such as /cache/%s, or leave the variable out if it names part of the toolchain",
		safeQuote(p), err, strings.ToLower(name))
}

// EnvCacheDirs are the directories a repo's env names that a session (and a
// snapshot build's setup) must give an empty, writable directory: each
// env path outside /workspace and /tmp (see ValidateEnvPath; invalid ones
// are left out, Validate refuses them), except those a cache already
// covers (the cache's path or one inside it), and only the outermost of
// paths that nest. Sorted. A directory may hold a cache: it is bound
// first, the cache inside it.
func EnvCacheDirs(env map[string]string, caches []Cache) []string {
	var all []string
	for name, v := range env {
		p, ok := envPath(name, v)
		if !ok || !needsDir(p) || ValidateCachePath(p) != nil {
			continue
		}
		if slices.ContainsFunc(caches, func(c Cache) bool { return within(p, c.Path) }) {
			continue
		}
		all = append(all, p)
	}
	slices.Sort(all) // a directory sorts before everything inside it
	var out []string
	for _, p := range all {
		if !slices.ContainsFunc(out, func(o string) bool { return within(p, o) }) {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether p is dir or lies inside it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
