package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// toolchainSumDBKey is the verifier key the installed go command carries
// for name: its knownGOSUMDB table, in the toolchain's own source under
// GOROOT (cmd/go/internal/modfetch/key.go). go answers "invalid GOSUMDB:
// invalid verifier hash" to any other key for that name, so this, not a
// copy in our tests, is what DefaultSumDB must equal.
func toolchainSumDBKey(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	goroot := strings.TrimSpace(string(out))
	src := filepath.Join(goroot, "src", "cmd", "go", "internal", "modfetch", "key.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatalf("the go toolchain's checksum database keys (GOROOT %q) cannot be read, and DefaultSumDB must be compared with them: %v", goroot, err)
	}
	var key string
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		k, kok := kv.Key.(*ast.BasicLit)
		v, vok := kv.Value.(*ast.BasicLit)
		if kok && vok && k.Kind == token.STRING && v.Kind == token.STRING {
			if s, err := strconv.Unquote(k.Value); err == nil && s == name {
				key, err = strconv.Unquote(v.Value)
				if err != nil {
					t.Fatalf("%s: the key for %s is not a plain string: %v", src, name, err)
				}
			}
		}
		return true
	})
	if key == "" {
		t.Fatalf("%s names no key for %s", src, name)
	}
	return key
}

// The default checksum database is the one the go command knows, with
// the key it knows: a session that needs a module its go.sum lacks (go
// get, go mod tidy) is refused by go itself otherwise.
func TestDefaultSumDBIsTheGoToolchainsOwnKey(t *testing.T) {
	if want := toolchainSumDBKey(t, "sum.golang.org"); DefaultSumDB != want {
		t.Fatalf("DefaultSumDB = %q, but the go toolchain's key for sum.golang.org is %q", DefaultSumDB, want)
	}
	if got := (Registry{Kind: "goproxy"}).SumDBOrDefault(); got != DefaultSumDB {
		t.Fatalf("a goproxy registry without sumdb uses %q", got)
	}
}
