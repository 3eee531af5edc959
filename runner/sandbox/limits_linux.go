package sandbox

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inspecthq/inspect/contract"
)

// cgroupRoot is where the host's cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the directory (under each hierarchy) holding the
// sandboxes' cgroups, one per command.
const cgroupParent = "inspect-sandbox"

// watchInterval is how often a running sandbox's limits are checked: the
// cgroup's OOM and pids counters (cheap) and the workspace's size (a walk).
const watchInterval = time.Second

// diskWalkShare bounds the CPU the workspace walks take: after a walk that
// took d, the next waits at least diskWalkShare×d, so a workspace of a
// million files is measured less often rather than walked non-stop.
const diskWalkShare = 20

// cgroupMode says which cgroup interface this host offers the supervisor.
type cgroupMode int

const (
	cgroupNone cgroupMode = iota
	cgroupV1
	cgroupV2
)

var (
	modeOnce sync.Once
	mode     cgroupMode
)

// hostCgroupMode finds, once, whether the supervisor can make cgroups:
// cgroup v2 with the memory and pids controllers at the root, or the v1
// memory and pids hierarchies (as on hosts whose v2 mount holds only
// hugetlb), each writable by this process.
func hostCgroupMode() cgroupMode {
	modeOnce.Do(func() {
		if b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
			ctrl := strings.Fields(string(b))
			if hasAll(ctrl, "memory", "pids") && unix.Access(cgroupRoot, unix.W_OK) == nil {
				mode = cgroupV2
			}
			return
		}
		for _, c := range []string{"memory", "pids"} {
			if unix.Access(filepath.Join(cgroupRoot, c, "cgroup.procs"), unix.W_OK) != nil {
				return
			}
		}
		mode = cgroupV1
	})
	return mode
}

func hasAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, l := range list {
			found = found || l == w
		}
		if !found {
			return false
		}
	}
	return true
}

// limiter enforces one command's contract.SandboxLimits: its cgroup (when the host has
// one to give), the rlimits otherwise, and the watch.
type limiter struct {
	lim       contract.SandboxLimits
	workspace string
	mode      cgroupMode
	// dirs are the command's cgroup directories: one in v2, one per
	// controller in v1 (memory, pids and, when the host has it, cpu).
	dirs map[string]string

	stop  chan struct{}
	done  chan struct{}
	hit   chan LimitExceeded // the watch's first finding, at most one
	found *LimitExceeded     // what the final check found
}

