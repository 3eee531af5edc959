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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	budget    *Budget // the session's parent cgroup, or nil
	workspace string
	mode      cgroupMode
	// dirs are the command's cgroup directories: one in v2, one per
	// controller in v1 (memory, pids and, when the host has it, cpu).
	dirs map[string]string

	stop  chan struct{}
	done  chan struct{}
	hit   chan LimitExceeded // the watch's first finding, at most one
	found *LimitExceeded     // what the final check found
	// budgetRefusedBefore is the forks the session's budget had refused
	// at its own limit when the command began (v2 only:
	// budgetPidsRefused).
	budgetRefusedBefore int64
	// report and since are Spec.Watch and Spec.WatchSince; initPid is the
	// sandbox's init once Run knows it (0 before).
	report  func(WatchReport)
	since   time.Time
	initPid atomic.Int64
}

// newLimiter makes the command's cgroup, inside the session's budget
// when there is one. It does nothing for a command with no limits of its
// own and no budget.
func newLimiter(lim contract.SandboxLimits, workspace string, budget *Budget) (*limiter, error) {
	l := &limiter{lim: lim, workspace: workspace, dirs: map[string]string{}, hit: make(chan LimitExceeded, 1)}
	if budget != nil && len(budget.dirs) > 0 {
		l.budget = budget
	}
	if lim.MemoryBytes == 0 && lim.Pids == 0 && lim.CPUShares == 0 && l.budget == nil {
		return l, nil
	}
	l.mode = hostCgroupMode()
	if l.mode == cgroupNone {
		return l, nil
	}
	name, err := randomName()
	if err != nil {
		return nil, err
	}
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
	l.budgetRefusedBefore = l.budgetPidsRefused()
	return l, nil
}

func randomName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// parentV1 is the directory the command's cgroup of controller c goes
// in: the session's budget's when it has one for c, else the shared
// parent of every sandbox.
func (l *limiter) parentV1(c string) string {
	if l.budget != nil && l.budget.dirs[c] != "" {
		return l.budget.dirs[c]
	}
	return filepath.Join(cgroupRoot, c, cgroupParent)
}

