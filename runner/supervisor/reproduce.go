package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/sandbox"
	"github.com/inspecthq/inspect/runner/testreport"
)

// Reproduce first (decision 0082): when the spec asks, verify runs a
// second time, after the change's own verify, on the pinned commit with
// only the change's test files (policy.IsTestFile: added and modified ones
// written, deleted ones deleted). A test the change adds or changes that
// reproduces the bug fails there and passes with the whole change; the
// app judges that (contract.Reproduce) from this run and verify's.
//
// The run is verify's in every other way: its own workspace, written
// before verify's commands run, so what setup left in it is as setup left
// it; its own views of the attempt's writable directories (phaseviews.go);
// a fresh environment and fresh services. It never touches the change,
// which was fixed before verify, and never the session's outcome: what it
// ran is kept apart, as the evidence's Reproduce, and a run the deadline
// (or a sandbox failure) cuts short says so there.

// reproduceDirName is the reproduce workspace's directory in the
// attempt's.
const reproduceDirName = "reproduce"

// reproduceState is the reproduce run's, in the session.
type reproduceState struct {
	// mounts are its views of the attempt's writable directories, from
	// when setup has run until it takes them.
	mounts []sandbox.Mount
	// files are the change's test files, to apply to the pinned commit.
	files []contract.FileChange
	// dir is its workspace, once built.
	dir string
	// running is set while its commands run: they get dir as /workspace.
	running bool
	// ran is set once it ran, whole or cut short.
	ran bool
}

// planReproduce decides, once the change is collected, whether the
// reproduce run will run: the evidence's Reproduce names the change's
// test files, or says why there is no run.
func (s *session) planReproduce() {
	if !s.spec.Reproduce {
		return
	}
	run := &contract.ReproduceRun{}
	s.ev.Reproduce = run
	if s.manifest == nil || len(s.manifest.Files) == 0 {
		run.Skipped = contract.ReproduceSkippedNoChange
		return
	}
	for _, f := range s.manifest.Files {
		if policy.IsTestFile(f.Path) {
			s.reproduce.files = append(s.reproduce.files, f)
			run.TestFiles = append(run.TestFiles, f.Path)
		}
	}
	switch {
	case len(run.TestFiles) == 0:
		run.Skipped = contract.ReproduceSkippedNoTestFile
	case len(s.spec.Verify) == 0:
		run.Skipped = contract.ReproduceSkippedNoVerify
	}
}

// reproducePlanned reports whether the reproduce run is still to run.
func (s *session) reproducePlanned() bool {
	return s.ev.Reproduce != nil && s.ev.Reproduce.Skipped == "" && !s.reproduce.ran
}

// prepareReproduce builds the reproduce workspace, after the verify
// workspace and before verify's commands run. A failure is the reproduce
// run's, never the session's.
func (s *session) prepareReproduce(ctx context.Context) {
	if !s.reproducePlanned() {
		return
	}
	if err := s.buildReproduceWorkspace(ctx); err != nil {
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("building the reproduce workspace")
		s.ev.Reproduce.Skipped = cleanText("its workspace could not be built: "+s.red.Redact(err.Error()), contract.MaxReasonBytes)
	}
}

// buildReproduceWorkspace writes the pinned commit, then the change's test
// files, then what setup left (as the verify workspace holds it before
// verify runs, entries the former lack only), with a .git at the pinned
// commit, owned by the sandbox uid.
func (s *session) buildReproduceWorkspace(ctx context.Context) error {
	dir := filepath.Join(s.ws.dir, reproduceDirName)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	// The pinned commit's tree through an index of its own: the private
	// index holds the change.
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(s.ws.dir, "reproduce.index")}
	if _, err := s.ws.private(ctx, s.git, index, nil, "read-tree", s.spec.PinnedSHA); err != nil {
		return fmt.Errorf("reading the pinned commit's tree: %w", err)
	}
	if _, err := s.ws.private(ctx, s.git, index, nil, "checkout-index", "--all", "--force", "--prefix="+dir+string(filepath.Separator)); err != nil {
		return fmt.Errorf("writing the pinned commit: %w", err)
	}
	if err := writeChangeFiles(dir, s.reproduce.files); err != nil {
		return fmt.Errorf("writing the change's test files: %w", err)
	}
	if err := s.ws.ownGit(ctx, s.git, dir, s.spec.PinnedSHA); err != nil {
		return fmt.Errorf("giving the reproduce workspace its .git: %w", err)
	}
	uid, gid := int(s.cfg.SandboxUID), int(s.cfg.SandboxGID)
	if uid != os.Geteuid() || gid != os.Getegid() {
		if err := chownTree(dir, uid, gid); err != nil {
			return err
		}
	}
	var rels []string
	if s.setupOut != nil {
		rels = append(rels, s.setupOut.roots...)
	}
	rels = append(rels, s.workspaceCaches()...)
	for _, rel := range rels {
		if err := fillFromLayer(workspaceCacheLayer{rel: rel, src: filepath.Join(s.verifyDir, filepath.FromSlash(rel))}, dir, uid, gid); err != nil {
			return fmt.Errorf("copying what setup left at %s: %w", rel, err)
		}
	}
	// A file the change adds there is in the verify workspace, and only
	// its test files belong here.
	if err := s.dropAddedNonTests(dir, rels); err != nil {
		return err
	}
	s.reproduce.dir = dir
	return nil
}

