package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestFixturesStayInTests: store.Fixture holds a session in any state
// without the table's transitions (decision 0045), so only tests and test
// support call it; production code moves a session with Move and End,
// which the store checks.
func TestFixturesStayInTests(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if isTestSupport(filepath.ToSlash(filepath.Dir(rel))) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, at := range fixtureCalls(f) {
			t.Errorf("%s: store.Fixture outside a test: move a session with Move or End, which the store checks", fset.Position(at))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d files; want the whole module's", files)
	}
}

// fixtureCalls finds the uses of store.Fixture in f: a selector on the
// store package from outside it, or the bare name inside it.
func fixtureCalls(f *ast.File) []token.Pos {
	var at []token.Pos
	inStore := f.Name.Name == "store"
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "store" && n.Sel.Name == "Fixture" {
				at = append(at, n.Pos())
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && inStore && id.Name == "Fixture" {
				at = append(at, n.Pos())
			}
		}
		return true
	})
	return at
}

// The rule bites: a production file calling store.Fixture, from either
// side of the package, is found.
func TestTheFixtureRuleBites(t *testing.T) {
	for name, src := range map[string]string{
		"outside": "package app\nfunc f(s store.Session) { _ = store.Fixture(\"done\", s) }\n",
		"inside":  "package store\nfunc f(s Session) { _ = Fixture(\"done\", s) }\n",
	} {
		f, err := parser.ParseFile(token.NewFileSet(), name+".go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := fixtureCalls(f); len(got) != 1 {
			t.Errorf("%s: found %d calls, want 1", name, len(got))
		}
	}
	clean, err := parser.ParseFile(token.NewFileSet(), "clean.go", "package app\nfunc f(s *store.Session) error { return s.Move(session.Admit) }\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fixtureCalls(clean); len(got) != 0 {
		t.Errorf("a Move was taken for a fixture: %d", len(got))
	}
}
