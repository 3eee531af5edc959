package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// DeniedSyscalls are the system calls every sandboxed command is refused
// (decision 0030): kernel attack surface no build, test or agent needs.
// Each answers ENOSYS, as on a kernel built without it, never a kill:
// libuv probes io_uring and glibc and Go probe newer calls, then fall back.
var DeniedSyscalls = []string{
	// io_uring: a large, often-exploited surface that bypasses seccomp for
	// the operations it queues.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// The kernel keyrings are not namespaced.
	"keyctl", "add_key", "request_key",
	// BPF programs, perf events and userfaultfd: classic exploit aids.
	"bpf", "perf_event_open", "userfaultfd",
	// Replacing or extending the kernel.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	// Their kin: host-wide state that a user namespace does not isolate,
	// or handles that escape a mount namespace.
	"open_by_handle_at", "lookup_dcookie", "quotactl", "acct",
	"swapon", "swapoff", "reboot", "iopl", "ioperm", "uselib",
	"fanotify_init", "syslog",
}

// DeniedErrno is what a denied system call returns.
const DeniedErrno = unix.ENOSYS

var (
	seccompOnce sync.Once
	seccompBPF  []byte
	seccompErr  error
)

// seccompProgram is the filter in the form bwrap's --seccomp reads: an
// array of struct sock_filter in native byte order. It is built once.
func seccompProgram() ([]byte, error) {
	seccompOnce.Do(func() { seccompBPF, seccompErr = buildSeccomp() })
	return seccompBPF, seccompErr
}

func buildSeccomp() ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{{
			Names:  DeniedSyscalls,
			Action: seccomp.ActionErrno | seccomp.Action(DeniedErrno),
		}},
	}
	insns, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	// The library's program lets a call of another architecture through
	// (its default action): on amd64 the i386 ABI (int 0x80) would reach
	// every denied call under its 32-bit number. Nothing in a sandbox is a
	// 32-bit program, so every call of a foreign architecture is refused.
	const archOffset = 4 // offsetof(struct seccomp_data, arch)
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(DeniedErrno)},
	}
	raw, err := bpf.Assemble(append(guard, insns...))
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	var b bytes.Buffer
	for _, in := range raw {
		f := unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
		if err := binary.Write(&b, binary.NativeEndian, f); err != nil {
			return nil, fmt.Errorf("sandbox: seccomp: %w", err)
		}
	}
	return b.Bytes(), nil
}

// seccompFile is an anonymous in-memory file holding the filter, at its
// start, for bwrap's --seccomp.
func seccompFile() (*os.File, error) {
	prog, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("bwrap-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "bwrap-seccomp")
	if _, err := f.Write(prog); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: writing the seccomp filter: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return f, nil
}