// dropAddedNonTests removes from dir the files the change adds, other than
// test files, under rels (what setup left, copied from the verify
// workspace, which has the change).
func (s *session) dropAddedNonTests(dir string, rels []string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // nothing was written through it
	for _, f := range s.manifest.Files {
		if !f.Added || policy.IsTestFile(f.Path) {
			continue
		}
		for _, rel := range rels {
			if strings.HasPrefix(f.Path, rel+"/") {
				if err := root.Remove(filepath.FromSlash(f.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
		}
	}
	return nil
}

// writeChangeFiles applies files (from the change's manifest) to the tree
// at dir: a deleted one is removed, a written one replaces what is there.
// Every write goes through an os.Root at dir, so no symlink of the pinned
// commit leads one out of it.
func writeChangeFiles(dir string, files []contract.FileChange) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // every write was checked already
	for _, f := range files {
		p := filepath.FromSlash(f.Path)
		if err := root.RemoveAll(p); err != nil {
			return err
		}
		if f.Deleted {
			continue
		}
		if d := path.Dir(f.Path); d != "." {
			if err := root.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
				return err
			}
		}
		switch f.Mode {
		case contract.ModeSymlink:
			err = root.Symlink(string(f.Content), p)
		case contract.ModeExecutable:
			err = root.WriteFile(p, f.Content, 0o755)
		default:
			err = root.WriteFile(p, f.Content, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// runReproduce runs verify's commands in the reproduce workspace, after
// verify, and keeps what they did as the evidence's Reproduce, leaving the
// session's outcome, commands and tests as verify left them.
func (s *session) runReproduce(ctx context.Context) {
	if !s.reproducePlanned() {
		return
	}
	run := s.ev.Reproduce
	s.reproduce.ran = true
	// Verify's services go first, whole (recording how they ended), and
	// the run gets its own views and a fresh environment, as verify did
	// (phaseviews.go).
	s.stopServices()
	outcome, reason, limit, partial := s.ev.Outcome, s.ev.Reason, s.ev.Limit, s.ev.Partial
	commands, outputs, services := len(s.ev.Commands), len(s.testOutputs), len(s.ev.Services)
	defer func() {
		// Its services end with it, and are its own, not the session's.
		s.stopServices()
		run.Services = append([]contract.ServiceResult(nil), s.ev.Services[services:]...)
		s.ev.Services = s.ev.Services[:services]
		// Their indexes were into s.ev.Services: nothing may look them up.
		s.stoppedServices = slices.DeleteFunc(s.stoppedServices, func(svc *service) bool { return svc.index >= services })
		run.Commands = append([]contract.CommandResult(nil), s.ev.Commands[commands:]...)
		s.ev.Commands = s.ev.Commands[:commands]
		if run.Tests == nil && len(s.testOutputs) > outputs {
			run.Tests = testreport.Combine(s.testOutputs[outputs:], nil)
		}
		s.testOutputs = s.testOutputs[:outputs]
		if s.ev.Outcome != outcome || s.ev.Partial != partial {
			run.Skipped = cleanText("it was cut short: "+s.ev.Reason, contract.MaxReasonBytes)
		}
		s.ev.Outcome, s.ev.Reason, s.ev.Limit, s.ev.Partial = outcome, reason, limit, partial
	}()
	s.enter(contract.PhaseVerify, fmt.Sprintf("reproducing: verify on the pinned commit with the change's %d test files", len(run.TestFiles)))
	if s.reproduce.mounts != nil {
		s.mounts, s.reproduce.mounts = s.reproduce.mounts, nil
	}
	s.reproduce.running = true
	defer func() { s.reproduce.running = false }()
	if s.env != nil {
		s.closeEnvironment()
		if !s.openEnvironment(ctx) {
			return
		}
	}
	start := fsNow(s.ws.dir)
	if !s.startServices(ctx, contract.PhaseVerify) {
		return
	}
	for _, c := range s.spec.Verify {
		if _, ok := s.command(ctx, c.Name, c.Argv, c.Timeout.Std()); !ok || s.cutShort(ctx) {
			return
		}
	}
	reports := collectReports(ctx, s.reproduce.dir, start, reportPaths(s.spec.Verify), s.testOptions(), s.log)
	run.Tests = testreport.Combine(s.testOutputs[outputs:], reports)
}

// reproduceNotRun says, when the session ended before the reproduce run
// could run, why it did not.
func (s *session) reproduceNotRun() {
	if !s.spec.Reproduce {
		return
	}
	why := "the session ended before it (" + string(s.ev.Outcome) + ")"
	switch {
	case s.ev.Reproduce == nil:
		s.ev.Reproduce = &contract.ReproduceRun{Skipped: why}
	case s.reproducePlanned():
		s.ev.Reproduce.Skipped = why
	}
}
