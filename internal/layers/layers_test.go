// Package layers holds one test: the arrows between the top-level packages
// that docs/ARCHITECTURE.md ("Packages", "Where things live") forbids. It
// reads each package's direct, non-test imports with go/build, so an arrow
// that comes back fails here, naming the file's package and the import,
// before a reviewer has to spot it.
package layers

import (
	"errors"
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/inspecthq/inspect/"

// rule says which of a package's imports are forbidden, and why.
type rule struct {
	// applies reports whether the rule is about the package (a path
	// relative to the module root, "app/store").
	applies func(pkg string) bool
	// forbidden reports whether one import breaks the rule: imp is the
	// import path, relative to the module root when it is the module's
	// own ("runner/local"), else as written ("github.com/rs/zerolog").
	forbidden func(imp string, own bool) bool
	why       string
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// isTestSupport is a package that exists for tests and the demo: the
// module's internal/ (stand-ins, the fault suite and its harness), a
// package named for tests elsewhere (runner/internal/channeltest), the
// demo's binary.
func isTestSupport(pkg string) bool {
	return under(pkg, "internal") || strings.HasSuffix(pkg, "test") || under(pkg, "cmd/inspect-demo")
}

var rules = []rule{
	{
		applies: func(p string) bool { return under(p, "app") },
		forbidden: func(imp string, own bool) bool {
			// runner's contract and error kinds, and the production
			// helpers that live under it, are the app's to use; the
			// concrete executors and the supervisor are cmd/'s to pick.
			return own && under(imp, "runner") && !slices.Contains([]string{"runner", "runner/contract", "runner/retryafter"}, imp)
		},
		why: "app talks to executors only through runner (the contract, its capabilities and error kinds) and runner/contract; cmd/ picks the concrete executor",
	},
	{
		applies:   func(p string) bool { return under(p, "policy") },
		forbidden: func(imp string, own bool) bool { return own || !isStandard(imp) },
		why:       "policy is pure decisions over the standard library: no I/O, and none of this module's packages",
	},
	{
		applies:   func(p string) bool { return under(p, "handlers") },
		forbidden: func(imp string, own bool) bool { return own && under(imp, "runner") },
		why:       "a webhook request never starts work itself: handlers turn payloads into triggers and the app's workers act",
	},
	{
		applies:   func(p string) bool { return under(p, "runner") },
		forbidden: func(imp string, own bool) bool { return own && (under(imp, "app") || under(imp, "handlers")) },
		why:       "runner serves the app over the session channel; it never reaches into the app or its webhooks",
	},
	{
		applies:   func(p string) bool { return under(p, "config") },
		forbidden: func(imp string, own bool) bool { return own && under(imp, "runner") && imp != "runner/contract" },
		why:       "config may use the session contract's types, nothing else of runner",
	},
	{
		applies:   func(p string) bool { return !isTestSupport(p) },
		forbidden: func(imp string, own bool) bool { return own && isTestSupport(imp) },
		why:       "stand-ins and test harnesses stay out of production paths",
	},
}

// isStandard reports whether an import path is the standard library's: its
// first element has no dot.
func isStandard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

func TestNoForbiddenImports(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		bp, err := build.Default.ImportDir(path, 0)
		if err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil // a folder without Go files, or only tests'
			}
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		pkgs++
		for _, imp := range bp.Imports {
			own := strings.HasPrefix(imp, module)
			name := strings.TrimPrefix(imp, module)
			for _, r := range rules {
				if r.applies(pkg) && r.forbidden(name, own) {
					t.Errorf("%s imports %s: %s", pkg, name, r.why)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk found the tree: a test that read no package would pass
	// whatever the imports were.
	if pkgs < 20 {
		t.Fatalf("read %d packages under %s; want the whole module", pkgs, root)
	}
}

// TestTheRulesCatchEachArrow proves each rule bites: for every arrow the
// architecture forbids, the rules above name it.
func TestTheRulesCatchEachArrow(t *testing.T) {
	arrows := []struct{ from, to string }{
		{"app", module + "runner/local"},
		{"app", module + "runner/buildkite"},
		{"app", module + "runner/supervisor"},
		{"app/channel", module + "runner/supervisor"},
		{"app/snapshots", module + "runner/supervisor"},
		{"policy", "github.com/rs/zerolog"},
		{"policy", module + "config"},
		{"handlers", module + "runner/contract"},
		{"runner/supervisor", module + "app/store"},
		{"runner", module + "handlers"},
		{"config", module + "runner"},
		{"config", module + "runner/sandbox"},
		{"cmd/inspect", module + "internal/fakegithub"},
		{"app", module + "internal/standin"},
	}
	for _, a := range arrows {
		caught := false
		own := strings.HasPrefix(a.to, module)
		for _, r := range rules {
			if r.applies(a.from) && r.forbidden(strings.TrimPrefix(a.to, module), own) {
				caught = true
			}
		}
		if !caught {
			t.Errorf("%s → %s is not caught by any rule", a.from, a.to)
		}
	}
	allowed := []struct{ from, to string }{
		{"app", module + "runner"},
		{"app", module + "runner/contract"},
		{"config", module + "runner/contract"},
		{"policy", "strings"},
		{"cmd/inspect", module + "runner/local"},
		{"internal/fakegithub", module + "internal/standin"},
	}
	for _, a := range allowed {
		own := strings.HasPrefix(a.to, module)
		for _, r := range rules {
			if r.applies(a.from) && r.forbidden(strings.TrimPrefix(a.to, module), own) {
				t.Errorf("%s → %s is refused (%s), but the architecture allows it", a.from, a.to, r.why)
			}
		}
	}
}
