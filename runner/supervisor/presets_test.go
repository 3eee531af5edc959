package supervisor

import (
	"encoding/json"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

func presetPaths(provider string) AgentPaths {
	return AgentPaths{
		PromptFile:   PromptFile,
		AnswerFile:   AnswerFile,
		Home:         "/workspace/.inspect/home",
		ModelBaseURL: "http://127.0.0.1:8931/v1/providers/" + provider,
	}
}

var (
	presetCodex      = contract.Agent{Preset: contract.PresetCodex, Model: "gpt-5-codex", Provider: "openai", ProviderKind: contract.ProviderKindOpenAI}
	presetOpenCodeO  = contract.Agent{Preset: contract.PresetOpenCode, Model: "gpt-5-codex", Provider: "openai", ProviderKind: contract.ProviderKindOpenAI}
	presetOpenCodeA  = contract.Agent{Preset: contract.PresetOpenCode, Model: "claude-opus-4-1", Provider: "anthropic", ProviderKind: contract.ProviderKindAnthropic}
	presetClaudeCode = contract.Agent{Preset: contract.PresetClaudeCode, Model: "claude-opus-4-1", Provider: "anthropic", ProviderKind: contract.ProviderKindAnthropic}
)

func TestPresetInvocations(t *testing.T) {
	const home = "/workspace/.inspect/home"
	cases := []struct {
		name       string
		agent      contract.Agent
		transcript bool
		argv       []string
		env        []string // the variables set, sorted
		files      []string
		stdin      string
		final      string
	}{
		{
			name:  "command",
			agent: contract.Agent{Preset: contract.PresetCommand, Command: []string{"./agent.sh", "--fast"}},
			argv:  []string{"./agent.sh", "--fast", PromptFile},
		},
		{
			name:  "command with a model and provider",
			agent: contract.Agent{Preset: contract.PresetCommand, Command: []string{"./agent.sh"}, Model: "gpt-5-mini", Provider: "openai", ProviderKind: contract.ProviderKindOpenAI},
			argv:  []string{"./agent.sh", PromptFile},
			env:   []string{"INSPECT_MODEL", "INSPECT_MODEL_API", "INSPECT_MODEL_BASE_URL"},
		},
		{
			name:  "codex",
			agent: presetCodex,
			argv: []string{"codex", "exec", "--strict-config", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
				"--color", "never", "--model", "gpt-5-codex", "--output-last-message", home + "/codex-last-message.md", "-"},
			env:   []string{"CODEX_HOME", "INSPECT_MODEL_PROXY_KEY"},
			files: []string{"codex/config.toml"},
			stdin: PromptFile,
			final: home + "/codex-last-message.md",
		},
		{
			name:       "codex with a transcript",
			agent:      presetCodex,
			transcript: true,
			argv: []string{"codex", "exec", "--strict-config", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
				"--color", "never", "--model", "gpt-5-codex", "--output-last-message", home + "/codex-last-message.md", "--json", "-"},
			env:   []string{"CODEX_HOME", "INSPECT_MODEL_PROXY_KEY"},
			files: []string{"codex/config.toml"},
			stdin: PromptFile,
			final: home + "/codex-last-message.md",
		},
		{
			name:  "opencode on openai",
			agent: presetOpenCodeO,
			argv:  []string{"opencode", "run", "--pure", "--auto", "--model", "inspect/gpt-5-codex"},
			env:   openCodeEnv,
			files: openCodeFiles,
			stdin: PromptFile,
		},
		{
			name:       "opencode on anthropic with a transcript",
			agent:      presetOpenCodeA,
			transcript: true,
			argv:       []string{"opencode", "run", "--pure", "--auto", "--model", "inspect/claude-opus-4-1", "--format", "json"},
			env:        openCodeEnv,
			files:      openCodeFiles,
			stdin:      PromptFile,
		},
		{
			name:  "claude-code",
			agent: presetClaudeCode,
			argv: []string{"claude", "-p", "--model", "claude-opus-4-1", "--dangerously-skip-permissions", "--max-turns", "200",
				"--setting-sources", "user", "--strict-mcp-config", "--disallowed-tools", "WebSearch,WebFetch"},
			env:   claudeCodeEnv,
			files: []string{"claude/settings.json"},
			stdin: PromptFile,
		},
		{
			name:       "claude-code with a transcript",
			agent:      presetClaudeCode,
			transcript: true,
			argv: []string{"claude", "-p", "--model", "claude-opus-4-1", "--dangerously-skip-permissions", "--max-turns", "200",
				"--setting-sources", "user", "--strict-mcp-config", "--disallowed-tools", "WebSearch,WebFetch",
				"--output-format", "stream-json", "--verbose"},
			env:   claudeCodeEnv,
			files: []string{"claude/settings.json"},
			stdin: PromptFile,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := presetPaths(tc.agent.Provider)
			if tc.transcript {
				p.TranscriptFile = "/workspace/.inspect/transcript.jsonl"
			}
			inv, err := AgentInvocation(tc.agent, p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(inv.Argv, tc.argv) {
				t.Errorf("argv:\n got %q\nwant %q", inv.Argv, tc.argv)
			}
			if got := presetKeys(inv.Env); !slices.Equal(got, presetSorted(tc.env)) {
				t.Errorf("env sets %v, want %v", got, presetSorted(tc.env))
			}
			if got := presetKeys(inv.Files); !slices.Equal(got, presetSorted(tc.files)) {
				t.Errorf("files %v, want %v", got, presetSorted(tc.files))
			}
			if inv.StdinFile != tc.stdin || inv.FinalMessageFile != tc.final || inv.StdoutTranscript != tc.transcript {
				t.Errorf("stdin %q final %q transcript %v; want %q %q %v", inv.StdinFile, inv.FinalMessageFile, inv.StdoutTranscript, tc.stdin, tc.final, tc.transcript)
			}
			checkInvocationIsSafe(t, inv, p)
		})
	}
}

var openCodeEnv = []string{
	"OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_CLAUDE_CODE", "OPENCODE_DISABLE_DEFAULT_PLUGINS",
	"OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_PROJECT_CONFIG",
	"OPENCODE_DISABLE_SHARE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
}

var openCodeFiles = []string{
	"opencode/config/opencode/node_modules/.keep", "opencode/config/opencode/opencode.json",
	"opencode/config/opencode/package-lock.json",
}

var claudeCodeEnv = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
	"ANTHROPIC_DEFAULT_SONNET_MODEL", "CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_SUBAGENT_MODEL",
	"CLAUDE_CONFIG_DIR", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING", "DISABLE_TELEMETRY",
}

var presetURLRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]*`)

// checkInvocationIsSafe asserts what holds for every invocation: no
// credential-looking value anywhere, every URL the proxy's (or under it),
// key variables holding the placeholder, no shell, nothing the sandbox's
// own environment decides, files under Home.
func checkInvocationIsSafe(t *testing.T, inv Invocation, p AgentPaths) {
	t.Helper()
	var texts []string
	texts = append(texts, inv.Argv...)
	for k, v := range inv.Env {
		texts = append(texts, k+"="+v)
	}
	for name, data := range inv.Files {
		texts = append(texts, name, string(data))
	}
	for _, s := range texts {
		if kind := contract.SecretKind(s); kind != "" {
			t.Errorf("%s in %q", kind, s)
		}
		for _, u := range presetURLRE.FindAllString(s, -1) {
			if u != p.ModelBaseURL && !strings.HasPrefix(u, p.ModelBaseURL+"/") {
				t.Errorf("URL %q is not the model proxy's (%s)", u, p.ModelBaseURL)
			}
		}
		for _, host := range []string{"openai.com", "anthropic.com", "opencode.ai", "models.dev"} {
			if strings.Contains(s, host) {
				t.Errorf("%q names %s", s, host)
			}
		}
	}
	if len(inv.Argv) == 0 {
		t.Fatal("no argv")
	}
	switch path.Base(inv.Argv[0]) {
	case "sh", "bash", "dash", "zsh", "ash", "env", "busybox", "xargs":
		t.Errorf("argv starts with a shell or a wrapper: %q", inv.Argv)
	}
	if slices.Contains(inv.Argv, "-c") {
		t.Errorf("argv has -c: %q", inv.Argv)
	}
	for k, v := range inv.Env {
		switch {
		case k == "HOME" || k == "PATH" || strings.HasPrefix(k, "LD_"):
			t.Errorf("env sets %s, which the sandbox decides", k)
		case strings.Contains(k, "KEY") || strings.Contains(k, "TOKEN") || strings.Contains(k, "SECRET"):
			if v != ProxyKeyPlaceholder {
				t.Errorf("%s = %q, want the placeholder", k, v)
			}
		case strings.HasSuffix(k, "_HOME") || strings.HasSuffix(k, "_DIR"):
			if !strings.HasPrefix(v, p.Home+"/") {
				t.Errorf("%s = %q is not under Home %s", k, v, p.Home)
			}
		}
	}
	for name := range inv.Files {
		if path.IsAbs(name) || path.Clean(name) != name || strings.HasPrefix(name, "..") {
			t.Errorf("file %q is not a clean relative path", name)
		}
	}
	if inv.FinalMessageFile != "" && !strings.HasPrefix(inv.FinalMessageFile, p.Home+"/") {
		t.Errorf("final message file %q is not under Home", inv.FinalMessageFile)
	}
}

func TestPresetCodexConfig(t *testing.T) {
	p := presetPaths("openai")
	inv, err := AgentInvocation(presetCodex, p)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Env["CODEX_HOME"] != p.Home+"/codex" {
		t.Errorf("CODEX_HOME = %q", inv.Env["CODEX_HOME"])
	}
	cfg := string(inv.Files["codex/config.toml"])
	// Top-level keys come before the first table, or TOML puts them in it.
	top, _, _ := strings.Cut(cfg, "\n[")
	for _, line := range []string{
		`model = "gpt-5-codex"`, `model_provider = "inspect"`, `approval_policy = "never"`,
		`sandbox_mode = "danger-full-access"`, `check_for_update_on_startup = false`,
		`web_search = "disabled"`, `project_doc_max_bytes = 0`,
	} {
		if !presetHasLine(top, line) {
			t.Errorf("config.toml lacks top-level %s:\n%s", line, cfg)
		}
	}
	for table, lines := range map[string][]string{
		"model_providers.inspect": {`base_url = "http://127.0.0.1:8931/v1/providers/openai"`, `wire_api = "responses"`, `env_key = "INSPECT_MODEL_PROXY_KEY"`},
		"analytics":               {"enabled = false"},
		"feedback":                {"enabled = false"},
		"history":                 {`persistence = "none"`},
		"otel":                    {`exporter = "none"`},
	} {
		_, body, ok := strings.Cut(cfg, "\n["+table+"]\n")
		body, _, _ = strings.Cut(body, "\n[")
		for _, line := range lines {
			if !ok || !presetHasLine(body, line) {
				t.Errorf("config.toml's [%s] lacks %s:\n%s", table, line, cfg)
			}
		}
	}
	if inv.Env["INSPECT_MODEL_PROXY_KEY"] != ProxyKeyPlaceholder {
		t.Error("codex's env_key variable is not set to the placeholder")
	}
}

func presetHasLine(text, line string) bool { return slices.Contains(strings.Split(text, "\n"), line) }

func TestPresetOpenCodeConfig(t *testing.T) {
	for _, c := range []struct {
		agent        contract.Agent
		pkg, baseURL string
	}{
		{presetOpenCodeO, "@ai-sdk/openai", "http://127.0.0.1:8931/v1/providers/openai"},
		{presetOpenCodeA, "@ai-sdk/anthropic", "http://127.0.0.1:8931/v1/providers/anthropic/v1"},
	} {
		p := presetPaths(c.agent.Provider)
		inv, err := AgentInvocation(c.agent, p)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Autoupdate       *bool    `json:"autoupdate"`
			Share            string   `json:"share"`
			Model            string   `json:"model"`
			SmallModel       string   `json:"small_model"`
			EnabledProviders []string `json:"enabled_providers"`
			Provider         map[string]struct {
				NPM     string `json:"npm"`
				Options struct {
					BaseURL string `json:"baseURL"`
					APIKey  string `json:"apiKey"`
				} `json:"options"`
				Models map[string]any `json:"models"`
			} `json:"provider"`
			Permission map[string]string `json:"permission"`
			Agent      map[string]struct {
				Steps int `json:"steps"`
			} `json:"agent"`
		}
		if err := json.Unmarshal(inv.Files["opencode/config/opencode/opencode.json"], &cfg); err != nil {
			t.Fatal(err)
		}
		prov := cfg.Provider["inspect"]
		switch {
		case len(cfg.Provider) != 1 || !slices.Equal(cfg.EnabledProviders, []string{"inspect"}):
			t.Errorf("providers %v enabled %v", presetKeys(cfg.Provider), cfg.EnabledProviders)
		case prov.NPM != c.pkg || prov.Options.BaseURL != c.baseURL || prov.Options.APIKey != ProxyKeyPlaceholder:
			t.Errorf("provider %+v, want %s at %s", prov, c.pkg, c.baseURL)
		case prov.Models[c.agent.Model] == nil || len(prov.Models) != 1:
			t.Errorf("models %v", prov.Models)
		case cfg.Model != "inspect/"+c.agent.Model || cfg.SmallModel != cfg.Model:
			t.Errorf("model %q small_model %q", cfg.Model, cfg.SmallModel)
		case cfg.Autoupdate == nil || *cfg.Autoupdate || cfg.Share != "disabled":
			t.Errorf("autoupdate %v share %q", cfg.Autoupdate, cfg.Share)
		case cfg.Permission["webfetch"] != "deny" || cfg.Permission["websearch"] != "deny" || cfg.Permission["bash"] != "allow":
			t.Errorf("permission %v", cfg.Permission)
		case cfg.Agent["build"].Steps != AgentMaxTurns:
			t.Errorf("agent %v", cfg.Agent)
		}
		if inv.Env["XDG_CONFIG_HOME"] != p.Home+"/opencode/config" {
			t.Errorf("XDG_CONFIG_HOME = %q: the config file is not where opencode looks", inv.Env["XDG_CONFIG_HOME"])
		}
		// OpenCode skips its start-up install of the plugin SDK when the
		// config directory's lock lists it as a root dependency.
		var lock struct {
			Packages map[string]struct {
				Dependencies map[string]string `json:"dependencies"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(inv.Files["opencode/config/opencode/package-lock.json"], &lock); err != nil {
			t.Fatal(err)
		}
		if _, ok := lock.Packages[""].Dependencies["@opencode-ai/plugin"]; !ok {
			t.Errorf("package-lock.json %+v does not list @opencode-ai/plugin: opencode would install it at each start", lock)
		}
	}
}

