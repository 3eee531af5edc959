package layers

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// targetFieldsMayBeRead are the files that may read a target's stored
// fields (IsPR) directly, and why; everything else asks session.Target.
var targetFieldsMayBeRead = map[string]string{
	"session/trigger.go":       "Trigger.Target and SetTarget are the fields' one reader and writer",
	"session/target.go":        "the Target methods themselves",
	"app/store/sessions.go":    "the sessions row's is_pr column, read and written",
	"app/store/triggerinfo.go": "Session.Target reads the row's fields",
	"policy/authorize.go":      "policy sits below session: its facts carry IsPR, filled from Target by the app",
	"policy/destination.go":    "policy sits below session: its facts carry IsPR, filled from Target by the app",
}

// TestTargetIsAskedOnlyOfSessionTarget: whether a session works on an
// issue, a pull request or a branch is asked of session.Target's methods,
// never of the IsPR field or a TargetBranch accessor, outside the files
// above (the issue that made the session one noun).
func TestTargetIsAskedOnlyOfSessionTarget(t *testing.T) {
	root := productionFiles(t, func(rel string, fset *token.FileSet, f *ast.File) {
		if _, ok := targetFieldsMayBeRead[rel]; ok {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "contract" {
				return true // contract.TargetBranch is the spec's target kind, which buildSpec sets from Target
			}
			// A session row's branch is Target's to read: Info().Branch
			// is the stored field behind it.
			if call, ok := sel.X.(*ast.CallExpr); ok && sel.Sel.Name == "Branch" {
				if fn, ok := call.Fun.(*ast.SelectorExpr); ok && fn.Sel.Name == "Info" {
					t.Errorf("%s: Info().Branch: ask session.Target (IsBranch, BranchName) instead", fset.Position(sel.Sel.Pos()))
				}
			}
			if sel.Sel.Name == "IsPR" || sel.Sel.Name == "TargetBranch" {
				t.Errorf("%s: .%s: ask session.Target (IsPullRequest, IsBranch, HasThread, …) instead", fset.Position(sel.Sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	})
	// The dashboard's templates ask the same questions.
	templates, err := filepath.Glob(filepath.Join(root, "app", "web", "templates", "*.html"))
	if err != nil || len(templates) == 0 {
		t.Fatalf("no dashboard templates found (%v)", err)
	}
	for _, tpl := range templates {
		data, err := os.ReadFile(tpl)
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{".IsPR", ".TargetBranch", ".Info.Branch"} {
			if strings.Contains(string(data), field) {
				t.Errorf("%s reads %s: ask .Target (IsPullRequest, IsBranch, HasThread, BranchName) instead", tpl, field)
			}
		}
	}
	for rel := range targetFieldsMayBeRead {
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			t.Errorf("the list names %s: %v", rel, err)
		}
	}
}
