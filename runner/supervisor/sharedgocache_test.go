package supervisor

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// The repo's or the image's GOCACHE wins over the shared cache; without
// one, every command gets the shared cache, bound at its one place.
func TestSharedGoCacheYieldsToTheEnvsOwn(t *testing.T) {
	was := sharedGoCacheDir()
	UseSharedGoCache("/host/shared")
	t.Cleanup(func() { UseSharedGoCache(was) })
	if sharedGoCacheDir() != "/host/shared" {
		// A build without the inspecttest tag has no shared cache at all.
		if got := withSharedGoCache(map[string]string{"A": "1"}); !maps.Equal(got, map[string]string{"A": "1"}) || sharedGoCacheMounts(nil) != nil {
			t.Fatalf("without the tag: env %v, mounts %v; want nothing shared", got, sharedGoCacheMounts(nil))
		}
		return
	}
	cases := []struct {
		name      string
		env       map[string]string
		wantCache string
		wantMount bool
	}{
		{"no env", nil, SharedGoCacheTarget, true},
		{"env without GOCACHE", map[string]string{"GOFLAGS": "-mod=mod"}, SharedGoCacheTarget, true},
		{"the env's own GOCACHE", map[string]string{"GOCACHE": "/cache/go/build"}, "/cache/go/build", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := maps.Clone(c.env)
			got := withSharedGoCache(c.env)
			if got["GOCACHE"] != c.wantCache {
				t.Errorf("GOCACHE = %q, want %q", got["GOCACHE"], c.wantCache)
			}
			if c.wantMount != strings.Contains(got["GODEBUG"], "goindex=0") {
				t.Errorf("GODEBUG = %q: the module index is off only with the shared cache", got["GODEBUG"])
			}
			if !maps.Equal(c.env, before) {
				t.Errorf("the env given was changed: %v", c.env)
			}
			mounts := sharedGoCacheMounts(c.env)
			want := []sandbox.Mount(nil)
			if c.wantMount {
				want = []sandbox.Mount{{Source: "/host/shared", Target: SharedGoCacheTarget}}
			}
			if len(mounts) != len(want) || (len(want) == 1 && mounts[0] != want[0]) {
				t.Errorf("mounts = %v, want %v", mounts, want)
			}
		})
	}
}

// A GODEBUG of the env's own keeps its settings beside goindex=0.
func TestWithoutModuleIndexKeepsTheEnvsSettings(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "goindex=0",
		"http2client=0":            "http2client=0,goindex=0",
		"goindex=1, x509sha1=1 ,":  "x509sha1=1,goindex=0",
		"http2client=0,goindex=0,": "http2client=0,goindex=0",
	} {
		if got := withoutModuleIndex(in); got != want {
			t.Errorf("withoutModuleIndex(%q) = %q, want %q", in, got, want)
		}
	}
}

// Two sessions whose module caches sit at one path hold one module
// path@version with different files (two tests' stand-ins can serve
// that) and share a build cache: the second builds its own files. With
// the go command's module index on, the second reads the first's index
// (no imports) and fails to compile its alpha, which imports strings.
func TestASharedBuildCacheNeverMixesTwoModulesAtOnePath(t *testing.T) {
	alpha := func(src string) []fakegoproxy.Module {
		return []fakegoproxy.Module{{Path: "fake.test/alpha", Version: "v1.0.0", Files: map[string]string{
			"go.mod": fakegoproxy.GoMod("fake.test/alpha"), "alpha.go": src}}}
	}
	first := fakegoproxy.New(t, fakegoproxy.Options{Modules: alpha("package alpha\n\n// N is a number.\nfunc N() int { return 1 }\n")})
	second := fakegoproxy.New(t, fakegoproxy.Options{Modules: alpha("package alpha\n\nimport \"strings\"\n\n// N is a number.\nfunc N() int { return len(strings.Repeat(\"a\", 2)) }\n")})
	root := t.TempDir()
	// The host's own build cache is warm with the standard library; the
	// index entries this test leaves there name a directory of its own.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	godebug := withoutModuleIndex("")
	build := func(p *fakegoproxy.Proxy) (string, error) {
		app := t.TempDir()
		for name, content := range map[string]string{
			"go.mod": "module consumer.test/app\n\ngo 1.21\n\nrequire fake.test/alpha v1.0.0\n",
			"app.go": "package app\n\nimport \"fake.test/alpha\"\n\n// M is a number.\nfunc M() int { return alpha.N() }\n",
		} {
			if err := os.WriteFile(filepath.Join(app, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		modcache := filepath.Join(root, "mod") // one path for both, as in every sandbox
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = append(os.Environ(), "GOMODCACHE="+modcache, "GOFLAGS=-modcacherw")
		if out, err := clean.CombinedOutput(); err != nil {
			t.Fatalf("go clean -modcache: %v\n%s", err, out)
		}
		cmd := exec.Command("go", "build", "./...")
		cmd.Dir = app
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "GOENV=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off", "CGO_ENABLED=0",
			"GOFLAGS=-mod=mod -modcacherw", "GOPROXY=" + p.URL(), "GOSUMDB=off", "GOMODCACHE=" + modcache,
			"GOCACHE=" + strings.TrimSpace(string(gocache)), "GODEBUG=" + godebug}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := build(first); err != nil {
		t.Fatalf("the first build: %v\n%s", err, out)
	}
	if out, err := build(second); err != nil {
		t.Fatalf("the second build, from the same module cache path and build cache: %v\n%s", err, out)
	}
}
