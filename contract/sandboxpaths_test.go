package contract

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidateCachePath(t *testing.T) {
	for p, want := range map[string]string{
		"/cache/go":                "",
		"/workspace/node_modules":  "",
		"/root/.cache/go-build":    "",
		"/var/cache/pip":           "",
		"/opt/cache":               "",
		"/usrlocal":                "", // only /usr itself and what is inside it
		"cache":                    "absolute, clean",
		"/cache/go/":               "absolute, clean",
		"/cache/../go":             "absolute, clean",
		"/":                        "/ or /workspace itself",
		"/workspace":               "/ or /workspace itself",
		"/usr/local/cache":         "under /usr, the sandbox's toolchain",
		"/bin/x":                   "under /bin",
		"/sbin":                    "under /sbin",
		"/lib/cache":               "under /lib,",
		"/lib32/x":                 "under /lib32",
		"/lib64/x":                 "under /lib64",
		"/libx32/x":                "under /libx32",
		"/etc/npm":                 "under /etc, which the sandbox binds read-only",
		"/proc/self":               "under /proc",
		"/dev/shm/x":               "under /dev",
		"/tmp/cache":               "under /tmp",
		"/sys/x":                   "under /sys",
		"/run/inspect":             "under /run",
		"/cache/.git":              ".git",
		"/workspace/.git/hooks":    ".git",
		"/workspace/.inspect/home": "/workspace/.inspect",
		"/opt/inspect/tools":       "where Inspect mounts the agents' tools",
		"/opt/inspect/tools/bin":   "where Inspect mounts the agents' tools",
		"/opt/inspect":             "where Inspect mounts the agents' tools", // would hold the mount point
		"/opt":                     "where Inspect mounts the agents' tools",
		"/opt/inspect-cache":       "",
	} {
		err := ValidateCachePath(p)
		switch {
		case want == "" && err != nil:
			t.Errorf("ValidateCachePath(%q) = %v, want nil", p, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("ValidateCachePath(%q) = %v, want an error with %q", p, err, want)
		}
	}
}

func TestValidateEnvPath(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        string // "" for no error; otherwise in the error
	}{
		// Paths that become (or need no) writable directories.
		{"GOCACHE", "/cache/go/build", ""},
		{"GOCACHE", "/cache/go/build/", ""}, // cleaned
		{"npm_config_cache", "/root/.npm", ""},
		{"TMPDIR", "/tmp", ""},
		{"GOTMPDIR", "/tmp/go", ""},
		{"OUT", "/workspace/out", ""},
		{"ROOT", "/workspace", ""},
		// Not paths at all.
		{"GOFLAGS", "-trimpath", ""},
		{"GOPRIVATE", "example.com/*", ""},
		{"GOPROXY", "https://proxy.example.com", ""},
		{"LIST", "/usr/a:/usr/b", ""},
		{"CFLAGS", "/usr/include -O2", ""},
		{"PUBLIC_URL", "/", ""},
		{"EMPTY", "", ""},
		// Variables that name the toolchain are left alone.
		{"PATH", "/usr/local/bin", ""},
		{"GOROOT", "/usr/local/go", ""},
		{"JAVA_HOME", "/usr/lib/jvm/default", ""},
		{"SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt", ""},
		{"CC", "/usr/bin/clang", ""},
		// Paths that cannot be writable directories.
		{"GOCACHE", "/usr/local/cache", `names "/usr/local/cache"`},
		{"GOCACHE", "/usr/local/cache", "under /usr, the sandbox's toolchain"},
		{"GOCACHE", "/usr/local/cache", "such as /cache/gocache"},
		{"GOBIN", "/bin", "under /bin"},
		{"XDG_CONFIG_HOME", "/etc/xdg", "under /etc"},
		{"STATE", "/run/state", "under /run"},
		{"SOCK", "/dev/shm/x", "under /dev"},
		{"CACHE", "/cache/repo/.git", ".git"},
		{"CACHE", "/usr/../etc/x", `names "/etc/x"`}, // judged cleaned
		{"WORK", "/workspace/.git/cache", ".git"},
		{"AGENT", "/workspace/.inspect/home", "/workspace/.inspect"},
	} {
		err := ValidateEnvPath(tc.name, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ValidateEnvPath(%s=%q) = %v, want nil", tc.name, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ValidateEnvPath(%s=%q) = %v, want an error with %q", tc.name, tc.value, err, tc.want)
		}
	}
}

func TestEnvCacheDirs(t *testing.T) {
	caches := []Cache{{Path: "/cache/go", Lockfiles: []string{"go.sum"}}, {Path: "/workspace/node_modules", Lockfiles: []string{"package-lock.json"}}}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		caches []Cache
		want   []string
	}{
		{"no snapshot section", map[string]string{"GOCACHE": "/cache/go/build"}, nil, []string{"/cache/go/build"}},
		{"the cache itself", map[string]string{"GOMODCACHE": "/cache/go"}, caches, nil},
		{"inside a cache", map[string]string{"GOCACHE": "/cache/go/build"}, caches, nil},
		{"beside a cache", map[string]string{"GOCACHE": "/cache/gobuild", "PIP_CACHE_DIR": "/var/cache/pip"}, caches, []string{"/cache/gobuild", "/var/cache/pip"}},
		{"holding a cache", map[string]string{"XDG_CACHE_HOME": "/cache"}, caches, []string{"/cache"}},
		{"nested env paths: the outermost", map[string]string{"GOPATH": "/go", "GOCACHE": "/go/cache", "GOMODCACHE": "/go/pkg/mod", "OTHER": "/go-other"}, nil, []string{"/go", "/go-other"}},
		{"the same path twice", map[string]string{"A": "/cache/a", "B": "/cache/a/"}, nil, []string{"/cache/a"}},
		{"workspace and tmp need nothing", map[string]string{"OUT": "/workspace/out", "TMPDIR": "/tmp/x", "ROOT": "/workspace"}, nil, nil},
		{"not paths, toolchain names, refused paths", map[string]string{"GOFLAGS": "-trimpath", "PATH": "/opt/bin", "BAD": "/usr/cache", "GIT": "/cache/.git"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EnvCacheDirs(tc.env, tc.caches); !slices.Equal(got, tc.want) {
				t.Errorf("EnvCacheDirs(%v) = %q, want %q", tc.env, got, tc.want)
			}
		})
	}
}

func TestReadOnlyEnvNamesAreSortedAndCopied(t *testing.T) {
	names := ReadOnlyEnvNames()
	if !slices.IsSorted(names) || !slices.Contains(names, "PATH") || !slices.Contains(names, "GOROOT") {
		t.Errorf("ReadOnlyEnvNames() = %v", names)
	}
	names[0] = "GOCACHE"
	if slices.Contains(ReadOnlyEnvNames(), "GOCACHE") {
		t.Error("the list can be changed through its copy")
	}
}

func TestAbsSnapshotStore(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"oci:snaps":                "oci:" + filepath.Join(wd, "snaps"),
		"oci:/var/snaps":           "oci:/var/snaps",
		"oci:":                     "oci:",
		"registry.example/inspect": "registry.example/inspect",
	} {
		if got, err := AbsSnapshotStore(in); err != nil || got != want {
			t.Errorf("AbsSnapshotStore(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
