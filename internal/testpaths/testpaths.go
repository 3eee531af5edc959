// Package testpaths is the table the one test-file rule
// (policy.IsTestFile) is held to: paths of Go, JavaScript and TypeScript,
// Python, Java and Kotlin, Ruby and a few other projects, each with the
// answer the rule must give. The rule's own test, the PR body's (through
// config.Repo.CheckChange and render.PRBody) and `inspect run`'s summary
// (through the supervisor's diffstat) all read it, so the two places that
// flag test files cannot drift apart again (decision 0047).
//
// Every path is one a change can carry, and no path is a directory of
// another, so a test can write them all into one checkout.
package testpaths

// Path is one row: a path and whether it is a test file.
type Path struct {
	Path string
	Test bool
	// Sample marks the twelve paths issue 31 compared the two old rules
	// on; they disagreed on all but calc_test.go and docs/latest.md.
	Sample bool
}

// Table is every row, grouped by ecosystem.
var Table = []Path{
	// The twelve samples.
	{"conftest.py", true, true},                   // pytest's shared fixtures
	{"e2e/login.ts", true, true},                  // an end-to-end suite's directory
	{"__snapshots__/Button.tsx.snap", true, true}, // Jest's snapshots
	{"internal/report/pr.golden", true, true},     // Go's golden files, wherever they are
	{"foo-test.js", true, true},                   // a JavaScript test named with a hyphen
	{"FooIT.java", true, true},                    // failsafe's integration tests
	{"Latest.java", false, true},                  // ends in "test", but not as a word
	{"Contest.kt", false, true},                   // likewise
	{"src/__mocks__/api.js", true, true},          // Jest's manual mocks
	{"cypress/e2e/login.cy.ts", true, true},       // Cypress's specs
	{"pkg/calc_test.go", true, true},              // both old rules knew this one
	{"docs/latest.md", false, true},               // and this one

	// Go.
	{"calc_test.go", true, false},
	{"pkg/testdata/in.json", true, false},
	{"pkg/testdata/golden/out.txt", true, false},
	{"main.go", false, false},
	{"latest.go", false, false},
	{"testify.go", false, false},
	{"latest/x.go", false, false},
	{"testing/x.go", false, false},
	{"src/testutil.go", false, false},
	{"test.go", false, false},
	{"pkg/spectest/x.go", false, false},
	{"xTest.go", false, false},

	// JavaScript and TypeScript.
	{"src/a.test.js", true, false},
	{"src/a.test.ts", true, false},
	{"src/a.test.jsx", true, false},
	{"src/Button.test.tsx", true, false},
	{"src/a.test.mjs", true, false},
	{"src/a.spec.js", true, false},
	{"src/a.spec.ts", true, false},
	{"app.e2e-spec.ts", true, false},
	{"src/__tests__/a.js", true, false},
	{"src/a.snap", true, false},
	{"src/Button.cy.tsx", true, false},
	{"test/a.js", true, false},
	{"attest.ts", false, false},
	{"manifest.json", false, false},
	{"a.testing.js", false, false},
	{"src/index.ts", false, false},

	// Python.
	{"tests/test_x.py", true, false},
	{"test_x.py", true, false},
	{"pkg/x_test.py", true, false},
	{"pkg/conftest.py", true, false},
	{"TEST_upper.py", true, false},
	{"contest.py", false, false},
	{"contest/a.py", false, false},
	{"pkg/protest.py", false, false},

	// Java and Kotlin (and the JVM's other languages).
	{"src/test/java/com/x/FooTest.java", true, false},
	{"FooTest.java", true, false},
	{"FooTests.java", true, false},
	{"FooTestCase.java", true, false}, // JUnit 3's naming
	{"Foo2IT.java", true, false},
	{"TestFoo.java", true, false},
	{"Test.java", true, false},
	{"Test2.java", true, false},
	{"FooTest.kt", true, false},
	{"FooTests.kt", true, false},
	{"app/src/androidTest/x/Y.kt", true, false},
	{"lib/src/testFixtures/x/Y.java", true, false},
	{"FooSpec.groovy", true, false},
	{"FooSuite.scala", true, false},
	{"src/main/java/com/x/Foo.java", false, false},
	{"AUDIT.java", false, false},
	{"EDIT.java", false, false},
	{"IT.java", false, false},
	{"Spectrum.java", false, false},
	{"Testimony.java", false, false},
	{"Testing.java", false, false},
	{"FooTest.md", false, false},
	{"FooIT.txt", false, false},

	// Ruby.
	{"spec/models/user_spec.rb", true, false},
	{"user_spec.rb", true, false},
	{"test/user_test.rb", true, false},
	{"lib/user_test.rb", true, false},
	{"specs/x.rb", true, false},
	{"lib/protest.rb", false, false},
	{"app/models/user.rb", false, false},
	{"spec.md", false, false},
	{"docs/spec.md", false, false},

	// Others: .NET, Swift, PHP, C and C++, Rust, Perl, Dart.
	{"FooTests.cs", true, false},
	{"Tests/AppTests/FooTests.swift", true, false},
	{"FooTest.php", true, false},
	{"foo_test.cc", true, false},
	{"foo_unittest.cc", true, false},
	{"test_foo.c", true, false},
	{"tests/it.rs", true, false},
	{"src/tests.rs", true, false},
	{"t/basic.t", true, false},
	{"x_test.dart", true, false},
	{"Test/x.cs", true, false},
	{"TESTS/x", true, false},
	{"Spec/x", true, false},
	{"testimony.md", false, false},
	{"app.test", false, false},
	{"x.tests", false, false},
}