func TestPresetClaudeCodeEnv(t *testing.T) {
	p := presetPaths("anthropic")
	inv, err := AgentInvocation(presetClaudeCode, p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ANTHROPIC_BASE_URL": p.ModelBaseURL, "ANTHROPIC_API_KEY": ProxyKeyPlaceholder,
		"CLAUDE_CONFIG_DIR": p.Home + "/claude", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-opus-4-1",
		"CLAUDE_CODE_SUBAGENT_MODEL": "claude-opus-4-1",
	}
	for k, v := range want {
		if inv.Env[k] != v {
			t.Errorf("%s = %q, want %q", k, inv.Env[k], v)
		}
	}
}

func TestPresetCommandInvocation(t *testing.T) {
	cmd := make([]string, 1, 8) // spare capacity: appending must not write into it
	cmd[0] = "./agent"
	a := contract.Agent{Preset: contract.PresetCommand, Command: cmd}
	inv, err := AgentInvocation(a, AgentPaths{PromptFile: PromptFile, AnswerFile: AnswerFile, Home: "/workspace/.inspect/home"})
	if err != nil {
		t.Fatal(err)
	}
	inv.Argv[0] = "changed"
	if cmd[0] != "./agent" || !reflect.DeepEqual(inv.Argv, []string{"changed", PromptFile}) {
		t.Errorf("argv aliases the agent's command: %q %q", cmd, inv.Argv)
	}
	if inv.Env != nil || inv.Files != nil || inv.StdinFile != "" || inv.FinalMessageFile != "" {
		t.Errorf("a plain command got more than its argv: %+v", inv)
	}

	a = contract.Agent{Preset: contract.PresetCommand, Command: []string{"./agent"}, Model: "gpt-5-mini", Provider: "openai", ProviderKind: contract.ProviderKindOpenAI}
	inv, err = AgentInvocation(a, presetPaths("openai"))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Env["INSPECT_MODEL"] != "gpt-5-mini" || inv.Env["INSPECT_MODEL_API"] != "openai" || inv.Env["INSPECT_MODEL_BASE_URL"] != "http://127.0.0.1:8931/v1/providers/openai" {
		t.Errorf("env %v", inv.Env)
	}
}

