package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// testOnly are the functions only tests and test support may call, each
// with what production code does instead.
var testOnly = []struct{ pkg, name, instead string }{
	// It holds a session in any state without the table's transitions
	// (decision 0045).
	{"store", "Fixture", "move a session with Move or End, which the store checks"},
	// It writes fates and the rollup without the events that make them
	// (decisions 0074, 0075).
	{"store", "OutcomesFixture", "change a fate with ApplyFateEvent, which keeps the rollup in its transaction"},
	// It shares one Go build cache between sessions, which would let one
	// session plant compiled code another runs.
	{"supervisor", "UseSharedGoCache", "each session keeps its own caches (a snapshot's, or none)"},
}

// TestTestOnlyFunctionsStayInTests: no production file calls a testOnly
// function, from outside its package or inside it.
func TestTestOnlyFunctionsStayInTests(t *testing.T) {
	productionFiles(t, func(_ string, fset *token.FileSet, f *ast.File) {
		for _, fn := range testOnly {
			for _, at := range callsOf(f, fn.pkg, fn.name) {
				t.Errorf("%s: %s.%s outside a test: %s", fset.Position(at), fn.pkg, fn.name, fn.instead)
			}
		}
	})
}

// callsOf finds the uses of pkg.name in f: a selector on the package from
// outside it, or the bare name inside it.
func callsOf(f *ast.File, pkg, name string) []token.Pos {
	var at []token.Pos
	inside := f.Name.Name == pkg
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == pkg && n.Sel.Name == name {
				at = append(at, n.Pos())
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && inside && id.Name == name {
				at = append(at, n.Pos())
			}
		}
		return true
	})
	return at
}

// The rule bites: a production file calling a testOnly function, from
// either side of its package, is found.
func TestTheTestOnlyRuleBites(t *testing.T) {
	for name, src := range map[string]string{
		"store outside":      "package app\nfunc f(s store.Session) { _ = store.Fixture(\"done\", s) }\n",
		"store inside":       "package store\nfunc f(s Session) { _ = Fixture(\"done\", s) }\n",
		"supervisor outside": "package main\nfunc f() { supervisor.UseSharedGoCache(\"/tmp/c\") }\n",
		"supervisor inside":  "package supervisor\nfunc f() { UseSharedGoCache(\"/tmp/c\") }\n",
	} {
		f, err := parser.ParseFile(token.NewFileSet(), name+".go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, fn := range testOnly {
			found += len(callsOf(f, fn.pkg, fn.name))
		}
		if found != 1 {
			t.Errorf("%s: found %d calls, want 1", name, found)
		}
	}
	clean, err := parser.ParseFile(token.NewFileSet(), "clean.go", "package app\nfunc f(s *store.Session) error { return s.Move(session.Admit) }\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := callsOf(clean, "store", "Fixture"); len(got) != 0 {
		t.Errorf("a Move was taken for a fixture: %d", len(got))
	}
}
