package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
	"github.com/inspecthq/inspect/runner/testreport"
)

// Test reports are found after the verify commands ran, by the supervisor
// outside the sandbox: a regular file of the workspace named TEST-*.xml
// (Maven Surefire, Gradle) or whose name contains "junit" and ends in .xml
// (pytest --junitxml=junit.xml, jest-junit's junit.xml, gotestsum
// --junitfile), at most junitMaxDepth directories deep, outside .git,
// .inspect and node_modules, or a file a verify command's argv names as
// its report (reportFlags: pytest's --junitxml, jest's --outputFile,
// node's --test-reporter-destination, gotestsum's --junitfile); and in
// either case written at or after the start of the verify phase (its
// mtime), so that reports committed to the repository do not count.
// runner/testreport reads them: JUnit XML, or jest's --json report.
//
// The workspace is the agent's: no symlink is followed (directories are
// entered by their entry type, files opened through an os.Root with
// O_NOFOLLOW and checked to be regular with fstat), and the size, number
// and walk of the reports are capped. A report that does not parse gives
// no results and is logged; it never fails the attempt. The results are
// only as trustworthy as the test run that wrote them: the agent changed
// the code that ran, and could have written a report with a fresh mtime
// itself.
const (
	junitMaxDepth      = 6
	junitMaxFileBytes  = 8 << 20
	junitMaxTotalBytes = 32 << 20
	junitMaxFiles      = 200
	junitMaxEntries    = 200_000 // directory entries the walk reads in all
)

// junitSkipDirs are never entered, at any depth.
var junitSkipDirs = map[string]bool{".git": true, inspectDir: true, "node_modules": true}

// isJUnitName reports whether a file name follows the convention.
func isJUnitName(name string) bool {
	lower := strings.ToLower(name)
	if !strings.HasSuffix(lower, ".xml") {
		return false
	}
	return strings.HasPrefix(name, "TEST-") || strings.Contains(lower, "junit")
}

// fsNow returns the filesystem's notion of now in dir: the mtime of a file
// created there. Files are stamped by the kernel's coarse clock, which may
// lag time.Now by a tick, so the verify phase's start is taken this way
// for the comparison with reports' mtimes.
func fsNow(dir string) time.Time {
	f, err := os.CreateTemp(dir, "verify-start-")
	if err != nil {
		return time.Now()
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Now()
	}
	return fi.ModTime()
}

// testOptions is what runner/testreport needs to name failing tests'
// files: the module path read before the agent ran, and the verify
// workspace (its files checked without following a symlink).
func (s *session) testOptions() testreport.Options {
	dir := s.verifyDir
	return testreport.Options{Module: s.goModule, Workspace: sandbox.WorkspaceDir, IsFile: func(p string) bool {
		if dir == "" {
			return false
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return false
		}
		defer root.Close()
		fi, err := root.Lstat(p)
		return err == nil && fi.Mode().IsRegular()
	}}
}

// reportFlags finds a report file named in a verify command's argument
// ("--junitxml=out/r.xml", or the flag alone with the path next).
var reportFlags = regexp.MustCompile(`(?:^|\s)--(?:junitxml|junit-xml|outputFile|test-reporter-destination|junitfile)(?:=(\S+)|\s+([^\s-]\S*)|$)`)

// reportPaths are the repository-relative report files the verify
// commands' argv name.
func reportPaths(verify []contract.Command) []string {
	var out []string
	add := func(p string) {
		p = strings.Trim(p, `"'`)
		if rest, ok := strings.CutPrefix(p, sandbox.WorkspaceDir+"/"); ok {
			p = rest
		}
		p = path.Clean(p)
		if contract.ValidatePath(p) == nil && !slices.Contains(out, p) && len(out) < junitMaxFiles {
			out = append(out, p)
		}
	}
	for _, c := range verify {
		for i, arg := range c.Argv {
			for _, m := range reportFlags.FindAllStringSubmatch(arg, -1) {
				switch {
				case m[1] != "":
					add(m[1])
				case m[2] != "":
					add(m[2])
				case i+1 < len(c.Argv) && strings.HasSuffix(arg, m[0]):
					add(c.Argv[i+1])
				}
			}
		}
	}
	return out
}

