package examples

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/config"
)

var updateExample = flag.Bool("update", false, "rewrite inspect.yaml from config.Defaults() and docs/configuration.md")

const examplePath = "inspect.yaml"

// serverKeys lists every key of config.Server with its default, in
// declaration order, as YAML leaves: "a.b.c" -> value.
func serverKeys(v reflect.Value, prefix string, out *[]keyValue) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if !f.IsExported() || tag == "" || tag == "-" {
			continue
		}
		key := prefix + tag
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(time.Duration(0)) {
			serverKeys(fv, key+".", out)
			continue
		}
		*out = append(*out, keyValue{key, fv.Interface()})
	}
}

type keyValue struct {
	key   string
	value any
}

// TestExampleConfigHasEveryKeyWithItsDefault: examples/inspect.yaml names
// every server key, and what it says is the code's default.
func TestExampleConfigHasEveryKeyWithItsDefault(t *testing.T) {
	var keys []keyValue
	serverKeys(reflect.ValueOf(config.Defaults()), "", &keys)
	if *updateExample {
		if err := os.WriteFile(examplePath, renderExample(t, keys), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	for _, kv := range keys {
		if !hasKey(tree, strings.Split(kv.key, ".")) {
			t.Errorf("examples/inspect.yaml lacks %s (default %v); regenerate with go test ./examples -run TestExampleConfig -update", kv.key, kv.value)
		}
	}
	// Decoded strictly onto nothing, the example is the defaults.
	var got config.Server
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("examples/inspect.yaml: %v", err)
	}
	var gotKeys []keyValue
	serverKeys(reflect.ValueOf(got), "", &gotKeys)
	for i, kv := range keys {
		if !sameValue(kv.value, gotKeys[i].value) {
			t.Errorf("examples/inspect.yaml sets %s to %v; the code's default is %v", kv.key, gotKeys[i].value, kv.value)
		}
	}
}

func hasKey(tree map[string]any, path []string) bool {
	v, ok := tree[path[0]]
	if !ok {
		return false
	}
	if len(path) == 1 {
		return true
	}
	sub, ok := v.(map[string]any)
	return ok && hasKey(sub, path[1:])
}

// sameValue is equality with an empty map or slice equal to a nil one.
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if (va.Kind() == reflect.Map || va.Kind() == reflect.Slice) && va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

var docRow = regexp.MustCompile("^\\| `([a-z0-9_.<>\\[\\]-]+)` \\|[^|]*\\|[^|]*\\| (.*) \\|$")

// descriptions are the first sentences of docs/configuration.md's rows.
func descriptions(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := docRow.FindStringSubmatch(sc.Text()); m != nil {
			d := m[2]
			if i := strings.Index(d, ". "); i > 0 {
				d = d[:i+1]
			}
			out[m[1]] = strings.ReplaceAll(d, "`", "")
		}
	}
	return out
}

func renderExample(t *testing.T, keys []keyValue) []byte {
	docs := descriptions(t)
	var b strings.Builder
	b.WriteString("# Every server key with its default, as `inspect serve --config FILE` reads it.\n" +
		"# docs/configuration.md says what each one does; every key can also be set with\n" +
		"# its INSPECT_* environment variable. examples/config_example_test.go checks\n" +
		"# that this file names every key and that each value here is the code's default.\n")
	var open []string
	for _, kv := range keys {
		parts := strings.Split(kv.key, ".")
		common := 0
		for common < len(open) && common < len(parts)-1 && open[common] == parts[common] {
			common++
		}
		open = open[:common]
		for i := common; i < len(parts)-1; i++ {
			if i == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%s%s:\n", strings.Repeat("  ", i), parts[i])
			open = append(open, parts[i])
		}
		indent := strings.Repeat("  ", len(parts)-1)
		if len(parts) == 1 {
			b.WriteString("\n")
		}
		if d := docs[kv.key]; d != "" {
			for _, line := range wrap(d, 76-len(indent)) {
				fmt.Fprintf(&b, "%s# %s\n", indent, line)
			}
		}
		fmt.Fprintf(&b, "%s%s: %s\n", indent, parts[len(parts)-1], yamlValue(t, kv.value, indent))
	}
	return []byte(b.String())
}

func yamlValue(t *testing.T, v any, indent string) string {
	switch x := v.(type) {
	case time.Duration:
		return shortDuration(x)
	case string:
		if x == "" {
			return `""`
		}
	case []config.RateWindow:
		var parts []string
		for _, w := range x {
			parts = append(parts, fmt.Sprintf("{limit: %d, window: %s}", w.Limit, shortDuration(w.Window)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Map && rv.Len() == 0 {
		return "{}"
	}
	if rv.Kind() == reflect.Slice && rv.Len() == 0 {
		return "[]"
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// shortDuration is 10m, not 10m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
