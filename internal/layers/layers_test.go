// Package layers holds the test of the layer order that
// docs/ARCHITECTURE.md ("Layers") writes down, and of the few narrower
// rules beside it. It reads every package's non-test imports with
// go/build, follows them through the module (so an arrow that comes back
// through a third package fails as surely as a direct one), and names the
// package, what it reaches and the chain of imports that reaches it.
package layers

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/inspecthq/inspect/"

// order is the layer order, lowest first. A package may import packages of
// its own layer (a room of app/ another room of app/) and of the layers
// below it, never of one above. session and contract share a layer and
// stay apart: each is imported by both sides of the app–supervisor line.
var order = [][]string{
	{"policy"},
	{"session", "contract"},
	{"config"},
	{"images", "toolsimage"},
	{"runner"},
	{"handlers"},
	{"app"},
	{"cmd/inspect"},
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// isTestSupport is a package that exists for tests and the demo, which may
// import anything: the module's internal/ (stand-ins, the fault suite and
// its harness), a package named for tests elsewhere
// (runner/internal/channeltest), the demo's binary and its sample repo
// (examples).
func isTestSupport(pkg string) bool {
	return under(pkg, "internal") || strings.HasSuffix(pkg, "test") || under(pkg, "cmd/inspect-demo") || under(pkg, "examples")
}

// layerOf is a production package's place in order and the top-level
// folder that gives it (-1 and "" for a package the order does not name).
func layerOf(pkg string) (int, string) {
	for i, dirs := range order {
		for _, d := range dirs {
			if under(pkg, d) {
				return i, d
			}
		}
	}
	return -1, ""
}

// isStandard reports whether an import path is the standard library's: its
// first element has no dot.
func isStandard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// rule is a narrower rule beside the order: what a package may not reach.
type rule struct {
	applies   func(pkg string) bool
	forbidden func(dep string, own bool) bool
	why       string
}

// concreteRunner is what only cmd/ picks: the executors, the supervisor,
// its sandbox and `inspect run`'s engine. app may reach runner (the
// executor contract) and runner/retryafter, nothing else under runner/.
func concreteRunner(dep string) bool {
	return under(dep, "runner") && dep != "runner" && dep != "runner/retryafter"
}

// seccompLibrary is the sandbox's own library: only a process that starts
// a sandbox links it.
const seccompLibrary = "github.com/elastic/go-seccomp-bpf"

var rules = []rule{
	{
		applies:   func(p string) bool { return under(p, "app") },
		forbidden: func(dep string, own bool) bool { return (own && concreteRunner(dep)) || under(dep, seccompLibrary) },
		why:       "app talks to executors only through runner (the contract, its capabilities and error kinds); cmd/ picks the concrete executor, and only the supervisor links the sandbox",
	},
	{
		applies:   func(p string) bool { return under(p, "policy") },
		forbidden: func(dep string, own bool) bool { return own || !isStandard(dep) },
		why:       "policy is pure decisions over the standard library: no I/O, and none of this module's packages",
	},
	{
		applies:   func(p string) bool { return under(p, "session") },
		forbidden: func(dep string, own bool) bool { return (own && !under(dep, "policy")) || (!own && !isStandard(dep)) },
		why:       "the session package is the domain's nouns: the standard library and policy only",
	},
	{
		applies:   func(p string) bool { return under(p, "handlers") },
		forbidden: func(dep string, own bool) bool { return own && under(dep, "runner") },
		why:       "a webhook request never starts work itself: handlers turn payloads into the session package's types and the app's workers act",
	},
}

// graph is the module's packages (relative to the module root) and, for
// each, its non-test imports: the module's own relative, others as written.
type graph map[string][]string

// violation is one forbidden arrow: from reaches to, through path (the
// chain of the module's packages from from, ending at to).
type violation struct {
	from, to string
	path     []string
	why      string
}

func (v violation) String() string {
	return fmt.Sprintf("%s reaches %s (%s): %s", v.from, v.to, strings.Join(v.path, " → "), v.why)
}

// reach lists everything pkg imports, directly or through the module's
// packages, each with the shortest chain of imports that reaches it.
func (g graph) reach(pkg string) map[string][]string {
	paths := map[string][]string{pkg: {pkg}}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, seen := paths[imp]; seen {
				continue
			}
			paths[imp] = append(slices.Clone(paths[p]), imp)
			if _, ours := g[imp]; ours {
				queue = append(queue, imp)
			}
		}
	}
	delete(paths, pkg)
	return paths
}

