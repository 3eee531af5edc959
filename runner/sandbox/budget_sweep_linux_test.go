package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// Budgets and command cgroups must not leak (decision 0058): Close waits
// briefly for a process still leaving, and SweepBudgets removes what a
// crash left, never a live session's budget. These run on the host's real
// cgroup hierarchy, whose rmdir semantics (EBUSY while a process is in a
// cgroup; control files that do not count) a plain directory would not
// have.

// placeIn puts pid into each of dirs' cgroups.
func placeIn(t *testing.T, pid int, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// A process that is still in the budget when Close begins (it ends a
// moment later, as a sandbox's last processes do while the kernel takes
// them down) no longer leaves the budget's cgroup behind: before, Close
// tried once, failed with EBUSY and only logged it.
func TestBudgetCloseWaitsForItsLastProcessToLeave(t *testing.T) {
	if hostCgroupMode() == cgroupNone {
		t.Fatalf("this host gives the tests no cgroup (run them as root on a host with cgroup v1 memory and pids, or v2)")
	}
	b, err := NewBudget(contract.SandboxLimits{SessionMemoryBytes: 256 << 20, SessionPids: 64})
	if err != nil {
		t.Fatal(err)
	}
	// The process's own sleep is its life, not the test's synchronisation:
	// Close begins while it is certainly still in the cgroup.
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	placeIn(t, cmd.Process.Pid, values(b.dirs)...)
	closeErr := b.Close()
	if err := <-exited; err != nil {
		t.Errorf("the process: %v", err)
	}
	if closeErr != nil {
		t.Fatalf("Close: %v", closeErr)
	}
	for c, dir := range b.dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the session's %s cgroup %s is still there (%v)", c, dir, err)
		}
	}
}

// SweepBudgets removes a budget a crashed supervisor left (with the
// command cgroup it held), and leaves alone: a live budget with no
// process in it (between two commands), one a process still runs in, one
// made less than a second before the sweeping process started, and any
// cgroup not named as a budget's.
func TestSweepRemovesOnlyTheBudgetsACrashLeft(t *testing.T) {
	mode := hostCgroupMode()
	if mode == cgroupNone {
		t.Fatalf("this host gives the tests no cgroup (run them as root on a host with cgroup v1 memory and pids, or v2)")
	}
	// A parent of the test's own, so that no other process's budgets are
	// swept.
	suffix, err := randomName()
	if err != nil {
		t.Fatal(err)
	}
	parent := "inspect-sandbox-sweeptest-" + suffix
	var parents []string
	if mode == cgroupV1 {
		parents = []string{filepath.Join(cgroupRoot, "memory", parent), filepath.Join(cgroupRoot, "pids", parent)}
	} else {
		parents = []string{filepath.Join(cgroupRoot, parent)}
	}
	// mk makes the cgroup rel in every hierarchy and returns its
	// directories.
	mk := func(rel string) []string {
		var dirs []string
		for _, p := range parents {
			d := filepath.Join(p, rel)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, d)
		}
		return dirs
	}
	t.Cleanup(func() {
		for _, p := range parents {
			// Deepest first; whatever the sweep left.
			var dirs []string
			_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			}) // a missing parent leaves nothing to remove
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
					t.Errorf("cleaning up %s: %v", dirs[i], err)
				}
			}
		}
	})
	orphan := fmt.Sprintf("session-%d-%s", 999999, "00000000000000aa")
	mk(orphan + "/0123456789abcdef") // the command cgroup the crash left in it
	busy := mk(fmt.Sprintf("session-%d-%s", 999998, "00000000000000bb"))
	legacy := mk("session-00000000000000cc")
	command := mk("00000000000000dd")
	live, err := newBudgetUnder(parent, contract.SandboxLimits{SessionPids: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := live.Close(); err != nil {
			t.Errorf("closing the live budget: %v", err)
		}
	})
	// A process runs in the busy one until the test ends.
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the busy budget's process: %v", err)
		}
	})
	placeIn(t, cmd.Process.Pid, busy...)

	// Everything here was made just now: a sweep by a process that
	// started now removes none of it.
	removed, err := sweepBudgets(parent, time.Now())
	if err != nil || len(removed) != 0 {
		t.Fatalf("a sweep at once removed %v (%v), want nothing", removed, err)
	}
	// A process that started an hour from now finds all of it old: only
	// the orphan goes.
	removed, err = sweepBudgets(parent, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range parents {
		want = append(want, filepath.Join(p, orphan))
	}
	if !slices.Equal(removed, want) {
		t.Errorf("the sweep removed %v, want %v", removed, want)
	}
	for _, p := range parents {
		if _, err := os.Stat(filepath.Join(p, orphan)); !os.IsNotExist(err) {
			t.Errorf("the orphan %s is still there (%v)", filepath.Join(p, orphan), err)
		}
	}
	kept := slices.Concat(busy, legacy, command, values(live.dirs))
	for _, d := range kept {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was swept: %v", d, err)
		}
	}
}

// On cgroup v2 from Linux 6.13 a fork the session's budget refuses is
// counted only where the limit was and above it: the budget's
// pids.events.local and pids.events, never the forking command's own
// files (kernel/cgroup/pids.c, pids_event:
// https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/tree/kernel/cgroup/pids.c).
// These hosts have v1, so the experiment is on directories holding the
// files as such a kernel writes them; before, a command whose fork the
// budget refused was named for no limit at all.
func TestV2NamesAForkTheBudgetRefused(t *testing.T) {
	write := func(dir string, files map[string]string) {
		t.Helper()
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		// cmd and budget are the files after the command ran (the
		// budget had refused 2 forks of others' before it began).
		cmd, budget map[string]string
		want        *LimitExceeded
	}{
		{"the session's limit refused it",
			map[string]string{"pids.events": "max 0\n", "pids.events.local": "max 0\n", "pids.peak": "10\n"},
			map[string]string{"pids.events": "max 3\n", "pids.events.local": "max 3\n"},
			&LimitExceeded{Limit: LimitSessionPids, Value: 128}},
		{"its own limit refused it",
			map[string]string{"pids.events": "max 1\n", "pids.events.local": "max 1\n", "pids.peak": "64\n"},
			map[string]string{"pids.events": "max 3\n", "pids.events.local": "max 2\n"},
			&LimitExceeded{Limit: LimitPids, Value: 64}},
		{"nothing refused it",
			map[string]string{"pids.events": "max 0\n", "pids.events.local": "max 0\n", "pids.peak": "10\n"},
			map[string]string{"pids.events": "max 2\n", "pids.events.local": "max 2\n"},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmdDir, budgetDir := t.TempDir(), t.TempDir()
			write(budgetDir, map[string]string{"pids.events": "max 2\n", "pids.events.local": "max 2\n"})
			l := &limiter{
				mode: cgroupV2,
				lim:  contract.SandboxLimits{Pids: 64},
				dirs: map[string]string{"v2": cmdDir},
				budget: &Budget{mode: cgroupV2, lim: contract.SandboxLimits{SessionPids: 128},
					dirs: map[string]string{"v2": budgetDir}},
			}
			l.budgetRefusedBefore = l.budgetPidsRefused() // as newLimiter does
			write(cmdDir, tc.cmd)
			write(budgetDir, tc.budget)
			got := l.counted()
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("counted %+v, want %+v", got, tc.want)
			}
		})
	}
}
