package policy

import (
	"testing"

	"github.com/inspecthq/inspect/internal/testpaths"
)

// The shared table (decision 0047), which the PR body's and `inspect
// run`'s tests read too, and its twelve samples.
func TestIsTestFileTable(t *testing.T) {
	samples := 0
	for _, p := range testpaths.Table {
		if got := IsTestFile(p.Path); got != p.Test {
			t.Errorf("IsTestFile(%q) = %v, want %v", p.Path, got, p.Test)
		}
		if p.Sample {
			samples++
		}
	}
	if samples != 12 {
		t.Errorf("%d samples, want the issue's twelve", samples)
	}
}

func TestIsTestFile(t *testing.T) {
	yes := []string{
		// Go
		"pkg/x_test.go", "x_test.go", "pkg/testdata/in.json", "pkg/testdata/golden/out.txt", "pkg/x.golden",
		// Python
		"tests/test_x.py", "test_x.py", "pkg/x_test.py", "conftest.py", "pkg/conftest.py", "TEST_upper.py",
		// JavaScript, TypeScript
		"src/a.test.js", "src/a.test.ts", "src/a.test.jsx", "src/a.test.tsx", "src/a.test.mjs",
		"src/a.spec.js", "src/a.spec.ts", "app.e2e-spec.ts", "src/__tests__/a.js", "src/__snapshots__/a.js.snap",
		"src/a.snap", "src/__mocks__/fs.js", "e2e/login.ts", "test/a.js", "a-test.js",
		"cypress/e2e/login.cy.ts", "cypress/support/commands.js", "src/Button.cy.tsx",
		// JVM, .NET, Swift, PHP
		"src/test/java/com/x/FooTest.java", "FooTest.java", "FooTests.java", "FooTestCase.java", "FooIT.java",
		"Foo2IT.java", "TestFoo.java", "Test.java", "Test2.java", "FooTest.kt", "FooSpec.groovy", "FooSuite.scala",
		"FooSpec.scala", "FooTests.cs", "Tests/AppTests/FooTests.swift", "FooTest.php", "app/src/androidTest/x/Y.kt",
		"lib/src/testFixtures/x/Y.java",
		// Ruby
		"spec/models/user_spec.rb", "user_spec.rb", "test/user_test.rb", "specs/x.rb",
		// C, C++, Rust, Perl, Dart
		"foo_test.cc", "foo_unittest.cc", "test_foo.c", "tests/it.rs", "src/tests.rs", "t/basic.t", "x_test.dart",
		// directories in other cases
		"Test/x.cs", "TESTS/x", "Spec/x",
	}
	no := []string{
		"", "main.go", "latest.go", "contest.py", "protest.rb", "attest.ts", "manifest.json", "testify.go",
		"testimony.md", "Latest.java", "Contest.kt", "AUDIT.java", "EDIT.java", "Spectrum.java", "Testimony.java",
		"Testing.java", "spec.md", "docs/spec.md", "latest/x.go", "contest/a.py", "testing/x.go", "src/testutil.go",
		"test", "tests", "FooTest.md", "FooIT.txt", "app.test", "x.tests", ".test", "test.go", "pkg/spectest/x.go",
		"a.testing.js", "IT.java", "xIT.txt", "xTest.go",
	}
	for _, p := range yes {
		if !IsTestFile(p) {
			t.Errorf("IsTestFile(%q) = false, want true", p)
		}
	}
	for _, p := range no {
		if IsTestFile(p) {
			t.Errorf("IsTestFile(%q) = true, want false", p)
		}
	}
}