func TestPresetInvocationRefuses(t *testing.T) {
	good := presetPaths("openai")
	with := func(f func(*AgentPaths)) AgentPaths { p := good; f(&p); return p }
	for _, c := range []struct {
		name  string
		agent contract.Agent
		paths AgentPaths
		want  string
	}{
		{"no model", contract.Agent{Preset: contract.PresetCodex, Provider: "openai", ProviderKind: "openai"}, good, "agent.model"},
		{"codex on anthropic", contract.Agent{Preset: contract.PresetCodex, Model: "m", Provider: "anthropic", ProviderKind: "anthropic"}, good, "agent.provider_kind"},
		{"command argv for a CLI", contract.Agent{Preset: contract.PresetCodex, Command: []string{"sh", "-c", "x"}, Model: "m", Provider: "openai", ProviderKind: "openai"}, good, "agent.command"},
		{"unknown preset", contract.Agent{Preset: "aider", Model: "m"}, good, "agent.preset"},
		{"model is an option", contract.Agent{Preset: contract.PresetCodex, Model: "--x", Provider: "openai", ProviderKind: "openai"}, good, "agent.model"},
		{"no base URL", presetCodex, with(func(p *AgentPaths) { p.ModelBaseURL = "" }), "model base URL"},
		{"a remote base URL", presetCodex, with(func(p *AgentPaths) { p.ModelBaseURL = "https://api.openai.com/v1" }), "model base URL"},
		{"https on loopback", presetCodex, with(func(p *AgentPaths) { p.ModelBaseURL = "https://127.0.0.1:8931/v1" }), "model base URL"},
		{"a base URL with user info", presetCodex, with(func(p *AgentPaths) { p.ModelBaseURL = "http://u:pw@127.0.0.1:8931/v1" }), "user info"},
		{"a base URL with a query", presetCodex, with(func(p *AgentPaths) { p.ModelBaseURL = "http://127.0.0.1:8931/v1?k=v" }), "query"},
		{"a relative home", presetCodex, with(func(p *AgentPaths) { p.Home = "home" }), "home"},
		{"home at the root", presetCodex, with(func(p *AgentPaths) { p.Home = "/" }), "home"},
		{"an unclean prompt path", presetCodex, with(func(p *AgentPaths) { p.PromptFile = "/workspace/../etc/passwd" }), "prompt file"},
		{"a relative transcript", presetCodex, with(func(p *AgentPaths) { p.TranscriptFile = "t.jsonl" }), "transcript"},
	} {
		_, err := AgentInvocation(c.agent, c.paths)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: the error echoes a password: %v", c.name, err)
		}
	}
	for _, ok := range []string{"http://localhost:8931/v1/providers/openai", "http://[::1]:8931/v1/providers/openai", "http://127.0.0.2:9/x"} {
		if _, err := AgentInvocation(presetCodex, with(func(p *AgentPaths) { p.ModelBaseURL = ok })); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestPresetInvocationsCoverEveryPreset fails when a preset is added to the
// contract without an invocation here.
func TestPresetInvocationsCoverEveryPreset(t *testing.T) {
	examples := map[contract.Preset]contract.Agent{
		contract.PresetCommand:    {Preset: contract.PresetCommand, Command: []string{"./a"}},
		contract.PresetCodex:      presetCodex,
		contract.PresetOpenCode:   presetOpenCodeO,
		contract.PresetClaudeCode: presetClaudeCode,
	}
	for _, preset := range contract.KnownPresets() {
		a, ok := examples[preset]
		if !ok {
			t.Errorf("no example agent for preset %s", preset)
			continue
		}
		if _, err := AgentInvocation(a, presetPaths(a.Provider)); err != nil {
			t.Errorf("preset %s: %v", preset, err)
		}
	}
}

// presetKeys is m's keys, sorted.
func presetKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func presetSorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// With a tools image, each CLI preset runs its CLI from the image's bin/
// by absolute path (the root's PATH is the repository's); the rest of the
// argv, and a command agent, are as without.
func TestPresetsRunTheCLIsFromTheToolsImage(t *testing.T) {
	tools := "oci:/var/cache/inspect-tools/layout@sha256:" + strings.Repeat("c", 64)
	for _, c := range []struct {
		agent contract.Agent
		want  string
	}{
		{presetCodex, "/opt/inspect/tools/bin/codex"},
		{presetOpenCodeA, "/opt/inspect/tools/bin/opencode"},
		{presetClaudeCode, "/opt/inspect/tools/bin/claude"},
		{contract.Agent{Preset: contract.PresetCommand, Command: []string{"./agent.sh"}}, "./agent.sh"},
	} {
		plain, err := AgentInvocation(c.agent, presetPaths(c.agent.Provider))
		if err != nil {
			t.Fatal(err)
		}
		a := c.agent
		a.ToolsImage = tools
		inv, err := AgentInvocation(a, presetPaths(a.Provider))
		if err != nil {
			t.Fatal(err)
		}
		if inv.Argv[0] != c.want || !slices.Equal(inv.Argv[1:], plain.Argv[1:]) {
			t.Errorf("%s with a tools image: %q, want %s then %q", a.Preset, inv.Argv, c.want, plain.Argv[1:])
		}
	}
}
