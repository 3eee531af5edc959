package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// buildSyscallProbe compiles testdata/syscalls (C, static, so it runs in
// any root) into a directory the sandbox uid can reach.
func buildSyscallProbe(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("the seccomp tests build a C probe and need gcc: %v", err)
	}
	bin := filepath.Join(newDir(t), "syscalls")
	out, err := exec.Command(gcc, "-static", "-O2", "-o", bin, "testdata/syscalls/syscalls.c").CombinedOutput()
	if err != nil {
		t.Fatalf("building testdata/syscalls: %v\n%s", err, out)
	}
	return bin
}

// parseCalls reads the probe's "NAME RESULT" lines.
func parseCalls(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, res, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("probe line %q is not NAME RESULT", line)
		}
		got[name] = res
	}
	return got
}

func TestSeccompDeniesEachListedSyscallWithENOSYS(t *testing.T) {
	bin := buildSyscallProbe(t)
	names := append(append([]string(nil), DeniedSyscalls...), "getpid", "i386:keyctl")

	s := newSpec(t, append([]string{"/opt/inspect-probe/syscalls"}, names...)...)
	s.ExtraMounts = append(s.ExtraMounts, Mount{Source: bin, Target: "/opt/inspect-probe/syscalls", ReadOnly: true, File: true})
	res, stdout, stderr := run(t, s)
	if res.ExitCode != 0 {
		t.Fatalf("probe exited %d: %s%s", res.ExitCode, stdout, stderr)
	}
	inside := parseCalls(t, stdout)
	for _, name := range append(append([]string(nil), DeniedSyscalls...), "i386:keyctl") {
		if inside[name] != "ENOSYS" {
			t.Errorf("%s in the sandbox: %q, want ENOSYS", name, inside[name])
		}
	}
	if inside["getpid"] != "ok" {
		t.Errorf("getpid in the sandbox: %q, want ok (the filter must only deny its list)", inside["getpid"])
	}

	// The same calls on the host, as the same unprivileged uid, answer
	// otherwise: the ENOSYS above is the filter's, not the kernel's.
	host := exec.Command(bin, names...)
	uid, gid := sandboxIDs()
	if os.Geteuid() == 0 {
		host.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	}
	hostOut, err := host.Output()
	if err != nil {
		t.Fatalf("probe on the host: %v", err)
	}
	outside := parseCalls(t, string(hostOut))
	for _, name := range []string{"io_uring_setup", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "i386:keyctl"} {
		if outside[name] == "ENOSYS" || outside[name] == "" {
			t.Errorf("%s on the host: %q; the kernel should have it, so that the sandbox's ENOSYS shows the filter", name, outside[name])
		}
	}
}

func TestSeccompProgramIsWellFormed(t *testing.T) {
	prog, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	// struct sock_filter is 8 bytes; the kernel takes at most 4096 of them.
	if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > 4096 {
		t.Fatalf("filter is %d bytes, want a non-empty multiple of 8 of at most 4096 instructions", len(prog))
	}
}
