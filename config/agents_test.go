package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

const agentsYAML = `
agents:
  token_budget: 500000
  providers:
    openai:
      kind: openai
      base_url: https://api.openai.com/v1
      api_key: test-openai-key
    anthropic:
      kind: anthropic
      base_url: https://api.anthropic.com
      api_key_path: %s
  models:
    - name: gpt-5-codex
      provider: openai
    - name: gpt-5-mini
      provider: openai
      presets: [opencode, command]
    - name: claude-opus-4-1
      provider: anthropic
`

func loadAgents(t *testing.T, env map[string]string) Server {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "anthropic-key")
	if err := os.WriteFile(keyFile, []byte("  test-anthropic-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(writeFile(t, minimalYAML+fmt.Sprintf(agentsYAML, keyFile)), envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestAgentsDefaults(t *testing.T) {
	cfg, err := Load(writeFile(t, minimalYAML), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents.TokenBudget != DefaultTokenBudget || len(cfg.Agents.Providers) != 0 || len(cfg.Agents.Models) != 0 {
		t.Errorf("agents = %+v", cfg.Agents)
	}
	if got := cfg.ModelsFor("codex"); len(got) != 0 {
		t.Errorf("ModelsFor(codex) = %v with no models", got)
	}
}

func TestAgentsFromYAMLAndEnv(t *testing.T) {
	cfg := loadAgents(t, map[string]string{"INSPECT_AGENTS_TOKEN_BUDGET": "0"})
	if cfg.Agents.TokenBudget != 0 {
		t.Errorf("token_budget = %d, want 0 from the environment", cfg.Agents.TokenBudget)
	}
	if cfg := loadAgents(t, nil); cfg.Agents.TokenBudget != 500000 {
		t.Errorf("token_budget = %d, want 500000 from YAML", cfg.Agents.TokenBudget)
	}

	p, ok := cfg.Provider("openai")
	if !ok || p.Kind != "openai" || p.BaseURL != "https://api.openai.com/v1" {
		t.Fatalf("Provider(openai) = %+v, %v", p, ok)
	}
	if k, err := p.APIKey(); err != nil || k != "test-openai-key" {
		t.Errorf("openai APIKey() = %q, %v", k, err)
	}
	p, ok = cfg.Provider("anthropic")
	if !ok {
		t.Fatal("no anthropic provider")
	}
	if k, err := p.APIKey(); err != nil || k != "test-anthropic-key" {
		t.Errorf("anthropic APIKey() = %q, %v (want the file's content, trimmed)", k, err)
	}
	if _, ok := cfg.Provider("gemini"); ok {
		t.Error("Provider(gemini) found")
	}

	for _, c := range []struct {
		preset, model, provider string
	}{
		{"codex", "gpt-5-codex", "openai"},
		{"opencode", "gpt-5-codex", "openai"},
		{"claude-code", "gpt-5-codex", ""}, // claude-code cannot talk to openai
		{"command", "gpt-5-codex", ""},     // command is never a default
		{"codex", "gpt-5-mini", ""},        // not listed
		{"opencode", "gpt-5-mini", "openai"},
		{"command", "gpt-5-mini", "openai"},
		{"claude-code", "claude-opus-4-1", "anthropic"},
		{"opencode", "claude-opus-4-1", "anthropic"},
		{"codex", "claude-opus-4-1", ""},
		{"codex", "gpt-6", ""},
	} {
		got, ok := cfg.ModelAllowed(c.preset, c.model)
		if got != c.provider || ok != (c.provider != "") {
			t.Errorf("ModelAllowed(%s, %s) = %q, %v; want %q", c.preset, c.model, got, ok, c.provider)
		}
	}
	for preset, want := range map[string][]string{
		"codex":       {"gpt-5-codex"},
		"opencode":    {"gpt-5-codex", "gpt-5-mini", "claude-opus-4-1"},
		"claude-code": {"claude-opus-4-1"},
		"command":     {"gpt-5-mini"},
		"aider":       nil,
	} {
		if got := cfg.ModelsFor(preset); !reflect.DeepEqual(got, want) {
			t.Errorf("ModelsFor(%s) = %v, want %v", preset, got, want)
		}
	}
}

func TestProviderKeyNeverPrinted(t *testing.T) {
	cfg := loadAgents(t, nil)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%v", cfg.Agents.Providers["openai"])} {
		if strings.Contains(s, "test-openai-key") {
			t.Errorf("a printed config shows the key: %s", s)
		}
	}
}

func TestProviderAPIKeyErrors(t *testing.T) {
	missing := Provider{Kind: "openai", KeyPath: filepath.Join(t.TempDir(), "nope")}
	cfg := Server{Agents: Agents{Providers: map[string]Provider{"openai": missing}}}
	p, _ := cfg.Provider("openai")
	if _, err := p.APIKey(); err == nil || !strings.Contains(err.Error(), "agents.providers.openai.api_key_path") {
		t.Errorf("missing key file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Provider{KeyPath: empty}).APIKey(); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty key file: %v", err)
	}
	if _, err := (Provider{}).APIKey(); err == nil {
		t.Error("no key at all: no error")
	}
}

func TestAgentsValidation(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  map[string]string
		want []string
	}{
		{"tools image by tag", `
agents:
  tools_image: registry.example.com/inspect-tools:latest
`, nil, []string{"agents.tools_image: must be pinned by digest"}},
		{"tools image layout not absolute", ``, map[string]string{"INSPECT_AGENTS_TOOLS_IMAGE": "oci:tools@sha256:" + strings.Repeat("a", 64)},
			[]string{"agents.tools_image: must be pinned by digest"}},
		{"base image by tag", `
snapshots:
  base_image: registry.example.com/mirror/golang:1.26
`, nil, []string{"snapshots.base_image: must be pinned by digest"}},
		{"base image layout not absolute", ``, map[string]string{"INSPECT_SNAPSHOTS_BASE_IMAGE": "oci:base@sha256:" + strings.Repeat("a", 64)},
			[]string{"snapshots.base_image: must be pinned by digest"}},
		{"negative budget", ``, map[string]string{"INSPECT_AGENTS_TOKEN_BUDGET": "-1"},
			[]string{"agents.token_budget: must not be negative (0 means no cap; found -1)"}},
		{"budget not a number", ``, map[string]string{"INSPECT_AGENTS_TOKEN_BUDGET": "lots"},
			[]string{"INSPECT_AGENTS_TOKEN_BUDGET (agents.token_budget): not an integer"}},
		{"provider keys", `
agents:
  providers:
    openai: {}
    Bad/Name: {kind: openai, base_url: https://x.example, api_key: k}
    both: {kind: anthropic, base_url: https://api.anthropic.com, api_key: k, api_key_path: /k}
    gemini: {kind: gemini, base_url: "ftp://x.example", api_key: " k"}
`, nil, []string{
			"agents.providers.openai.kind: is required: anthropic or openai",
			"agents.providers.openai.base_url: is required",
			"agents.providers.openai.api_key: set it or agents.providers.openai.api_key_path",
			"agents.providers.Bad/Name: the name must be 1 to 63 of lower-case letters",
			"agents.providers.both.api_key: set only one of it and agents.providers.both.api_key_path",
			`agents.providers.gemini.kind: "gemini" must be anthropic or openai`,
			"agents.providers.gemini.base_url: \"ftp://x.example\" must be an absolute http(s) URL",
			"agents.providers.gemini.api_key: must not start or end with white space",
		}},
		{"base URL carries no credential, query or stray /v1", `
agents:
  providers:
    a: {kind: openai, base_url: "https://user:pw@api.openai.com/v1", api_key: k}
    b: {kind: openai, base_url: "https://api.openai.com/v1?key=k", api_key: k}
    c: {kind: anthropic, base_url: "https://api.anthropic.com/v1/", api_key: k}
`, nil, []string{
			"agents.providers.a.base_url: must not carry a user name or password",
			"agents.providers.b.base_url: must have no query or fragment",
			"agents.providers.c.base_url: must be the API's root without /v1 for kind anthropic",
		}},
		{"server tools", `
agents:
  providers:
    openai: {kind: openai, base_url: https://api.openai.com/v1, api_key: k, allowed_server_tools: [web_search, browsing, web_search]}
`, nil, []string{
			`agents.providers.openai.allowed_server_tools[1]: "browsing" is not a server tool class (known: code_execution, computer_use, file_search, image_generation, mcp, web_fetch, web_search)`,
			`agents.providers.openai.allowed_server_tools[2]: "web_search" is listed twice`,
		}},
		{"unknown provider key", `
agents:
  providers:
    openai: {kind: openai, base_url: https://api.openai.com/v1, api_key: k, organization: x}
`, nil, []string{"unknown key `organization`"}},
		{"models", `
agents:
  providers:
    openai: {kind: openai, base_url: https://api.openai.com/v1, api_key: k}
  models:
    - {name: gpt-5, provider: openai}
    - {name: gpt-5, provider: openai}
    - {name: "-gpt", provider: openai}
    - {name: o3}
    - {name: o4, provider: azure}
    - {name: o5, provider: openai, presets: [codex, aider, claude-code, codex]}
`, nil, []string{
			`agents.models[1].name: "gpt-5" is also agents.models[0]; model names are unique`,
			"agents.models[2].name: must be 1 to 128 of letters",
			"agents.models[3].provider: is required",
			`agents.models[4].provider: "azure" is not in agents.providers (openai)`,
			`agents.models[5].presets[1]: "aider" is not a known preset (known: claude-code, codex, command, opencode)`,
			"agents.models[5].presets[2]: preset claude-code cannot talk to provider openai, whose kind is openai",
			`agents.models[5].presets[3]: "codex" is listed twice`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, minimalYAML+tc.yaml), envOf(tc.env))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "key=k") {
				t.Errorf("error echoes a credential: %q", err)
			}
		})
	}
}

