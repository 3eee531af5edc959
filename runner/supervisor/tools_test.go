package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
	"github.com/inspecthq/inspect/toolsimage"
)

// busyboxRoot opens the busybox root .ci/ensure-busyboxroot built: no
// libc, no loader, no node.
func busyboxRoot(t testing.TB) v1.Image {
	t.Helper()
	img, err := images.OpenBaseImage(context.Background(), sandboxtest.BusyboxRoot(t, filepath.Join("..", "..")))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// scriptedModelKey is the provider's key the scripted model requires.
const scriptedModelKey = "scripted-provider-key"

// serveScriptedModel answers the channel's model route from the scripted
// model stand-in, as the app's model proxy would from a provider: kind
// openai's base URL ends in /v1 (the CLI asks for responses), anthropic's
// does not (the CLI asks for v1/messages).
func serveScriptedModel(ch *channeltest.Server, model *fakemodel.Server, kind string) {
	base, err := url.Parse(model.URL())
	if err != nil {
		panic(err)
	}
	proxy := &httputil.ReverseProxy{
		FlushInterval: -1,
		Rewrite: func(r *httputil.ProxyRequest) {
			p := "/" + r.In.PathValue(contract.PathValueRest)
			if kind == contract.ProviderKindOpenAI {
				p = "/v1" + p
			}
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.URL.Path, r.Out.URL.RawPath = base.Scheme, base.Host, p, ""
			r.Out.Host = base.Host
			// The server's key, as the proxy adds it (the sandbox's was
			// dropped on the way out).
			r.Out.Header.Set("Authorization", "Bearer "+scriptedModelKey)
			r.Out.Header.Set("X-Api-Key", scriptedModelKey)
		},
	}
	ch.ServeModel(proxy.ServeHTTP)
}

// Each agent CLI runs from the tools image, once, on a root with no node:
// Codex CLI on a busybox root (no libc, no loader either), OpenCode and
// Claude Code on a Debian distribution root. Each, driven by the scripted
// model, fixes calc.go; verify (on the root's own shell) finds the fix, no
// node on the root, the tools at /opt/inspect/tools, and that the mount
// refuses a write. The evidence names the tools image's digest.
func TestAgentCLIsFromTheToolsImage(t *testing.T) {
	_, ref := sandboxtest.ToolsImage(t, filepath.Join("..", ".."))
	_, wantDigest, _ := strings.Cut(ref, "@")
	layerCache := sandboxtest.ToolsLayerCache(t, filepath.Join("..", "..")) // flattened once per machine
	for _, c := range []struct {
		name   string
		root   func(testing.TB) v1.Image
		preset contract.Preset
		kind   string
	}{
		{"codex on busybox", busyboxRoot, contract.PresetCodex, contract.ProviderKindOpenAI},
		{"opencode on debian", distributionRoot, contract.PresetOpenCode, contract.ProviderKindOpenAI},
		{"claude code on debian", distributionRoot, contract.PresetClaudeCode, contract.ProviderKindAnthropic},
	} {
		t.Run(c.name, func(t *testing.T) {
			model := fakemodel.New()
			t.Cleanup(model.Close)
			model.RequireKey(scriptedModelKey)
			model.Script(
				fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go && echo fixed"}},
				fakemodel.Turn{Message: "Fixed Add."},
			)
			f := newSnapshotFixtureOn(t, c.root(t), nil)
			serveScriptedModel(f.ch, model, c.kind)
			pinned := f.ch.Seed(map[string]string{
				"calc.go": "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b + 1\n}\n",
			})
			spec := f.spec(pinned)
			spec.Agent = contract.Agent{Preset: c.preset, Model: "scripted-1", Provider: "scripted", ProviderKind: c.kind, ToolsImage: ref}
			spec.Verify = []contract.Command{{
				Name: "the fix, on a root without node",
				Argv: []string{"sh", "-c", `set -e
grep -q 'return a + b$' calc.go
if command -v node; then echo "the root has node"; exit 1; fi
test -x /opt/inspect/tools/bin/node
test -x /opt/inspect/tools/bin/` + map[contract.Preset]string{contract.PresetCodex: "codex", contract.PresetOpenCode: "opencode", contract.PresetClaudeCode: "claude"}[c.preset] + `
if touch /opt/inspect/tools/bin/written 2>/dev/null; then echo "the tools image took a write"; exit 1; fi
if mkdir /opt/inspect/tools/made 2>/dev/null; then echo "the tools image took a directory"; exit 1; fi
test "$(awk '$5 == "/opt/inspect/tools" { print substr($6, 1, 3) }' /proc/self/mountinfo)" = "ro,"
/opt/inspect/tools/bin/node -e 'process.stdout.write(process.version)' | grep -q '^v'`},
				Timeout: contract.Duration(time.Minute),
			}}
			h := newHarness(t, f.ch, spec)
			h.cfg.LayerCache = layerCache
			h.cfg.OutDir = t.TempDir()
			u := h.result(t, h.run(t, context.Background()))
			ev := u.Evidence
			if ev.Outcome != contract.OutcomeOK {
				t.Fatalf("outcome %s: %s\nmodel requests %d, exhausted %d\n%+v", ev.Outcome, ev.Reason, len(model.Requests()), model.Exhausted(), ev.Commands)
			}
			if ev.ToolsImage != wantDigest {
				t.Errorf("evidence tools_image = %q, want %q", ev.ToolsImage, wantDigest)
			}
			file, err := os.Open(filepath.Join(h.cfg.OutDir, contract.EvidenceFileName))
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			if onDisk, err := contract.DecodeEvidence(file); err != nil || onDisk.ToolsImage != wantDigest {
				t.Errorf("evidence.json: tools_image %q, %v; want %s", onDisk.ToolsImage, err, wantDigest)
			}
			if w := ev.Workspace; w == nil || w.ImageRoot == nil {
				t.Fatalf("the session did not run on the image's root: %+v", w)
			}
			if got := ev.Commands[0].Argv[0]; got != toolsimage.Bin(map[contract.Preset]string{contract.PresetCodex: "codex", contract.PresetOpenCode: "opencode", contract.PresetClaudeCode: "claude"}[c.preset]) {
				t.Errorf("the agent ran %q, not the tools image's CLI", got)
			}
			if !strings.Contains(strings.Join(model.FunctionOutputs(), "\n"), "fixed") {
				t.Errorf("the CLI did not run the model's command: %q", model.FunctionOutputs())
			}
			if u.Manifest == nil || len(u.Manifest.Files) != 1 || !strings.Contains(string(u.Manifest.Files[0].Content), "return a + b\n") {
				t.Fatalf("the change is not the agent's fix: %+v", u.Manifest)
			}
		})
	}

	// What ran is the host's node and the pinned CLIs: the flattened root
	// (already in the layer cache) holds node byte for byte, and npm's
	// lockfile the pinned versions.
	img, err := images.OpenBaseImage(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	flat, err := images.Flatten(context.Background(), layers, filepath.Join(layerCache, "base"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fileSum(t, filepath.Join(flat.Root, "libexec", "node")), fileSum(t, "/usr/bin/node"); a != b {
		t.Errorf("the image's node (%s) is not the host's (%s)", a, b)
	}
	lock, err := os.ReadFile(filepath.Join(flat.Root, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var locked struct {
		Name     string                              `json:"name"`
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(lock, &locked); err != nil {
		t.Fatal(err)
	}
	if locked.Name != toolsimage.ProjectName {
		t.Errorf("the lockfile names the project %q, not %q: a build directory's name would change the digest", locked.Name, toolsimage.ProjectName)
	}
	for _, p := range ToolsPackages() {
		if got := locked.Packages["node_modules/"+p.Name].Version; got != p.Version {
			t.Errorf("the image's %s is %q, want the pinned %s", p.Name, got, p.Version)
		}
	}
}

// fileSum is the sha256 of a file's content.
func fileSum(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