// check returns every forbidden arrow in g, direct or transitive.
func check(g graph) []violation {
	var out []violation
	for pkg := range g {
		if isTestSupport(pkg) {
			continue // test support may import anything
		}
		from, fromDir := layerOf(pkg)
		if from < 0 {
			out = append(out, violation{from: pkg, to: pkg, path: []string{pkg}, why: "a production package with no place in the layer order (add its folder to order and to ARCHITECTURE's \"Layers\")"})
			continue
		}
		for dep, path := range g.reach(pkg) {
			_, own := g[dep]
			if own {
				switch to, toDir := layerOf(dep); {
				case isTestSupport(dep):
					out = append(out, violation{pkg, dep, path, "stand-ins and test harnesses stay out of production paths"})
				case to > from:
					out = append(out, violation{pkg, dep, path, fmt.Sprintf("%s sits above %s in the layer order", toDir, fromDir)})
				case to == from && toDir != fromDir:
					out = append(out, violation{pkg, dep, path, fmt.Sprintf("%s and %s share a layer and never import each other", fromDir, toDir)})
				}
			}
			for _, r := range rules {
				if r.applies(pkg) && r.forbidden(dep, own) {
					out = append(out, violation{pkg, dep, path, r.why})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b violation) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// readTree reads the module's packages under root with go/build, as this
// machine's build (GOOS linux) sees them.
func readTree(t *testing.T, root string) graph {
	t.Helper()
	g := graph{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		imports := make([]string, 0, len(bp.Imports))
		for _, imp := range bp.Imports {
			if imp == "C" {
				continue
			}
			imports = append(imports, strings.TrimPrefix(imp, module))
		}
		g[filepath.ToSlash(rel)] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTheTreeKeepsTheLayerOrder(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	g := readTree(t, root)
	// The walk found the tree: a test that read no package would pass
	// whatever the imports were.
	for _, pkg := range []string{"policy", "session", "contract", "config", "images", "runner", "runner/sandbox", "handlers", "app", "app/store", "cmd/inspect"} {
		if _, ok := g[pkg]; !ok {
			t.Fatalf("package %s was not read under %s", pkg, root)
		}
	}
	for _, v := range check(g) {
		t.Error(v)
	}
	// The rules are checked on what a package reaches through others
	// (the app's reach through runner is what kept the sandbox linked), so
	// that reach must be followed: handlers reaches contract only through
	// config. (TestTheAppDoesNotLinkTheSandbox asks the go tool itself.)
	if path := g.reach("handlers")["contract"]; len(path) < 3 {
		t.Errorf("handlers' reach of contract is %v: imports are not followed through config", path)
	}
}

// TestTheAppDoesNotLinkTheSandbox asks the go tool itself, as the
// production build sees the app: neither the sandbox nor its seccomp
// library is among the app's dependencies.
func TestTheAppDoesNotLinkTheSandbox(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./app", "./app/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"runner") || !slices.Contains(deps, module+"contract") {
		t.Fatalf("go list -deps ./app names neither runner nor contract: %q", out)
	}
	for _, d := range deps {
		if under(d, module+"runner/sandbox") || under(d, seccompLibrary) || under(d, module+"runner/supervisor") {
			t.Errorf("the app links %s", d)
		}
	}
}

// TestEveryRuleBites adds one arrow at a time to a small tree that keeps
// the order, and the check must name it, directly and through a package
// in between.
func TestEveryRuleBites(t *testing.T) {
	base := graph{
		"policy":            {"strings"},
		"session":           {"policy", "time"},
		"contract":          {"policy", "encoding/json"},
		"config":            {"policy", "contract", "gopkg.in/yaml.v3"},
		"images":            {"contract"},
		"runner":            {"images", "contract"},
		"runner/retryafter": {"time"},
		"runner/sandbox":    {"contract", seccompLibrary},
		"runner/supervisor": {"runner", "runner/sandbox"},
		"runner/local":      {"runner"},
		"handlers":          {"session", "config", "policy"},
		"app/store":         {"session", "policy"},
		"app/render":        {"app/store", "session"},
		"app":               {"app/store", "app/render", "runner", "runner/retryafter", "handlers", "config"},
		"cmd/inspect":       {"app", "runner/local", "runner/supervisor"},
		"internal/fakegh":   {"internal/standin", "app/store"},
		"internal/standin":  {"net/http"},
		"cmd/inspect-demo":  {"app", "internal/fakegh"},
		"examples":          {"embed"},
	}
	if vs := check(base); len(vs) != 0 {
		t.Fatalf("the base tree keeps every rule, yet: %v", vs)
	}
	for _, c := range []struct {
		name     string
		from, to string
		// caught is what the check must name: from reaching want.
		want string
	}{
		{"up the order: config → images", "config", "images", "images"},
		{"up the order: images → runner", "images", "runner", "runner"},
		{"up the order: runner → handlers", "runner/local", "handlers", "handlers"},
		{"up the order: runner → app", "runner/supervisor", "app/store", "app/store"},
		{"up the order: handlers → app", "handlers", "app/store", "app/store"},
		{"up the order: contract → config", "contract", "config", "config"},
		{"up the order: app → cmd", "app/render", "cmd/inspect", "cmd/inspect"},
		{"up the order from the domain: session → config", "session", "config", "config"},
		{"from the bottom to the top: policy → app", "policy", "app", "app"},
		{"siblings: session → contract", "session", "contract", "contract"},
		{"siblings: contract → session", "contract", "session", "session"},
		{"app → a concrete executor", "app", "runner/local", "runner/local"},
		{"app → the supervisor", "app/render", "runner/supervisor", "runner/supervisor"},
		{"app → the sandbox, through runner", "runner", "runner/sandbox", "runner/sandbox"},
		{"app → the seccomp library, through runner", "runner", seccompLibrary, seccompLibrary},
		{"policy → a library", "policy", "github.com/rs/zerolog", "github.com/rs/zerolog"},
		{"session → a library", "session", "github.com/rs/zerolog", "github.com/rs/zerolog"},
		{"handlers → runner", "handlers", "runner", "runner"},
		{"handlers → runner, through config", "config", "runner/retryafter", "runner/retryafter"},
		{"production → a stand-in", "cmd/inspect", "internal/fakegh", "internal/fakegh"},
		{"production → a stand-in, through app", "app/store", "internal/standin", "internal/standin"},
		{"production → the demo's sample repo", "app", "examples", "examples"},
		{"a production package outside the order", "app", "tools/gen", "tools/gen"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := graph{}
			for k, v := range base {
				g[k] = slices.Clone(v)
			}
			g[c.from] = append(g[c.from], c.to)
			if c.to == "tools/gen" {
				g["tools/gen"] = []string{"fmt"}
			}
			vs := check(g)
			if len(vs) == 0 {
				t.Fatalf("%s → %s is not caught", c.from, c.to)
			}
			named := slices.ContainsFunc(vs, func(v violation) bool { return v.to == c.want })
			if !named {
				t.Errorf("%s → %s is caught, but nothing names %s: %v", c.from, c.to, c.want, vs)
			}
		})
	}
	// What the order allows stays allowed.
	for _, a := range []struct{ from, to string }{
		{"app", "images"},
		{"app", "contract"},
		{"config", "session"},
		{"runner/local", "config"},
		{"handlers", "contract"},
		{"cmd/inspect", "runner/sandbox"},
		{"internal/fakegh", "runner/supervisor"},
		{"app/store", "app/render"},
	} {
		g := graph{}
		for k, v := range base {
			g[k] = slices.Clone(v)
		}
		g[a.from] = append(g[a.from], a.to)
		if vs := check(g); len(vs) != 0 {
			t.Errorf("%s → %s is refused, but the order allows it: %v", a.from, a.to, vs)
		}
	}
}
