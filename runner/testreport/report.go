package testreport

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// FromReport reads one report file a verify command wrote: JUnit XML
// (which runner wrote it is told from its shape, for Combine) or jest's
// --json report. name is the file's name, data its bytes.
func FromReport(name string, data []byte, opts Options) (*contract.TestSummary, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	switch {
	case strings.HasSuffix(strings.ToLower(name), ".json") || bytes.HasPrefix(trimmed, []byte("{")):
		return parseJestJSON(data, opts)
	case bytes.HasPrefix(trimmed, []byte("<")):
		return parseJUnit(data, opts)
	}
	return nil, errors.New("neither JUnit XML nor a jest --json report")
}

type junitSuite struct {
	XMLName    xml.Name
	Name       string          `xml:"name,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Suites     []junitSuite    `xml:"testsuite"`
	Cases      []junitCase     `xml:"testcase"`
	Properties []junitProperty `xml:"properties>property"`
}

type junitProperty struct {
	Name string `xml:"name,attr"`
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

// parseJUnit reads one JUnit report. From <testsuites>/<testsuite>/
// <testcase> (suites may nest), a testcase with <failure> or <error>
// failed, one with <skipped> was skipped, any other passed. A test is
// named classname.name (name alone when there is no classname or both are
// the same, as jest-junit writes them). A failure's file and line come
// from the testcase's file and line attributes when present (pytest's
// xunit1 family; pytest's line is 0-based), a line of that file named in
// the failure text taking precedence, or else from the first path:line in
// the failure text that names a regular file of the workspace. Its
// message is the failure's message attribute (its text when there is
// none).
func parseJUnit(data []byte, opts Options) (*contract.TestSummary, error) {
	var root junitSuite
	if err := xml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		return nil, err
	}
	if l := root.XMLName.Local; l != "testsuites" && l != "testsuite" {
		return nil, fmt.Errorf("the root element is <%s>, not <testsuites> or <testsuite>", cleanName(l))
	}
	b := newBuilder(junitRunner(&root), opts)
	b.recognised = true
	addJUnitSuite(b, &root, false, nil)
	return b.summary(), nil
}

// junitRunner tells which runner wrote a report, by what each writes:
// pytest a <testsuite name="pytest">, jest-junit <testsuites name="jest
// tests">, node --test testcases all of classname "test" in suites with a
// hostname, gotestsum a go.version property.
func junitRunner(root *junitSuite) Runner {
	if root.XMLName.Local == "testsuites" && root.Name == "jest tests" {
		return JestJUnit
	}
	var suites []*junitSuite
	var walk func(s *junitSuite)
	walk = func(s *junitSuite) {
		suites = append(suites, s)
		for i := range s.Suites {
			walk(&s.Suites[i])
		}
	}
	walk(root)
	node, cases := true, 0
	for _, s := range suites {
		if s.XMLName.Local == "testsuite" && s.Name == "pytest" {
			return PytestJUnit
		}
		if slices.ContainsFunc(s.Properties, func(p junitProperty) bool { return p.Name == "go.version" }) {
			return GoJUnit
		}
		if s.XMLName.Local == "testsuite" && s.Hostname == "" && len(s.Cases) > 0 {
			node = false
		}
		for _, c := range s.Cases {
			cases++
			if c.Classname != "test" {
				node = false
			}
		}
	}
	if node && cases > 0 {
		return NodeJUnit
	}
	return JUnit
}

// addJUnitSuite adds a suite's cases. path is the names of the suites
// it is in, itself included, for node --test's reports, which name a test
// as its TAP does ("suite > test"; their classname is always "test").
func addJUnitSuite(b *builder, s *junitSuite, pytest bool, path []string) {
	pytest = pytest || s.XMLName.Local == "testsuite" && s.Name == "pytest"
	if s.XMLName.Local == "testsuite" && len(path) < 64 {
		path = append(slices.Clip(path), strings.TrimSpace(s.Name))
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		name := strings.TrimSpace(c.Name)
		if b.runner == NodeJUnit {
			name = strings.Join(append(slices.Clip(path), name), " > ")
		} else if cl := strings.TrimSpace(c.Classname); cl != "" && cl != name {
			name = cl + "." + name
		}
		var p *junitProblem
		switch {
		case len(c.Failures) > 0:
			p = &c.Failures[0]
		case len(c.Errors) > 0:
			p = &c.Errors[0]
		case c.Skipped != nil:
			b.add(name, contract.TestSkipped)
			continue
		default:
			b.add(name, contract.TestPassed)
			continue
		}
		if !b.add(name, contract.TestFailed) {
			continue
		}
		msg := strings.TrimSpace(p.Message)
		if msg == "" {
			msg = strings.TrimSpace(p.Text)
		}
		file, line := junitLocation(b.opts, c, p.Text, pytest)
		b.detail(name, file, line, msg)
	}
	for i := range s.Suites {
		addJUnitSuite(b, &s.Suites[i], pytest, path)
	}
}

func junitLocation(opts Options, c *junitCase, text string, pytest bool) (string, int) {
	hits := opts.locations(text)
	if file := opts.repoPath(c.File); file != "" && opts.IsFile != nil && opts.IsFile(file) {
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
