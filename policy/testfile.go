package policy

import (
	"slices"
	"strings"
)

// IsTestFile reports whether a path looks like a test, a test fixture or a
// test snapshot, so that reviewers see when a change edits what checks it.
// It is the one test-file rule: the policy's change summary (the PR body's
// flags) and the supervisor's diffstat (`inspect run`'s summary, the
// evidence) both ask it (decision 0047). It errs towards yes: a wrong flag
// costs a glance, a missed one can hide a weakened test. It recognises:
//
//   - a directory named test, tests, __tests__, spec, specs, testdata,
//     __snapshots__, __mocks__, __fixtures__, e2e, cypress, androidTest or
//     testFixtures anywhere above the file (ignoring ASCII case: Swift's
//     Tests/, Maven's src/test/);
//   - `.test.`, `.spec.` or `.cy.` in the name (`a.test.ts`, `a.spec.js`,
//     `a.test.mjs`, Cypress's `Button.cy.tsx`);
//   - a name before its extension ending in `_test`, `_tests`, `_spec`,
//     `_unittest`, `-test`, `-tests` or `-spec` (Go, Python, Ruby, C++,
//     Dart, `foo-test.js`, Angular's `.e2e-spec.ts`), or starting with
//     `test_` or `test-` (Python, C);
//   - `conftest.py`, Rust's `tests.rs`, Perl's `*.t`, Jest's `*.snap` and
//     Go's `*.golden`;
//   - for JVM, .NET, Swift, PHP and Objective-C sources, a name before the
//     extension ending in `Test`, `Tests`, `TestCase`, `Spec`, `Specs` or
//     `Suite`, or in `IT` after a lower-case letter or digit (failsafe's
//     integration tests, but not `AUDIT`), or starting with `Test` then an
//     upper-case letter or digit. These are case-sensitive, so the suffix
//     starts a word: `Latest.java` and `Contest.kt` are not tests.
func IsTestFile(path string) bool {
	name := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		name = path[i+1:]
		for c := range strings.SplitSeq(path[:i], "/") {
			for _, d := range testDirs {
				if asciiEqualFold(c, d) {
					return true
				}
			}
		}
	}
	for _, infix := range testInfixes {
		if strings.Contains(name, infix) {
			return true
		}
	}
	stem, ext := name, ""
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		stem, ext = name[:i], name[i+1:]
	}
	switch {
	case ext == "snap" || ext == "golden" || ext == "t":
		return true
	case name == "conftest.py" || name == "tests.rs":
		return true
	case hasPrefixFold(stem, "test_") || hasPrefixFold(stem, "test-"):
		return true
	}
	for _, s := range testSuffixes {
		if hasSuffixFold(stem, s) {
			return true
		}
	}
	if !slices.Contains(camelTestExts, ext) {
		return false
	}
	for _, s := range camelTestSuffixes {
		if strings.HasSuffix(stem, s) {
			return true
		}
	}
	if len(stem) > 2 && strings.HasSuffix(stem, "IT") {
		if c := stem[len(stem)-3]; (c >= 'a' && c <= 'z') || isASCIIDigit(c) {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(stem, "Test"); ok {
		return rest == "" || (rest[0] >= 'A' && rest[0] <= 'Z') || isASCIIDigit(rest[0])
	}
	return false
}

var (
	testDirs = [...]string{"test", "tests", "__tests__", "spec", "specs", "testdata",
		"__snapshots__", "__mocks__", "__fixtures__", "e2e", "cypress", "androidTest", "testFixtures"}
	testInfixes       = [...]string{".test.", ".spec.", ".cy."}
	testSuffixes      = [...]string{"_test", "_tests", "_spec", "_unittest", "-test", "-tests", "-spec"}
	camelTestSuffixes = [...]string{"Test", "Tests", "TestCase", "Spec", "Specs", "Suite"}
	camelTestExts     = []string{"java", "kt", "kts", "scala", "groovy", "cs", "fs", "vb", "swift", "php", "m", "mm"}
)

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && asciiEqualFold(s[:len(prefix)], prefix)
}