func TestRepoAgentShape(t *testing.T) {
	for input, want := range map[string]string{
		"agent: {preset: codex, model: gpt-5-codex}\n":                           "",
		"agent: {preset: opencode, model: openai/gpt-oss-120b}\n":                "",
		"agent: {preset: claude-code, model: claude-opus-4-1}\n":                 "",
		"agent: {preset: command, command: [./a], model: gpt-5-mini}\n":          "",
		"agent: {command: [./a]}\n":                                              "",
		"agent: {preset: aider}\n":                                               `agent.preset: "aider" is not a known preset (known: claude-code, codex, command, opencode)`,
		"agent: {preset: codex}\n":                                               "agent.model: is required for preset codex",
		"agent: {preset: claude-code, model: m, command: [claude, -p]}\n":        "agent.command: is only for preset command; preset claude-code runs its own CLI",
		"agent: {preset: codex, model: --yolo}\n":                                "agent.model: must be 1 to 128",
		"agent: {preset: codex, model: \"gpt 5\"}\n":                             "agent.model:",
		"agent: {model: gpt-5-codex}\n":                                          "agent.preset: is required with agent.model",
		"agent: {preset: command}\n":                                             "agent.command: must be an argv list",
		"agent: {preset: command, command: [\"\", x]}\n":                         "agent.command[0]: the program must not be empty",
		"agent: {preset: codex, model: gpt-5-codex, base_url: http://x}\n":       "unknown key `base_url`",
		"agent: {preset: codex, model: gpt-5-codex, provider: openai}\n":         "unknown key `provider`",
		"agent: {preset: codex, model: gpt-5-codex, api_key: k}\n":               "unknown key `api_key`",
		"agent: {preset: codex, model: gpt-5-codex, env: {OPENAI_API_KEY: k}}\n": "unknown key `env`",
	} {
		_, err := ParseRepo([]byte(input))
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseRepo(%q) = %v", input, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("ParseRepo(%q) = %v, want an error containing %q", input, err, want)
		}
	}
}