// newLimiter makes the command's cgroup. It does nothing for a command
// with no limits.
func newLimiter(lim contract.SandboxLimits, workspace string) (*limiter, error) {
	l := &limiter{lim: lim, workspace: workspace, dirs: map[string]string{}, hit: make(chan LimitExceeded, 1)}
	if lim.MemoryBytes == 0 && lim.Pids == 0 && lim.CPUShares == 0 {
		return l, nil
	}
	l.mode = hostCgroupMode()
	if l.mode == cgroupNone {
		return l, nil
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	name := hex.EncodeToString(b[:])
	var err error
	switch l.mode {
	case cgroupV2:
		err = l.makeV2(name)
	case cgroupV1:
		err = l.makeV1(name)
	}
	if err != nil {
		l.remove()
		return nil, fmt.Errorf("sandbox: making the command's cgroup: %w", err)
	}
	return l, nil
}

func (l *limiter) makeV1(name string) error {
	ctrls := []string{"memory", "pids"}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cpu", "cpu.shares")); err == nil && l.lim.CPUShares > 0 {
		ctrls = append(ctrls, "cpu")
	}
	for _, c := range ctrls {
		dir := filepath.Join(cgroupRoot, c, cgroupParent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		l.dirs[c] = dir
	}
	if n := l.lim.MemoryBytes; n > 0 {
		if err := writeFile(l.dirs["memory"], "memory.limit_in_bytes", n); err != nil {
			return err
		}
		// Swap must not absorb what the limit refuses; a host with no
		// swap accounting has no such file.
		if err := writeFile(l.dirs["memory"], "memory.memsw.limit_in_bytes", n); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if n := l.lim.Pids; n > 0 {
		if err := writeFile(l.dirs["pids"], "pids.max", n); err != nil {
			return err
		}
	}
	if dir, ok := l.dirs["cpu"]; ok {
		if err := writeFile(dir, "cpu.shares", l.lim.CPUShares); err != nil {
			return err
		}
	}
	return nil
}

func (l *limiter) makeV2(name string) error {
	parent := filepath.Join(cgroupRoot, cgroupParent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	// The root and the parent hand their controllers on to the commands'
	// cgroups: memory and pids, which hostCgroupMode found, and cpu when
	// the host has it (a CPU share is a preference, not a guard).
	b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if err != nil {
		return err
	}
	ctrls := []string{"memory", "pids"}
	withCPU := l.lim.CPUShares > 0 && hasAll(strings.Fields(string(b)), "cpu")
	if withCPU {
		ctrls = append(ctrls, "cpu")
	}
	for _, dir := range []string{cgroupRoot, parent} {
		for _, c := range ctrls {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
				return fmt.Errorf("enabling the %s controller in %s: %w", c, dir, err)
			}
		}
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	l.dirs["v2"] = dir
	if n := l.lim.MemoryBytes; n > 0 {
		if err := writeFile(dir, "memory.max", n); err != nil {
			return err
		}
		if err := writeFile(dir, "memory.swap.max", 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if n := l.lim.Pids; n > 0 {
		if err := writeFile(dir, "pids.max", n); err != nil {
			return err
		}
	}
	if n := l.lim.CPUShares; withCPU {
		// cpu.weight is 1..10000 with 100 for an ordinary process, as
		// 1024 shares are in v1.
		w := max(1, min(10000, n*100/1024))
		if err := writeFile(dir, "cpu.weight", w); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(dir, name string, v int64) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(strconv.FormatInt(v, 10)), 0)
}

// place puts pid (bwrap, not yet running anything: it waits for its
// arguments) into the command's cgroup, or, without one, sets the
// rlimits it can. Everything the sandbox starts inherits either.
func (l *limiter) place(pid int) error {
	for _, dir := range l.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("sandbox: moving the sandbox into its cgroup: %w", err)
		}
	}
	if l.mode == cgroupNone && l.lim.Pids > 0 {
		// Per uid on the whole host: a fallback, never the only guard on a
		// host with cgroups.
		rl := unix.Rlimit{Cur: uint64(l.lim.Pids), Max: uint64(l.lim.Pids)}
		if err := unix.Prlimit(pid, unix.RLIMIT_NPROC, &rl, nil); err != nil {
			return fmt.Errorf("sandbox: setting RLIMIT_NPROC: %w", err)
		}
	}
	return nil
}

// watch checks the limits every watchInterval until stopped, and says on
// l.hit (once) which one the sandbox ran into.
func (l *limiter) watch() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		var nextWalk time.Time
		for {
			select {
			case <-l.stop:
				return
			case now := <-t.C:
				ex := l.counted()
				if ex == nil && !now.Before(nextWalk) {
					ex = l.overDisk()
					nextWalk = time.Now().Add(diskWalkShare * time.Since(now))
				}
				if ex != nil {
					l.hit <- *ex
					return
				}
			}
		}
	}()
}

// stopWatch ends the watch and waits for it; it then checks once more,
// since a command can run into a limit and end between two ticks.
func (l *limiter) stopWatch() {
	if l.stop != nil {
		close(l.stop)
		<-l.done
	}
	l.found = l.exceeded()
}

// exceeded reports the first limit the sandbox has run into.
func (l *limiter) exceeded() *LimitExceeded {
	if ex := l.counted(); ex != nil {
		return ex
	}
	return l.overDisk()
}

// counted reports a limit the cgroup's counters say was hit.
func (l *limiter) counted() *LimitExceeded {
	if l.lim.MemoryBytes > 0 && l.oomKills() > 0 {
		return &LimitExceeded{Limit: LimitMemory, Value: l.lim.MemoryBytes}
	}
	if l.lim.Pids > 0 && l.pidsRefused() > 0 {
		return &LimitExceeded{Limit: LimitPids, Value: l.lim.Pids}
	}
	return nil
}

// overDisk reports the workspace limit when the workspace is over it.
func (l *limiter) overDisk() *LimitExceeded {
	if l.lim.WorkspaceBytes > 0 && l.workspace != "" && diskUse(l.workspace) > l.lim.WorkspaceBytes {
		return &LimitExceeded{Limit: LimitWorkspace, Value: l.lim.WorkspaceBytes}
	}
	return nil
}

func (l *limiter) oomKills() int64 {
	switch l.mode {
	case cgroupV1:
		return keyed(l.dirs["memory"], "memory.oom_control", "oom_kill")
	case cgroupV2:
		return keyed(l.dirs["v2"], "memory.events", "oom_kill")
	}
	return 0
}

func (l *limiter) pidsRefused() int64 {
	switch l.mode {
	case cgroupV1:
		return keyed(l.dirs["pids"], "pids.events", "max")
	case cgroupV2:
		return keyed(l.dirs["v2"], "pids.events", "max")
	}
	return 0
}

// keyed reads the value of key from a cgroup file of "key value" lines;
// an unreadable file or key reads as 0 (nothing seen).
func keyed(dir, file, key string) int64 {
	if dir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64) // a malformed count reads as 0
			return n
		}
	}
	return 0
}

// diskUse is the space allocated to the files under dir, each inode
// counted once, not crossing into other file systems (a cache mounted
// below is not the workspace's). Files that vanish mid-walk are skipped.
func diskUse(dir string) int64 {
	var root unix.Stat_t
	if err := unix.Lstat(dir, &root); err != nil {
		return 0
	}
	seen := map[uint64]bool{}
	var total int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: the walk goes on
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil
		}
		if st.Dev != root.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += st.Blocks * 512
		return nil
	}) // the callback never fails the walk
	return total
}

// remove deletes the command's cgroups; every process of the sandbox has
// been reaped by then.
func (l *limiter) remove() error {
	var errs []error
	for _, dir := range l.dirs {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("sandbox: removing the command's cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}
