package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// On a host with cgroups for the supervisor (v1 here, as on this project's
// machines), a running command's processes are in a cgroup of its own that
// holds the limits, and the cgroup is gone once the command is.
func TestACommandRunsInACgroupOfItsOwnHoldingItsLimits(t *testing.T) {
	mode := hostCgroupMode()
	if mode == cgroupNone {
		t.Fatalf("this host gives the tests no cgroup (run them as root on a host with cgroup v1 memory and pids, or v2)")
	}
	marker := fmt.Sprintf("inspect-cgroup-marker-%d", time.Now().UnixNano())
	// The shell keeps marker in its argv ($0) and stays (it cannot exec
	// sleep, which is not its last command) from before it says ready.
	s := newSpec(t, "sh", "-c", `echo ready; sleep 300; true`, marker)
	s.Limits = contract.SandboxLimits{MemoryBytes: 96 << 20, Pids: 50, CPUShares: 300}
	out, stop := runKept(t, s)
	line, _ := out.ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("the command said %q (%v)", line, stop())
	}
	// bwrap (outside and as the sandbox's init) and the shell: each is in
	// the command's cgroups, the same ones.
	found := processesWith(marker) // "pid: argv"
	if len(found) < 2 {
		t.Fatalf("processes with the marker: %v (%v)", found, stop())
	}
	var dirs map[string]string
	for _, f := range found {
		pid, _, _ := strings.Cut(f, ":")
		d := cgroupDirsOf(t, pid, mode)
		if dirs == nil {
			dirs = d
		} else if fmt.Sprint(d) != fmt.Sprint(dirs) {
			t.Errorf("%s is in %v, the command's first process in %v", f, d, dirs)
		}
	}
	read := func(ctrl, file string) string {
		b, err := os.ReadFile(filepath.Join(dirs[ctrl], file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
		}
		return strings.TrimSpace(string(b))
	}
	var want map[string][2]string // file → controller, value
	if mode == cgroupV1 {
		want = map[string][2]string{
			"memory.limit_in_bytes": {"memory", "100663296"},
			"pids.max":              {"pids", "50"},
			"cpu.shares":            {"cpu", "300"},
		}
	} else {
		want = map[string][2]string{"memory.max": {"", "100663296"}, "pids.max": {"", "50"}, "cpu.weight": {"", "29"}}
	}
	for file, w := range want {
		if got := read(w[0], file); got != w[1] {
			t.Errorf("%s = %q, want %q", file, got, w[1])
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for ctrl, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the %s cgroup %s is still there after the command (%v)", ctrl, dir, err)
		}
	}
}

// cgroupDirsOf is where pid's cgroups are, by controller ("" for v2).
func cgroupDirsOf(t *testing.T, pid string, mode cgroupMode) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.Contains(parts[2], cgroupParent) {
			continue
		}
		if mode == cgroupV2 && parts[0] == "0" {
			dirs[""] = filepath.Join(cgroupRoot, parts[2])
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" || c == "pids" || c == "cpu" {
				dirs[c] = filepath.Join(cgroupRoot, c, parts[2])
			}
		}
	}
	if mode == cgroupV1 && (dirs["memory"] == "" || dirs["pids"] == "" || dirs["cpu"] == "") {
		t.Fatalf("pid %s is not in the command's memory, pids and cpu cgroups: %s", pid, b)
	}
	return dirs
}
