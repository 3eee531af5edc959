package app

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
)

// storeWorkKinds reads every WorkKind constant app/store declares, from its
// source, so a kind added there without a handler fails here.
func storeWorkKinds(t *testing.T) []store.WorkKind {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("store", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []store.WorkKind
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "WorkKind" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a WorkKind that is not a string literal: %T", fset.Position(v.Pos()), v)
					}
					kind, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					kinds = append(kinds, store.WorkKind(kind))
				}
			}
		}
	}
	return kinds
}

func TestWorkTableHasExactlyOneHandlerForEveryStoreKind(t *testing.T) {
	kinds := storeWorkKinds(t)
	// The eleven kinds app/store declared when the table was built: the
	// parse above must find at least these, or it reads nothing.
	for _, k := range []store.WorkKind{store.PrepareSession, store.PostReply, store.RefreshRepoConfig, store.RunCommand,
		store.SyncSession, store.DispatchSession, store.ReportSession, store.CollectResult, store.BuildSnapshot,
		store.ConsiderRepair, store.CollectSnapshots} {
		if !slices.Contains(kinds, k) {
			t.Fatalf("reading app/store's source found no kind %q (found %v)", k, kinds)
		}
	}
	table := workTable(NewService(Options{}))
	seen := map[store.WorkKind]bool{}
	for _, k := range kinds {
		if seen[k] {
			t.Errorf("app/store declares the kind %q twice", k)
		}
		seen[k] = true
		if table[k] == nil {
			t.Errorf("no handler for the work kind %q", k)
		}
	}
	for k := range table {
		if !seen[k] {
			t.Errorf("a handler for %q, which app/store does not declare", k)
		}
	}
}

func TestUnknownWorkKindFails(t *testing.T) {
	s := NewService(Options{})
	err := s.runWork(context.Background(), &store.Work{ID: 1, Kind: "from_a_newer_replica"})
	if err == nil || err.Error() != `unknown work kind "from_a_newer_replica"` {
		t.Fatalf("runWork of an unknown kind: %v, want the unknown-kind error", err)
	}
}