// collectReports reads the test reports in work written at or after
// since: those named by convention, and the files named (a path of the
// repository, none under a skipped directory). Each report's summary is
// one element; nil when there was no report.
func collectReports(ctx context.Context, work string, since time.Time, named []string, opts testreport.Options, log zerolog.Logger) []*contract.TestSummary {
	root, err := os.OpenRoot(work)
	if err != nil {
		log.Warn().Err(err).Msg("looking for test reports")
		return nil
	}
	defer root.Close()
	opts.IsFile = func(p string) bool {
		fi, err := root.Lstat(p)
		return err == nil && fi.Mode().IsRegular()
	}
	c := &junitCollector{ctx: ctx, root: root, since: since, log: log, opts: opts, read: map[string]bool{}}
	c.walk(".", 0)
	for _, p := range named {
		if c.stopped {
			break
		}
		if skipped(p) {
			continue
		}
		if fi, err := root.Lstat(p); err == nil && fi.Mode().IsRegular() {
			c.file(p)
		}
	}
	return c.sums
}

// skipped reports whether a repository path is in a directory the walk
// never enters.
func skipped(p string) bool {
	for dir := range strings.SplitSeq(path.Dir(p), "/") {
		if junitSkipDirs[dir] {
			return true
		}
	}
	return false
}

type junitCollector struct {
	ctx     context.Context
	root    *os.Root
	since   time.Time
	log     zerolog.Logger
	entries int
	files   int
	bytes   int64
	stopped bool // a cap was reached: no more reports are read
	opts    testreport.Options
	read    map[string]bool // reports read, by path
	sums    []*contract.TestSummary
}

func (c *junitCollector) stop(why string) {
	if !c.stopped {
		c.stopped = true
		c.log.Warn().Msg("test reports: " + why + "; the rest are not read")
	}
}

func (c *junitCollector) walk(dir string, depth int) {
	f, err := c.root.Open(dir)
	if err != nil {
		return
	}
	var ents []fs.DirEntry
	for {
		batch, err := f.ReadDir(256)
		ents = append(ents, batch...)
		c.entries += len(batch)
		if c.entries > junitMaxEntries {
			c.stop(fmt.Sprintf("the workspace has more than %d entries", junitMaxEntries))
			break
		}
		if err != nil {
			break
		}
	}
	f.Close()
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		if c.stopped {
			return
		}
		if c.ctx.Err() != nil {
			c.stop("out of time")
			return
		}
		name := e.Name()
		rel := path.Join(dir, name)
		switch t := e.Type(); {
		case t.IsDir():
			if !junitSkipDirs[name] && depth < junitMaxDepth {
				c.walk(rel, depth+1)
			}
		case t.IsRegular():
			if isJUnitName(name) {
				c.file(rel)
			}
		}
	}
}

func (c *junitCollector) file(rel string) {
	if c.read[rel] {
		return // named by a verify command and by the convention both
	}
	c.read[rel] = true
	b, err := c.readFile(rel)
	if err != nil {
		c.log.Warn().Str("file", rel).Str("error", err.Error()).Msg("test report not read")
		return
	}
	if b == nil {
		return
	}
	sum, err := testreport.FromReport(rel, b, c.opts)
	if err != nil {
		c.log.Warn().Str("file", rel).Str("error", err.Error()).Msg("test report ignored")
		return
	}
	c.sums = append(c.sums, sum)
	c.log.Info().Str("file", rel).Strs("runners", sum.Runners).Int("passed", sum.Passed).Int("failed", sum.Failed).Int("skipped", sum.Skipped).Msg("test report read")
}

// readFile returns a report's bytes, or nil and no error when it is older
// than the verify phase.
func (c *junitCollector) readFile(rel string) ([]byte, error) {
	f, err := c.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.ModTime().Before(c.since) {
		return nil, nil
	}
	if c.files >= junitMaxFiles {
		c.stop(fmt.Sprintf("more than %d reports", junitMaxFiles))
		return nil, nil
	}
	c.files++
	if fi.Size() > junitMaxFileBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d allowed", fi.Size(), junitMaxFileBytes)
	}
	if c.bytes+fi.Size() > junitMaxTotalBytes {
		return nil, fmt.Errorf("the reports exceed %d bytes in all", junitMaxTotalBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, junitMaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > junitMaxFileBytes || c.bytes+int64(len(b)) > junitMaxTotalBytes {
		return nil, errors.New("the report grew while it was read")
	}
	c.bytes += int64(len(b))
	return b, nil
}