func TestRepoAgentAgainstServer(t *testing.T) {
	cfg := loadAgents(t, nil)
	parse := func(s string) Agent {
		t.Helper()
		r, err := ParseRepo([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return r.Agent
	}
	for _, c := range []struct {
		yaml string
		want contract.Agent
		err  string
	}{
		{yaml: "agent: {preset: codex, model: gpt-5-codex}",
			want: contract.Agent{Preset: contract.PresetCodex, Model: "gpt-5-codex", Provider: "openai", ProviderKind: "openai"}},
		{yaml: "agent: {preset: opencode, model: claude-opus-4-1}",
			want: contract.Agent{Preset: contract.PresetOpenCode, Model: "claude-opus-4-1", Provider: "anthropic", ProviderKind: "anthropic"}},
		{yaml: "agent: {preset: claude-code, model: claude-opus-4-1}",
			want: contract.Agent{Preset: contract.PresetClaudeCode, Model: "claude-opus-4-1", Provider: "anthropic", ProviderKind: "anthropic"}},
		{yaml: "agent: {command: [./agent, --fast]}",
			want: contract.Agent{Preset: contract.PresetCommand, Command: []string{"./agent", "--fast"}}},
		{yaml: "agent: {preset: command, command: [./agent], model: gpt-5-mini}",
			want: contract.Agent{Preset: contract.PresetCommand, Command: []string{"./agent"}, Model: "gpt-5-mini", Provider: "openai", ProviderKind: "openai"}},

		{yaml: "agent: {preset: codex, model: gpt-6}",
			err: `agent.model: "gpt-6" is not a model this Inspect server offers to preset codex; choose one of: gpt-5-codex`},
		{yaml: "agent: {preset: codex, model: gpt-5-mini}",
			err: `agent.model: "gpt-5-mini" is offered only to presets opencode, command on this Inspect server; choose one of: gpt-5-codex`},
		{yaml: "agent: {preset: claude-code, model: gpt-5-codex}",
			err: `choose one of: claude-opus-4-1`},
		{yaml: "agent: {preset: command, command: [./a], model: gpt-5-codex}",
			err: `agent.model: "gpt-5-codex" is offered only to presets codex, opencode on this Inspect server; choose one of: gpt-5-mini`},
		{yaml: "", err: "agent: none is configured"},
	} {
		a := parse(c.yaml)
		got, err := a.Spec(cfg)
		if verr := a.Validate(cfg); (verr == nil) != (err == nil) {
			t.Errorf("%s: Validate = %v but Spec = %v", c.yaml, verr, err)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: Spec() = %v, want an error containing %q", c.yaml, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.yaml, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Spec() = %+v, want %+v", c.yaml, got, c.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: the spec's agent is invalid: %v", c.yaml, err)
		}
	}

	none := Server{}
	err := Agent{Preset: "codex", Model: "gpt-5-codex"}.Validate(none)
	if err == nil || !strings.Contains(err.Error(), "it offers none to that preset") {
		t.Errorf("a server with no models: %v", err)
	}
	err = Agent{Preset: "command", Command: []string{"./a"}, Model: "m"}.Validate(none)
	if err == nil || !strings.Contains(err.Error(), "remove agent.model") {
		t.Errorf("a command agent with a model the server lacks: %v", err)
	}
	if err := (Agent{Command: []string{"./a"}}).Validate(none); err != nil {
		t.Errorf("a command agent needs no model: %v", err)
	}
}

// TestAgentsKeysDocumented keeps docs/configuration.md in step with the
// agents section, which has keys no environment variable sets.
func TestAgentsKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"agents.token_budget", "agents.providers", "agents.models"}
	for _, prefix := range []struct {
		name string
		t    reflect.Type
	}{{"agents.providers.<name>.", reflect.TypeOf(Provider{})}, {"agents.models[].", reflect.TypeOf(Model{})}} {
		for i := range prefix.t.NumField() {
			if tag := prefix.t.Field(i).Tag.Get("yaml"); tag != "" {
				keys = append(keys, prefix.name+tag)
			}
		}
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("%s is not documented in docs/configuration.md", k)
		}
	}
	for _, k := range []string{"agent.preset", "agent.model", "agent.command"} {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("repo key %s is not documented in docs/configuration.md", k)
		}
	}
}

// agents.tools_image, pinned by digest, reaches every session's agent.
func TestToolsImageReachesTheSpec(t *testing.T) {
	ref := "oci:/var/cache/inspect-tools/layout@sha256:" + strings.Repeat("b", 64)
	cfg := loadAgents(t, map[string]string{"INSPECT_AGENTS_TOOLS_IMAGE": ref})
	a, err := Agent{Preset: "codex", Model: "gpt-5-codex"}.Spec(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.ToolsImage != ref || a.Validate() != nil {
		t.Fatalf("agent = %+v (%v)", a, a.Validate())
	}
}
