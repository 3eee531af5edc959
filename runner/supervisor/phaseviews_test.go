package supervisor

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// greetModule is a module served from a GOPROXY directory committed in the
// repository (GOPROXY=file://, https://go.dev/ref/mod#goproxy-protocol):
// its list, .info, .mod and .zip files under proxy/, and the go.sum lines
// that pin it, computed as the go command does (the zip's h1 hash, and the
// go.mod's as a one-file tree named "go.mod").
func greetModule(t *testing.T) (files map[string]string, goSum string) {
	t.Helper()
	const modFile = "module example.com/greet\n\ngo 1.21\n"
	src := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":   modFile,
		"greet.go": "package greet\n\n// Hello is the greeting.\nfunc Hello() string { return \"goodbye\" }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var zipped bytes.Buffer
	mv := module.Version{Path: "example.com/greet", Version: "v1.0.0"}
	if err := modzip.CreateFromDir(&zipped, mv, src); err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(t.TempDir(), "greet.zip")
	if err := os.WriteFile(zipPath, zipped.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	zipSum, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	modSum, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(modFile)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A sanity check that the zip is what the go command reads: one
	// module's files under its path@version.
	zr, err := zip.NewReader(bytes.NewReader(zipped.Bytes()), int64(zipped.Len()))
	if err != nil || len(zr.File) != 2 {
		t.Fatalf("module zip: %v, %d files", err, len(zr.File))
	}
	const dir = "proxy/example.com/greet/@v/"
	return map[string]string{
			dir + "list":        "v1.0.0\n",
			dir + "v1.0.0.info": `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`,
			dir + "v1.0.0.mod":  modFile,
			dir + "v1.0.0.zip":  zipped.String(),
		}, "example.com/greet v1.0.0 " + zipSum + "\n" +
			"example.com/greet v1.0.0/go.mod " + modSum + "\n"
}

// The class closed: a verify command reading what the agent wrote to a
// writable directory outside /workspace, in a session without services
// (decision 0057). Setup downloads a dependency into the module cache; the
// agent rewrites the dependency's source there (the go command never
// checks an extracted module against go.sum again) and changes one README
// line. The committed change leaves the dependency as go.sum pins it, so
// verify must fail; before, the cache was one directory for every phase
// and verify passed. Two ways to the same directory: a snapshot's
// declared cache holding GOMODCACHE, and the env's own directory (no
// snapshot section), which the review did not try.
func TestTheAgentsEditsToACacheDoNotReachVerify(t *testing.T) {
	proxy, goSum := greetModule(t)
	download := command("download", time.Minute, "go", "mod", "download")
	for _, tc := range []struct {
		name     string
		modCache string
		snapshot *contract.Snapshot
	}{
		{"a declared cache", "/cache/go/pkg/mod", &contract.Snapshot{
			Caches: []contract.Cache{{Path: "/cache/go", Lockfiles: []string{"go.sum"}}},
			Setup:  []contract.Command{download},
		}},
		{"the env's directory", "/cache/gomod", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := channeltest.New(t)
			files := map[string]string{
				"go.mod":    "module example.com/app\n\ngo 1.21\n\nrequire example.com/greet v1.0.0\n",
				"go.sum":    goSum,
				"app.go":    "package app\n",
				"README.md": "app\n",
				"app_test.go": `package app

import (
	"testing"

	"example.com/greet"
)

func TestGreeting(t *testing.T) {
	if got := greet.Hello(); got != "hello" {
		t.Errorf("greet.Hello() = %q, want hello", got)
	}
}
`,
				// The agent: the dependency's source in the module cache
				// (read-only as the go command leaves it, but the sandbox
				// uid's), then one README line for the change. seen.txt is
				// what its own view then holds.
				"agent/lie.sh": `#!/bin/sh
set -e
m="$GOMODCACHE/example.com/greet@v1.0.0"
chmod -R u+w "$m"
sed -i 's/goodbye/hello/' "$m/greet.go"
grep -h return "$m/greet.go" > seen.txt
echo 'a line' >> README.md
echo '// A test file the change touches, for the reproduce run.' >> app_test.go
`,
			}
			for p, c := range proxy {
				files[p] = c
			}
			sha := ch.Seed(files)
			spec := ch.Spec("sess-cachelie", "sess-cachelie-a1", sha, []string{"sh", "agent/lie.sh"},
				command("test", 5*time.Minute, "go", "test", "-count=1", "./..."))
			spec.Env = map[string]string{
				"GOMODCACHE":  tc.modCache,
				"GOPROXY":     "file:///workspace/proxy",
				"GOSUMDB":     "off",
				"GOTOOLCHAIN": "local",
			}
			if tc.snapshot != nil {
				spec.Snapshot = tc.snapshot
			} else {
				spec.Setup = []contract.Command{download}
			}
			spec.Reproduce = true // its run (reproduce.go) has views of its own
			h := newHarness(t, ch, spec)
			u := h.result(t, h.run(t, context.Background()))
			ev := u.Evidence
			if got := seenFile(t, u); !strings.Contains(got, `"hello"`) {
				t.Fatalf("the agent's own view of the module cache holds %q: its edit did not take", got)
			}
			if ev.Outcome != contract.OutcomeVerifyFailed {
				t.Fatalf("outcome %s (%s), want verify_failed: the committed change leaves the dependency as go.sum pins it\ncommands %+v", ev.Outcome, ev.Reason, ev.Commands)
			}
			last := ev.Commands[len(ev.Commands)-1]
			if last.Phase != contract.PhaseVerify || !strings.Contains(last.OutputTail, `greet.Hello() = "goodbye"`) {
				t.Errorf("verify's test: %+v, want it to read the dependency setup downloaded", last)
			}
			// The reproduce run, on the pinned commit with the change's
			// test file, reads what setup downloaded too.
			if r := ev.Reproduce; r == nil || len(r.Commands) != 1 || !strings.Contains(r.Commands[0].OutputTail, `greet.Hello() = "goodbye"`) {
				t.Errorf("the reproduce run: %+v, want its test to read the dependency setup downloaded", r)
			}
		})
	}
}
