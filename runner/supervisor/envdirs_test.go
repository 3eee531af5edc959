package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// A repo whose env names directories outside /workspace and /tmp, with no
// snapshot section: each is a writable directory for the whole session,
// while the sandbox's root stays read-only around it. (Before,
// GOCACHE=/cache/go/build failed with "mkdir /cache: read-only file
// system".) The agent and verify each start from what setup left there,
// and verify never sees what the agent wrote (decision 0057).
func TestEnvPathsAreWritableDirectoriesForTheWholeSession(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-env", "sess-env-a1", sha,
		[]string{"sh", "-c", `cat "$GOCACHE/from-setup" "$PIP_CACHE_DIR/from-setup" > seen.txt && echo agent > "$GOCACHE/from-agent"`},
		command("sees setup's, not the agent's", time.Minute, "sh", "-c", `cat "$GOCACHE/from-setup" "$GOPATH/pkg/from-setup" && test ! -e "$GOCACHE/from-agent"`),
		command("root still read-only", time.Minute, "sh", "-c", `! touch /cache/stray 2>/dev/null`),
	)
	spec.Env = map[string]string{
		"GOCACHE":       "/cache/go/build",
		"PIP_CACHE_DIR": "/var/cache/pip",
		"GOPATH":        "/cache/gopath", // and one inside it needs nothing of its own
		"GOMODCACHE":    "/cache/gopath/pkg/mod",
		"GOFLAGS":       "-trimpath",
	}
	spec.Setup = []contract.Command{command("fill", time.Minute, "sh", "-c",
		`echo setup > "$GOCACHE/from-setup" && echo pip > "$PIP_CACHE_DIR/from-setup" && mkdir -p "$GOMODCACHE" && echo gopath > "$GOPATH/pkg/from-setup"`)}
	h := newHarness(t, ch, spec)
	rep := h.run(t, context.Background())
	u := h.result(t, rep)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	var names []string
	for _, c := range ev.Commands {
		names = append(names, string(c.Phase)+":"+c.Name)
	}
	if want := []string{"setup:fill", "agent:agent", "verify:sees setup's, not the agent's", "verify:root still read-only"}; !slices.Equal(names, want) {
		t.Fatalf("commands %v, want %v", names, want)
	}
	if got := seenFile(t, u); got != "setup\npip\n" {
		t.Errorf("the agent saw %q of setup's files", got)
	}
	if got := ev.Commands[2].OutputTail; got != "setup\ngopath\n" {
		t.Errorf("verify saw %q", got)
	}
	// Only the agent's file is a change: the directories are outside
	// /workspace.
	if len(u.Manifest.Files) != 1 {
		t.Errorf("manifest %+v", u.Manifest.Files)
	}
	// On the host: one directory each for /cache/go/build, /cache/gopath
	// and /var/cache/pip (sorted), the sandbox uid's. As root, each is
	// frozen as setup left it, under an overlay per phase, and the agent's
	// write is in its view's upper directory; otherwise the agent keeps
	// the directory and verify got a copy of what setup left.
	setupDir, agentWrite := "env-%d", filepath.Join("overlay", "agent-0", "upper", "from-agent")
	if os.Geteuid() != 0 {
		setupDir, agentWrite = "verify-%d", filepath.Join("caches", "env-0", "from-agent")
	}
	for i, want := range []string{"from-setup", "pkg", "from-setup"} {
		dir := filepath.Join(rep.AttemptDir, "caches", fmt.Sprintf(setupDir, i))
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		slices.Sort(got)
		if joined := strings.Join(got, " "); joined != want {
			t.Errorf("%s holds %q, want %q", dir, joined, want)
		}
		dir = filepath.Join(rep.AttemptDir, "caches", fmt.Sprintf("env-%d", i))
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != h.wantUID() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: uid %d mode %v, want uid %d and 0700", dir, st.Uid, fi.Mode().Perm(), h.wantUID())
		}
	}
	if b, err := os.ReadFile(filepath.Join(rep.AttemptDir, agentWrite)); err != nil || string(b) != "agent\n" {
		t.Errorf("the agent's view of /cache/go/build holds from-agent %q (%v), want its write", b, err)
	}
	if _, err := os.Stat(filepath.Join(rep.AttemptDir, "caches", "env-3")); !os.IsNotExist(err) {
		t.Errorf("a directory was made for a path inside another: %v", err)
	}
}