func (l *limiter) makeV1(name string) error {
	ctrls := []string{"memory", "pids"}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cpu", "cpu.shares")); err == nil && l.lim.CPUShares > 0 {
		ctrls = append(ctrls, "cpu")
	}
	for _, c := range ctrls {
		dir := filepath.Join(l.parentV1(c), name)
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
	// The root, the parent and the session's budget (when there is one)
	// hand their controllers on to the commands' cgroups: memory and
	// pids, which hostCgroupMode found, and cpu when the host has it (a
	// CPU share is a preference, not a guard).
	b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if err != nil {
		return err
	}
	withCPU := l.lim.CPUShares > 0 && hasAll(strings.Fields(string(b)), "cpu")
	chain := []string{cgroupRoot, filepath.Join(cgroupRoot, cgroupParent)}
	if l.budget != nil {
		chain = append(chain, l.budget.dirs["v2"])
	}
	if err := delegateV2(chain, withCPU); err != nil {
		return err
	}
	dir := filepath.Join(chain[len(chain)-1], name)
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

// delegateV2 makes each directory of chain after the root (each the
// parent of the next) and enables memory, pids and, withCPU, cpu in its
// cgroup.subtree_control, so the last one's children get them.
func delegateV2(chain []string, withCPU bool) error {
	ctrls := []string{"memory", "pids"}
	if withCPU {
		ctrls = append(ctrls, "cpu")
	}
	for i, dir := range chain {
		if i > 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		for _, c := range ctrls {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
				return fmt.Errorf("enabling the %s controller in %s: %w", c, dir, err)
			}
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

// counted reports a limit the cgroup's counters say was hit: the
// command's own, or its session's.
//
// The kernel counts an OOM kill in the victim's cgroup whichever
// ancestor's limit was reached, and a refused fork (on v1) in the forking
// task's, so the command's own counters say that a limit was hit, not
// whose. The command's own limit was when its own counter reached it
// (ownMemoryReached; its pids.peak at its own pids.max). When it never
// did, the limit reached was the session's (decision 0058). A command
// that filled its own memory limit once (page cache counts) and later
// lost a process to the session's is named by its own.
func (l *limiter) counted() *LimitExceeded {
	sessionMemory, sessionPids := l.budget.memoryBytes(), l.budget.pids()
	if (l.lim.MemoryBytes > 0 || sessionMemory > 0) && l.oomKills() > 0 {
		if sessionMemory > 0 && !l.ownMemoryReached() {
			return &LimitExceeded{Limit: LimitSessionMemory, Value: sessionMemory}
		}
		if l.lim.MemoryBytes > 0 {
			return &LimitExceeded{Limit: LimitMemory, Value: l.lim.MemoryBytes}
		}
	}
	if (l.lim.Pids > 0 || sessionPids > 0) && l.pidsRefused() > 0 {
		if peak, ok := l.pidsPeak(); sessionPids > 0 && (l.lim.Pids == 0 || ok && peak < l.lim.Pids) {
			return &LimitExceeded{Limit: LimitSessionPids, Value: sessionPids}
		}
		if l.lim.Pids > 0 {
			return &LimitExceeded{Limit: LimitPids, Value: l.lim.Pids}
		}
	}
	return nil
}

// overDisk reports the workspace limit when the workspace is over it.
func (l *limiter) overDisk() *LimitExceeded {
	if l.workspace == "" || (l.lim.WorkspaceBytes <= 0 && l.report == nil) {
		return nil
	}
	used, files, truncated := diskWalk(l.workspace, l.since, l.report != nil)
	if l.report != nil {
		cmd := ""
		if pid := l.initPid.Load(); pid > 0 {
			cmd = newestCommand(int(pid))
		}
		l.report(WatchReport{Files: files, Truncated: truncated, Command: cmd})
	}
	if l.lim.WorkspaceBytes > 0 && used > l.lim.WorkspaceBytes {
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
		// Before Linux 6.13, v2 counts a refused fork in the forking
		// cgroup's pids.events whichever limit refused it, as v1 does.
		// From 6.13 it counts it where the limit was (pids.events.local)
		// and in every ancestor of that (pids.events), so a fork the
		// session's budget refused shows only in the budget's
		// (kernel/cgroup/pids.c, pids_event): read there as well.
		own := max(keyed(l.dirs["v2"], "pids.events", "max"), keyed(l.dirs["v2"], "pids.events.local", "max"))
		return own + max(l.budgetPidsRefused()-l.budgetRefusedBefore, 0)
	}
	return 0
}

// budgetPidsRefused is the forks the session's budget refused at its own
// limit, on v2 from Linux 6.13 (its pids.events.local; 0 elsewhere). The
// budget's counter is the session's: a refusal while two commands run is
// counted for both, and each is named for the session's limit.
func (l *limiter) budgetPidsRefused() int64 {
	if l.mode != cgroupV2 || l.budget == nil {
		return 0
	}
	return keyed(l.budget.dirs["v2"], "pids.events.local", "max")
}

// chargeSlack is how far below a limit the peak of a cgroup whose limit
// refused a charge may stay: a refused charge is of at most a huge page
// (2 MiB), and the peak counts only charges that succeeded.
const chargeSlack = 2 << 20

// ownMemoryReached says the command's own memory limit was reached: on
// v2 a charge it refused ("max" in memory.events); on v1, whose
// memory.failcnt Linux 6.18 no longer counts, its peak
// (memory.max_usage_in_bytes) within chargeSlack of the limit.
func (l *limiter) ownMemoryReached() bool {
	if l.lim.MemoryBytes == 0 {
		return false
	}
	switch l.mode {
	case cgroupV1:
		peak, ok := single(l.dirs["memory"], "memory.max_usage_in_bytes")
		return !ok || peak >= l.lim.MemoryBytes-chargeSlack // unreadable: the command's own, as before budgets
	case cgroupV2:
		return keyed(l.dirs["v2"], "memory.events", "max") > 0
	}
	return true
}

// pidsPeak is the most processes and threads the command's cgroup held
// at once; ok is false on a kernel without pids.peak (before 6.1).
func (l *limiter) pidsPeak() (int64, bool) {
	switch l.mode {
	case cgroupV1:
		return single(l.dirs["pids"], "pids.peak")
	case cgroupV2:
		return single(l.dirs["v2"], "pids.peak")
	}
	return 0, false
}

// single reads a cgroup file holding one number.
func single(dir, file string) (int64, bool) {
	if dir == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
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
	total, _, _ := diskWalk(dir, time.Time{}, false)
	return total
}

// diskWalk is diskUse, and when collect is set the regular files changed
// (modified, or their inode changed) since since, outside .git and
// .inspect, sorted by path, at most MaxWatchFiles (truncated says more).
// It only lstat's: it never opens a file.
func diskWalk(dir string, since time.Time, collect bool) (total int64, files []ChangedFile, truncated bool) {
	var root unix.Stat_t
	if err := unix.Lstat(dir, &root); err != nil {
		return 0, nil, false
	}
	sinceNs := since.UnixNano()
	seen := map[uint64]bool{}
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
		if !collect || st.Mode&unix.S_IFMT != unix.S_IFREG || max(st.Mtim.Nano(), st.Ctim.Nano()) < sinceNs {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		if first, _, _ := strings.Cut(rel, "/"); first == ".git" || first == ".inspect" {
			return nil
		}
		if len(files) >= MaxWatchFiles {
			truncated = true
			return nil
		}
		files = append(files, ChangedFile{Path: rel, Size: st.Size})
		return nil
	}) // the callback never fails the walk
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return total, files, truncated
}

// newestCommand is the command line of the most recently started process
// below pid (the sandbox's init), "" when there is none.
func newestCommand(pid int) string {
	best, bestStart := 0, uint64(0)
	for _, p := range descendants(pid) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 20 {
			continue
		}
		// The start time is field 22 of stat, the 20th after the name.
		start, err := strconv.ParseUint(f[19], 10, 64)
		if err == nil && start >= bestStart {
			best, bestStart = p, start
		}
	}
	if best == 0 {
		return ""
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(best) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
}

// remove deletes the command's cgroups; every process of the sandbox has
// been reaped by then.
func (l *limiter) remove() error {
	var errs []error
	for _, dir := range l.dirs {
		if err := removeCgroup(dir); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: removing the command's cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// cgroupRemoveWait bounds how long removeCgroup waits for a cgroup to
// empty: a process the kernel is still taking out of it (an exit under
// way, a child cgroup's removal finishing) takes milliseconds, and a
// cgroup still busy after this is left for SweepBudgets.
const cgroupRemoveWait = 2 * time.Second

// removeCgroup removes the cgroup directory dir, trying again while the
// kernel says it is busy (EBUSY: a process or a child cgroup still in
// it), for at most cgroupRemoveWait. One already gone is no error.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(cgroupRemoveWait)
	pause := 5 * time.Millisecond
	for {
		err := os.Remove(dir)
		switch {
		case err == nil || errors.Is(err, os.ErrNotExist):
			return nil
		case !errors.Is(err, unix.EBUSY) || time.Now().Add(pause).After(deadline):
			return err
		}
		time.Sleep(pause) // a retry's pause, not a synchronisation: nothing signals a cgroup's emptying on v1
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// Budget is one session's parent cgroup (decision 0058). Every command
// run with Spec.Budget set to it has its cgroup made inside, so the
// session's commands and services together count against
// SessionMemoryBytes and SessionPids, beside each one's own limits: on
// cgroup v1 the memory and pids hierarchies nest (a charge counts in
// every ancestor up to the root), as v2's do. The supervisor makes one
// per attempt and closes it once every sandbox of the attempt has ended.
//
// Without a cgroup for the supervisor (cgroupNone) a budget enforces
// nothing, as a command's own memory limit does not.
type Budget struct {
	lim  contract.SandboxLimits // only the Session fields are read
	mode cgroupMode
	// dirs are the budget's cgroup directories: "memory" and "pids" on
	// v1, "v2" on v2; none when nothing is enforced.
	dirs map[string]string
	// locks hold each of dirs open with an exclusive flock for the
	// budget's life: SweepBudgets in another supervisor process tells a
	// live budget (empty between two commands) from one a crashed process
	// left by it, whichever PID namespace either runs in. The kernel
	// drops the lock when the process ends, however it ends.
	locks []*os.File
}

// budgetName matches the name of a budget's cgroup: "session-", the
// making process's pid (for whoever reads the hierarchy) and 16 random
// hex digits. SweepBudgets removes only cgroups so named, which a budget
// holds locked while it lives.
var budgetName = regexp.MustCompile(`^session-[0-9]+-[0-9a-f]{16}$`)

// NewBudget makes the session's parent cgroup with lim's session limits.
// A budget with neither limit makes no cgroup: commands run with it get
// their cgroups where they would without one.
func NewBudget(lim contract.SandboxLimits) (*Budget, error) {
	return newBudgetUnder(cgroupParent, lim)
}

// newBudgetUnder is NewBudget with its cgroups made under parent (in each
// hierarchy) rather than the sandboxes' parent: for tests, which must not
// sweep other processes' budgets.
func newBudgetUnder(parent string, lim contract.SandboxLimits) (*Budget, error) {
	if err := checkLimits(lim); err != nil {
		return nil, err
	}
	b := &Budget{lim: lim, dirs: map[string]string{}}
	if lim.SessionMemoryBytes == 0 && lim.SessionPids == 0 {
		return b, nil
	}
	b.mode = hostCgroupMode()
	if b.mode == cgroupNone {
		return b, nil
	}
	name, err := randomName()
	if err != nil {
		return nil, err
	}
	name = fmt.Sprintf("session-%d-%s", os.Getpid(), name)
	switch b.mode {
	case cgroupV1:
		err = b.makeV1(parent, name)
	case cgroupV2:
		err = b.makeV2(parent, name)
	}
	if err != nil {
		_ = b.Close() // nothing runs in it yet; a leftover empty cgroup is harmless
		return nil, fmt.Errorf("sandbox: making the session's cgroup: %w", err)
	}
	return b, nil
}

func (b *Budget) makeV1(parent, name string) error {
	for _, c := range []string{"memory", "pids"} {
		dir := filepath.Join(cgroupRoot, c, parent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		b.dirs[c] = dir
		if err := b.lock(dir); err != nil {
			return err
		}
	}
	if n := b.lim.SessionMemoryBytes; n > 0 {
		if err := writeFile(b.dirs["memory"], "memory.limit_in_bytes", n); err != nil {
			return err
		}
		if err := writeFile(b.dirs["memory"], "memory.memsw.limit_in_bytes", n); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if n := b.lim.SessionPids; n > 0 {
		if err := writeFile(b.dirs["pids"], "pids.max", n); err != nil {
			return err
		}
	}
	return nil
}

func (b *Budget) makeV2(parent, name string) error {
	dir := filepath.Join(cgroupRoot, parent, name)
	// The budget's own subtree_control is enabled by each command's
	// limiter (delegateV2), which knows whether it needs cpu.
	if err := delegateV2([]string{cgroupRoot, filepath.Dir(dir)}, false); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	b.dirs["v2"] = dir
	if err := b.lock(dir); err != nil {
		return err
	}
	if n := b.lim.SessionMemoryBytes; n > 0 {
		if err := writeFile(dir, "memory.max", n); err != nil {
			return err
		}
		if err := writeFile(dir, "memory.swap.max", 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if n := b.lim.SessionPids; n > 0 {
		if err := writeFile(dir, "pids.max", n); err != nil {
			return err
		}
	}
	return nil
}

// memoryBytes is the session's memory limit when a cgroup enforces it,
// else 0.
func (b *Budget) memoryBytes() int64 {
	if b == nil || len(b.dirs) == 0 {
		return 0
	}
	return b.lim.SessionMemoryBytes
}

// pids is the session's pids limit when a cgroup enforces it, else 0.
func (b *Budget) pids() int64 {
	if b == nil || len(b.dirs) == 0 {
		return 0
	}
	return b.lim.SessionPids
}

// lock holds dir open with an exclusive flock until Close.
func (b *Budget) lock(dir string) error {
	f, err := lockCgroup(dir)
	if err != nil {
		return fmt.Errorf("locking %s: %w", dir, err)
	}
	b.locks = append(b.locks, f)
	return nil
}

// lockCgroup opens the cgroup directory dir and takes an exclusive flock
// on it without waiting: unix.EWOULDBLOCK when a live process holds it.
func lockCgroup(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close() // only read from; the flock's error is the one to say
		return nil, err
	}
	return f, nil
}

// Close removes the session's cgroups, waiting briefly for a process
// still leaving them (removeCgroup), then lets go of their locks; one
// it could not remove is left for SweepBudgets. Every command run with
// the budget must have ended: a cgroup with a child cgroup in it cannot
// be removed.
func (b *Budget) Close() error {
	if b == nil {
		return nil
	}
	var errs []error
	for _, dir := range b.dirs {
		if err := removeCgroup(dir); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: removing the session's cgroup: %w", err))
		}
	}
	for _, f := range b.locks {
		_ = f.Close() // a directory opened to hold its flock: nothing written
	}
	b.locks = nil
	return errors.Join(errs...)
}

// sweepAge is how long before the sweeping process started a budget's
// cgroup must have been made to be swept: a budget is locked just after
// its mkdir, and the cgroup file system's clock is coarse (jiffies).
const sweepAge = time.Second

// SweepBudgets removes the budgets' cgroups (decision 0058) that crashed
// or failed closes left behind: each one named as a budget's, made at
// least sweepAge before started (this process's start), that no live
// process holds locked, and in which no process runs (in it or any cgroup
// inside it, such as a command's left with it); the command cgroups
// inside go first. It returns the directories it removed. A live
// session's budget is never touched, even between two commands, when it
// holds no process: its supervisor holds its lock.
func SweepBudgets(started time.Time) ([]string, error) {
	return sweepBudgets(cgroupParent, started)
}

func sweepBudgets(parent string, started time.Time) ([]string, error) {
	var parents []string
	switch hostCgroupMode() {
	case cgroupV1:
		parents = []string{filepath.Join(cgroupRoot, "memory", parent), filepath.Join(cgroupRoot, "pids", parent)}
	case cgroupV2:
		parents = []string{filepath.Join(cgroupRoot, parent)}
	}
	var removed []string
	var errs []error
	for _, p := range parents {
		ents, err := os.ReadDir(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || !budgetName.MatchString(e.Name()) {
				continue
			}
			dir := filepath.Join(p, e.Name())
			ok, err := sweepBudget(dir, started)
			if err != nil {
				errs = append(errs, fmt.Errorf("sandbox: sweeping %s: %w", dir, err))
			}
			if ok {
				removed = append(removed, dir)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// sweepBudget removes the budget cgroup dir when it is old enough, no
// live process holds it, and no process runs in it; true when it did.
func sweepBudget(dir string, started time.Time) (bool, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.ModTime().Before(started.Add(-sweepAge)) {
		return false, nil // gone already, or perhaps being made: not this sweep's
	}
	f, err := lockCgroup(dir)
	if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, os.ErrNotExist) {
		return false, nil // a live budget, or another sweep's
	}
	if err != nil {
		return false, err
	}
	defer f.Close() // held while the cgroups go; only read from
	var inside []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(b)) > 0 {
			return errBusyCgroup
		}
		inside = append(inside, p)
		return nil
	})
	if errors.Is(err, errBusyCgroup) {
		return false, nil // a process still runs in it: never swept
	}
	if err != nil {
		return false, err
	}
	// Deepest first: a cgroup with a child cannot be removed.
	for i := len(inside) - 1; i >= 0; i-- {
		if err := os.Remove(inside[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
	}
	return true, nil
}

// errBusyCgroup stops sweepBudget's walk at a cgroup a process is in.
var errBusyCgroup = errors.New("a process is in the cgroup")
