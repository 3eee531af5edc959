// Command gen vendors the part of GitHub's OpenAPI description that
// Inspect uses: the operations listed in operations.txt and the webhooks in
// webhooks.txt, with every component they reference, so that no test
// binary loads the whole description (13 MB). vendor.sh runs it on the
// pinned @octokit/openapi package; nothing else does.
//
//	go run ./internal/ghconformance/gen -spec api.github.com.json -dir internal/ghconformance
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func main() {
	spec := flag.String("spec", "", "generated/api.github.com.json of @octokit/openapi")
	dir := flag.String("dir", "internal/ghconformance", "where operations.txt and webhooks.txt are, and the output goes")
	source := flag.String("source", "", "what the spec is, written into the output (package and version)")
	perms := flag.String("permissions", "", "generated/api.github.com.json of @octokit/app-permissions (optional)")
	permsSource := flag.String("permissions-source", "", "what the permissions table is (package and version)")
	flag.Parse()
	if err := run(*spec, *dir, *source); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if *perms != "" {
		if err := vendorPermissions(*perms, *dir, *permsSource); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

// vendorPermissions writes app-permissions.json: for each operation of
// operations.txt that GitHub's "Permissions required for GitHub Apps"
// table lists, the permissions (any one of which is enough) at the access
// it needs. The table spells path parameters its own way
// ({sha} for the description's {commit_sha}), so routes are matched with
// their parameters' names set aside. An operation the table does not list
// is left out; ghconformance's Unlisted says why for each.
func vendorPermissions(tablePath, dir, source string) error {
	raw, err := os.ReadFile(tablePath)
	if err != nil {
		return err
	}
	var table struct {
		Permissions map[string]map[string]any `json:"permissions"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		return fmt.Errorf("%s: %w", tablePath, err)
	}
	byRoute := map[string][]string{}
	for name, p := range table.Permissions {
		for _, access := range []string{"read", "write"} {
			routes, _ := p[access].([]any)
			for _, r := range routes {
				s, _ := r.(string)
				key := anonymousParams(s)
				grant := name + ":" + access
				if !contains(byRoute[key], grant) {
					byRoute[key] = append(byRoute[key], grant)
				}
			}
		}
	}
	ops, err := readList(filepath.Join(dir, "operations.txt"))
	if err != nil {
		return err
	}
	out := map[string][]string{}
	for _, op := range ops {
		if g := byRoute[anonymousParams(op)]; len(g) > 0 {
			sort.Strings(g)
			out[op] = g
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", " ")
	if err := enc.Encode(map[string]any{"x-vendored-from": source, "operations": out}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: %d of %d operations in the permissions table\n", len(out), len(ops))
	return os.WriteFile(filepath.Join(dir, "app-permissions.json"), buf.Bytes(), 0o644)
}

var paramName = regexp.MustCompile(`\{[^}]*\}`)

// anonymousParams is a route with each path parameter written {}. The
// table still spells compare's one parameter as two ({base}...{head},
// the description {basehead}); both come out {}.
func anonymousParams(route string) string {
	return strings.ReplaceAll(paramName.ReplaceAllString(route, "{}"), "{}...{}", "{}")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func run(specPath, dir, source string) error {
	if specPath == "" {
		return errors.New("-spec is required")
	}
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var full map[string]any
	if err := json.Unmarshal(raw, &full); err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	ops, err := readList(filepath.Join(dir, "operations.txt"))
	if err != nil {
		return err
	}
	hooks, err := readList(filepath.Join(dir, "webhooks.txt"))
	if err != nil {
		return err
	}
	paths, _ := full["paths"].(map[string]any)
	outPaths := map[string]any{}
	for _, op := range ops {
		method, path, ok := strings.Cut(op, " ")
		if !ok {
			return fmt.Errorf("operations.txt: %q is not \"METHOD /path\"", op)
		}
		item, _ := paths[path].(map[string]any)
		operation := item[strings.ToLower(method)]
		if operation == nil {
			return fmt.Errorf("operations.txt: %s is not in the description", op)
		}
		o, _ := outPaths[path].(map[string]any)
		if o == nil {
			o = map[string]any{}
			if p, ok := item["parameters"]; ok {
				o["parameters"] = p
			}
			outPaths[path] = o
		}
		o[strings.ToLower(method)] = operation
	}
	allHooks, _ := full["x-webhooks"].(map[string]any)
	outHooks := map[string]any{}
	for _, h := range hooks {
		if allHooks[h] == nil {
			return fmt.Errorf("webhooks.txt: %s is not in the description's x-webhooks", h)
		}
		outHooks[h] = allHooks[h]
	}
	components, _ := full["components"].(map[string]any)
	used := map[string]map[string]any{}
	var walk func(v any) error
	walk = func(v any) error {
		switch t := v.(type) {
		case map[string]any:
			if ref, ok := t["$ref"].(string); ok {
				kind, name, ok := strings.Cut(strings.TrimPrefix(ref, "#/components/"), "/")
				if !ok || !strings.HasPrefix(ref, "#/components/") {
					return fmt.Errorf("unexpected $ref %q", ref)
				}
				if used[kind] == nil {
					used[kind] = map[string]any{}
				}
				if _, seen := used[kind][name]; !seen {
					c := components[kind].(map[string]any)[name]
					if c == nil {
						return fmt.Errorf("dangling $ref %q", ref)
					}
					used[kind][name] = c
					if err := walk(c); err != nil {
						return err
					}
				}
			}
			for _, x := range t {
				if err := walk(x); err != nil {
					return err
				}
			}
		case []any:
			for _, x := range t {
				if err := walk(x); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(outPaths); err != nil {
		return err
	}
	if err := walk(outHooks); err != nil {
		return err
	}
	outComponents := map[string]any{}
	for kind, m := range used {
		outComponents[kind] = m
	}
	info, _ := full["info"].(map[string]any)
	if source != "" {
		info["x-vendored-from"] = source
	}
	out := map[string]any{
		"openapi":    full["openapi"],
		"info":       info,
		"servers":    full["servers"],
		"paths":      outPaths,
		"x-webhooks": outHooks,
		"components": outComponents,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	n := 0
	for _, m := range used {
		n += len(m)
	}
	fmt.Fprintf(os.Stderr, "gen: %d operations, %d webhooks, %d components, %d bytes\n", len(ops), len(hooks), n, buf.Len())
	return os.WriteFile(filepath.Join(dir, "github-openapi.json"), buf.Bytes(), 0o644)
}

// readList reads the non-blank lines of a file that are not comments
// (#), sorted and without repeats.
func readList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // read only
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || seen[line] {
			continue
		}
		seen[line] = true
		out = append(out, line)
	}
	sort.Strings(out)
	return out, sc.Err()
}
