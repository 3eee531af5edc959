package supervisor

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// JUnit XML reports are found by convention, after the verify commands
// ran, by the supervisor outside the sandbox: a regular file of the
// workspace named TEST-*.xml (Maven Surefire, Gradle) or whose name
// contains "junit" and ends in .xml (pytest --junitxml=junit.xml,
// jest-junit's junit.xml, gotestsum --junitfile), at most junitMaxDepth
// directories deep, outside .git, .inspect and node_modules, and written
// at or after the start of the verify phase (its mtime), so that reports
// committed to the repository do not count.
//
// The workspace is the agent's: no symlink is followed (directories are
// entered by their entry type, files opened through an os.Root with
// O_NOFOLLOW and checked to be regular with fstat), and the size, number
// and walk of the reports are capped. A report that does not parse gives
// no results and is logged; it never fails the attempt. The results are
// only as trustworthy as the test run that wrote them: the agent changed
// the code that ran, and could have written a report with a fresh mtime
// itself.
//
// From <testsuites>/<testsuite>/<testcase> (suites may nest), a testcase
// with <failure> or <error> failed, one with <skipped> was skipped, any
// other passed. A failure is named classname.name (name alone when there is
// no classname or both are the same, as jest-junit writes them). Its file
// and line come from the testcase's file and line attributes when present
// (pytest's xunit1 family; pytest's line is 0-based), a line of that file
// named in the failure text taking precedence, or else from the first
// path:line in the failure text that names a regular file of the
// workspace. Its message is the failure's message attribute (its text when
// there is none), capped at junitMaxMessage.
const (
	junitMaxDepth      = 6
	junitMaxFileBytes  = 8 << 20
	junitMaxTotalBytes = 32 << 20
	junitMaxFiles      = 200
	junitMaxEntries    = 200_000 // directory entries the walk reads in all
	junitMaxMessage    = 1 << 10
	junitMaxName       = 1 << 10
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

// collectJUnit reads the JUnit reports in work written at or after since,
// and returns their results, or nil when there was no report.
func collectJUnit(ctx context.Context, work string, since time.Time, log zerolog.Logger) *contract.TestSummary {
	root, err := os.OpenRoot(work)
	if err != nil {
		log.Warn().Err(err).Msg("looking for JUnit reports")
		return nil
	}
	defer root.Close()
	c := &junitCollector{ctx: ctx, root: root, since: since, log: log}
	c.walk(".", 0)
	if !c.seen {
		return nil
	}
	return &c.sum
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
	seen    bool // at least one report parsed
	sum     contract.TestSummary
}

func (c *junitCollector) stop(why string) {
	if !c.stopped {
		c.stopped = true
		c.log.Warn().Msg("JUnit reports: " + why + "; the rest are not read")
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
	b, err := c.read(rel)
	if err != nil {
		c.log.Warn().Str("file", rel).Str("error", err.Error()).Msg("JUnit report not read")
		return
	}
	if b == nil {
		return
	}
	sum, err := parseJUnit(b, c.isFile)
	if err != nil {
		c.log.Warn().Str("file", rel).Str("error", err.Error()).Msg("JUnit report ignored")
		return
	}
	c.seen = true
	c.sum = *mergeTests(&c.sum, sum)
	c.log.Info().Str("file", rel).Int("passed", sum.Passed).Int("failed", sum.Failed).Int("skipped", sum.Skipped).Msg("JUnit report read")
}

// read returns a report's bytes, or nil and no error when it is older than
// the verify phase.
func (c *junitCollector) read(rel string) ([]byte, error) {
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

// isFile reports whether a repository-relative path is a regular file of
// the workspace (not through a symlink).
func (c *junitCollector) isFile(p string) bool {
	fi, err := c.root.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

type junitSuite struct {
	XMLName xml.Name
	Name    string       `xml:"name,attr"`
	Suites  []junitSuite `xml:"testsuite"`
	Cases   []junitCase  `xml:"testcase"`
}

type junitCase struct {
	Name      string         `xml:"name,attr"`
	Classname string         `xml:"classname,attr"`
	File      string         `xml:"file,attr"`
	Line      string         `xml:"line,attr"`
	Failures  []junitProblem `xml:"failure"`
	Errors    []junitProblem `xml:"error"`
	Skipped   *struct{}      `xml:"skipped"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// parseJUnit reads one report. isFile says whether a repository-relative
// path is a file of the workspace, for failures' locations.
func parseJUnit(b []byte, isFile func(string) bool) (*contract.TestSummary, error) {
	var root junitSuite
	if err := xml.NewDecoder(bytes.NewReader(b)).Decode(&root); err != nil {
		return nil, err
	}
	if l := root.XMLName.Local; l != "testsuites" && l != "testsuite" {
		return nil, fmt.Errorf("the root element is <%s>, not <testsuites> or <testsuite>", cleanLine(l))
	}
	sum := &contract.TestSummary{}
	addJUnitSuite(sum, &root, false, isFile)
	return sum, nil
}

func addJUnitSuite(sum *contract.TestSummary, s *junitSuite, pytest bool, isFile func(string) bool) {
	pytest = pytest || s.XMLName.Local == "testsuite" && s.Name == "pytest"
	for i := range s.Cases {
		c := &s.Cases[i]
		var p *junitProblem
		switch {
		case len(c.Failures) > 0:
			p = &c.Failures[0]
		case len(c.Errors) > 0:
			p = &c.Errors[0]
		case c.Skipped != nil:
			sum.Skipped++
			continue
		default:
			sum.Passed++
			continue
		}
		sum.Failed++
		if len(sum.Failures) >= contract.MaxTestFailures {
			continue
		}
		sum.Failures = append(sum.Failures, junitFailure(c, p, pytest, isFile))
	}
	for i := range s.Suites {
		addJUnitSuite(sum, &s.Suites[i], pytest, isFile)
	}
}

func junitFailure(c *junitCase, p *junitProblem, pytest bool, isFile func(string) bool) contract.TestFailure {
	name := c.Name
	if c.Classname != "" && c.Classname != c.Name {
		name = c.Classname + "." + c.Name
	}
	name = cleanText(cleanLine(name), junitMaxName)
	if name == "" {
		name = "(unnamed test)"
	}
	msg := strings.TrimSpace(p.Message)
	if msg == "" {
		msg = strings.TrimSpace(p.Text)
	}
	f := contract.TestFailure{Name: name, Message: cleanText(msg, junitMaxMessage)}
	f.File, f.Line = junitLocation(c, p.Text, pytest, isFile)
	return f
}

// textLocation finds "path/to/file.ext:12" in failure text: pytest's
// "tests/test_calc.py:5: AssertionError", a stack frame's
// "(/workspace/src/sum.test.js:5:20)".
var textLocation = regexp.MustCompile(`(?m)(?:^|[\s("'\[])(/?(?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_.\-]+\.[A-Za-z0-9]+):(\d+)`)

func junitLocation(c *junitCase, text string, pytest bool, isFile func(string) bool) (string, int) {
	if len(text) > 64<<10 {
		text = text[:64<<10]
	}
	type loc struct {
		file string
		line int
	}
	var hits []loc
	for _, m := range textLocation.FindAllStringSubmatch(text, 16) {
		p := repoPath(m[1])
		n, err := strconv.Atoi(m[2])
		if p == "" || err != nil || n <= 0 || !isFile(p) {
			continue
		}
		hits = append(hits, loc{p, n})
	}
	if file := repoPath(c.File); file != "" && isFile(file) {
		for _, h := range hits {
			if h.file == file {
				return file, h.line
			}
		}
		n, err := strconv.Atoi(strings.TrimSpace(c.Line))
		if err != nil || n < 0 {
			return file, 0
		}
		if pytest {
			n++
		}
		return file, n
	}
	if len(hits) > 0 {
		return hits[0].file, hits[0].line
	}
	return "", 0
}

// repoPath makes a path from a report repository-relative, or "" when it
// cannot be one. Absolute paths count only inside the sandbox's workspace.
func repoPath(p string) string {
	if rest, ok := strings.CutPrefix(p, sandbox.WorkspaceDir+"/"); ok {
		p = rest
	} else if strings.HasPrefix(p, "/") {
		return ""
	}
	p = strings.TrimPrefix(p, "./")
	if p == "" || contract.ValidatePath(p) != nil {
		return ""
	}
	return p
}

// mergeTests adds b's results to a's; either may be nil. The failures
// listed stay within contract.MaxTestFailures; the counts stay exact.
func mergeTests(a, b *contract.TestSummary) *contract.TestSummary {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	s := contract.TestSummary{
		Passed:   a.Passed + b.Passed,
		Failed:   a.Failed + b.Failed,
		Skipped:  a.Skipped + b.Skipped,
		Failures: append(slices.Clip(a.Failures), b.Failures...),
	}
	if len(s.Failures) > contract.MaxTestFailures {
		s.Failures = s.Failures[:contract.MaxTestFailures]
	}
	if len(s.Failures) == 0 {
		s.Failures = nil
	}
	return &s
}
