package layers

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The app root is the wiring (issue 31, decision 0049): the engine's steps
// live in handlers of their own, each handed what it needs, so the root
// stays small and the Service is not a hub again.
const (
	maxServiceMethods = 40
	maxAppRootLines   = 3500
)

func TestTheAppRootStaysTheWiring(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "app"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	methods, lines, read := 0, 0, 0
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		read++
		lines += bytes.Count(src, []byte("\n"))
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		methods += len(serviceMethods(f))
	}
	if read < 10 {
		t.Fatalf("read %d files of app/; want the root's", read)
	}
	if methods > maxServiceMethods {
		t.Errorf("app.Service has %d methods, more than %d: give a step its own handler with what it needs (decision 0049)", methods, maxServiceMethods)
	}
	if lines > maxAppRootLines {
		t.Errorf("the app root has %d non-test lines, more than %d: a step that grew belongs in a room of its own (decision 0049)", lines, maxAppRootLines)
	}
}

// serviceMethods are the names of f's methods on Service or *Service.
func serviceMethods(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
			continue
		}
		typ := fn.Recv.List[0].Type
		if star, ok := typ.(*ast.StarExpr); ok {
			typ = star.X
		}
		if id, ok := typ.(*ast.Ident); ok && id.Name == "Service" {
			names = append(names, fn.Name.Name)
		}
	}
	return names
}

// The count bites: both receiver forms are counted, other types' are not.
func TestServiceMethodsCountsBothReceivers(t *testing.T) {
	src := "package app\nfunc (s *Service) a() {}\nfunc (s Service) b() {}\nfunc (d *dash) c() {}\nfunc d() {}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := serviceMethods(f); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("serviceMethods = %v, want [a b]", got)
	}
}
