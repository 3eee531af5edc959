package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/toolsimage"
)

// The agent CLIs' versions these invocations were written against and
// checked with (their --help, and a run against a scripted model endpoint
// with no network but loopback). Install exactly these in the sandbox's
// image: a newer CLI may rename a flag or a config key, and codex is run
// with --strict-config so that a renamed key fails loudly.
const (
	CodexVersion      = "0.171.0" // npm @openai/codex
	OpenCodeVersion   = "1.18.33" // npm opencode-ai
	ClaudeCodeVersion = "2.1.332" // npm @anthropic-ai/claude-code
)

// ProxyKeyPlaceholder is what an agent CLI is given where it insists on an
// API key. It is not a credential: the model proxy drops whatever key the
// agent sends and adds the provider's own at the far end.
const ProxyKeyPlaceholder = "inspect-proxy-holds-the-key"

// AgentMaxTurns bounds the model round trips of a CLI that has such a
// limit (claude --max-turns, opencode's agent steps). The session's
// timeout and token budget bound every agent anyway.
const AgentMaxTurns = 200

// codexKeyEnv is the variable codex's provider block names (env_key); the
// CLI refuses to start unless it is set.
const codexKeyEnv = "INSPECT_MODEL_PROXY_KEY"

// AgentPaths are where things are inside the sandbox.
type AgentPaths struct {
	// PromptFile and AnswerFile are /workspace/.inspect/prompt.md and
	// answer.md (PromptFile, AnswerFile).
	PromptFile, AnswerFile string
	// Home is a directory for the CLI's home and config, inside the
	// session: writable, not part of the change. Invocation.Files go
	// under it, and each CLI keeps its state there.
	Home string
	// TranscriptFile is where the CLI's transcript (its JSON events)
	// should go; "" for none. No CLI here writes its events to a file it
	// is told; each prints them on standard output when asked to, so a
	// non-empty TranscriptFile turns that on (Invocation.StdoutTranscript).
	TranscriptFile string
	// ModelBaseURL is the model proxy for the agent's provider, e.g.
	// http://127.0.0.1:8931/v1/providers/openai (ModelBaseURL). It must
	// be an http URL on loopback: the sandbox has no other way out, and the
	// CLI is pointed at nothing else.
	ModelBaseURL string
}

// Invocation is how to run an agent non-interactively in the sandbox.
type Invocation struct {
	// Argv is the command: never a shell string.
	Argv []string
	// Env is extra environment for the agent, on top of the sandbox's. It
	// holds no credential: where a CLI insists on an API-key variable it
	// gets ProxyKeyPlaceholder. It never sets HOME or PATH.
	Env map[string]string
	// Files are written under AgentPaths.Home before the run, by paths
	// relative to it (codex/config.toml, ...).
	Files map[string][]byte
	// StdinFile is a file inside the sandbox to give the agent as its
	// standard input ("" for none). The CLI presets read the prompt
	// (PromptFile) there, rather than from an argv element: one argv
	// element is limited to 128 KiB on Linux, and a prompt with its
	// gathered context may be longer.
	StdinFile string
	// StdoutTranscript says that the agent's standard output is its JSON
	// event stream, to be kept as AgentPaths.TranscriptFile rather than in
	// the output tail (its standard error still belongs in the tail).
	StdoutTranscript bool
	// FinalMessageFile is a file (inside the sandbox) where the CLI
	// itself writes its final message (codex exec --output-last-message),
	// or "" when only the agent, following the prompt, writes AnswerFile.
	FinalMessageFile string
}

// AgentInvocation says how to run agent a with the files at p. It is pure:
// it reads and writes nothing, so the supervisor writes Files and runs Argv.
func AgentInvocation(a contract.Agent, p AgentPaths) (Invocation, error) {
	if err := a.Validate(); err != nil {
		return Invocation{}, err
	}
	if err := p.validate(a); err != nil {
		return Invocation{}, err
	}
	switch a.Preset {
	case contract.PresetCommand:
		return commandInvocation(a, p), nil
	case contract.PresetCodex:
		return codexInvocation(a, p), nil
	case contract.PresetOpenCode:
		return openCodeInvocation(a, p)
	case contract.PresetClaudeCode:
		return claudeCodeInvocation(a, p), nil
	}
	return Invocation{}, fmt.Errorf("preset %q has no invocation in this build", a.Preset)
}

func (p AgentPaths) validate(a contract.Agent) error {
	var faults []string
	// In a fixed order, so the message is the same every time.
	for _, f := range [...]struct{ name, v string }{{"prompt file", p.PromptFile}, {"answer file", p.AnswerFile}, {"home", p.Home}} {
		if !path.IsAbs(f.v) || path.Clean(f.v) != f.v || f.v == "/" {
			faults = append(faults, fmt.Sprintf("the %s %q must be an absolute, clean path", f.name, f.v))
		}
	}
	if p.TranscriptFile != "" && (!path.IsAbs(p.TranscriptFile) || path.Clean(p.TranscriptFile) != p.TranscriptFile) {
		faults = append(faults, fmt.Sprintf("the transcript file %q must be an absolute, clean path", p.TranscriptFile))
	}
	if a.Provider != "" || p.ModelBaseURL != "" {
		if err := checkModelBaseURL(p.ModelBaseURL); err != nil {
			faults = append(faults, err.Error())
		}
	}
	if len(faults) > 0 {
		return errors.New("agent paths: " + strings.Join(faults, "; "))
	}
	return nil
}

// checkModelBaseURL checks that the proxy's URL is plain http on loopback,
// with no user info, query or fragment.
func checkModelBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || s == "" {
		return fmt.Errorf("the model base URL %q is not a URL", s)
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	switch {
	case u.Scheme != "http" || host == "":
		return fmt.Errorf("the model base URL %q must be http://HOST:PORT/...", s)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return errors.New("the model base URL must have no user info, query or fragment")
	case host != "localhost" && (ip == nil || !ip.IsLoopback()):
		return fmt.Errorf("the model base URL %q must be on loopback: the sandbox reaches nothing else", s)
	}
	return nil
}

// commandInvocation runs the repository's argv with the prompt file as its
// last argument. A command agent given a provider learns where the proxy
// is from INSPECT_MODEL_BASE_URL and INSPECT_MODEL_API (openai or
// anthropic), and its model from INSPECT_MODEL.
func commandInvocation(a contract.Agent, p AgentPaths) Invocation {
	inv := Invocation{Argv: append(append([]string(nil), a.Command...), p.PromptFile)}
	if a.Model == "" {
		return inv // as before presets: the argv and nothing else
	}
	inv.Env = map[string]string{"INSPECT_MODEL": a.Model}
	if a.Provider != "" {
		inv.Env["INSPECT_MODEL_BASE_URL"] = p.ModelBaseURL
		inv.Env["INSPECT_MODEL_API"] = a.ProviderKind
	}
	return inv
}

// codexInvocation runs `codex exec` (Codex CLI 0.171.0):
//
//	codex exec --strict-config --skip-git-repo-check
//	  --dangerously-bypass-approvals-and-sandbox --color never
//	  --model MODEL --output-last-message FILE [--json] -
//
// The prompt comes on standard input: `codex exec` takes it as an argument
// or, given `-`, reads it from stdin. --dangerously-bypass-approvals-and-
// sandbox turns off codex's own approvals and sandbox: ours is the
// boundary, and there is nobody to approve anything. --skip-git-repo-check
// because the workspace's .git is not one codex would trust.
// --strict-config makes an unknown config.toml key an error, so a CLI other
// than CodexVersion cannot silently ignore one of the settings below.
// --json prints the events as JSONL on stdout (the transcript).
//
// $CODEX_HOME/config.toml points the CLI at the proxy (a provider of its
// own, "inspect", speaking the Responses API) and turns off what would
// reach further or ask a person: update checks, analytics, feedback,
// OpenTelemetry export, the hosted web_search tool (which the provider
// would run on the open web), and the workspace's own AGENTS.md (the
// prompt carries the default branch's).
func codexInvocation(a contract.Agent, p AgentPaths) Invocation {
	home := path.Join(p.Home, "codex")
	last := path.Join(p.Home, "codex-last-message.md")
	argv := []string{cliPath(a, toolsimage.Codex), "exec",
		"--strict-config",
		"--skip-git-repo-check",
		"--dangerously-bypass-approvals-and-sandbox",
		"--color", "never",
		"--model", a.Model,
		"--output-last-message", last,
	}
	if p.TranscriptFile != "" {
		argv = append(argv, "--json")
	}
	argv = append(argv, "-") // the prompt is on stdin
	var cfg bytes.Buffer
	fmt.Fprintf(&cfg, "# Written by Inspect for one session (Codex CLI %s). The model proxy\n", CodexVersion)
	cfg.WriteString("# holds the provider's key; the CLI reaches nothing else.\n")
	fmt.Fprintf(&cfg, "model = %s\n", tomlString(a.Model))
	cfg.WriteString(`model_provider = "inspect"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"
project_doc_max_bytes = 0

[model_providers.inspect]
name = "Inspect model proxy"
`)
	fmt.Fprintf(&cfg, "base_url = %s\n", tomlString(p.ModelBaseURL))
	cfg.WriteString(`wire_api = "responses"
env_key = "` + codexKeyEnv + `"

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[otel]
exporter = "none"
`)
	return Invocation{
		Argv: argv,
		Env: map[string]string{
			"CODEX_HOME": home,
			codexKeyEnv:  ProxyKeyPlaceholder,
		},
		Files:            map[string][]byte{"codex/config.toml": cfg.Bytes()},
		StdinFile:        p.PromptFile,
		StdoutTranscript: p.TranscriptFile != "",
		FinalMessageFile: last,
	}
}

// openCodeInvocation runs `opencode run` (OpenCode 1.18.33):
//
//	opencode run --pure --auto --model inspect/MODEL [--format json]
//
// With no message argument, `opencode run` reads the prompt from standard
// input. --auto approves every permission not explicitly denied (ours is
// the sandbox); --pure loads no external plugins. OpenCode has no flag for
// its final message, so FinalMessageFile is "": the agent writes
// AnswerFile as the prompt asks.
//
// Its config ($XDG_CONFIG_HOME/opencode/opencode.json) has one provider,
// "inspect", using the AI SDK package OpenCode bundles for the provider's
// API (@ai-sdk/openai, which speaks the Responses API, or
// @ai-sdk/anthropic), pointed at the proxy with the placeholder key; no
// other provider is enabled. It also turns off sharing, autoupdate, the
// git snapshots OpenCode takes for undo, LSP servers and formatters
// (which it would try to download), denies the web tools, and caps the
// build agent's steps. The environment turns off the models.dev fetch,
// default plugins, Claude Code compatibility and the project's own config
// and AGENTS.md (the prompt carries the default branch's). A
// package-lock.json in the config directory stops its start-up install of
// the plugin SDK from the npm registry. All of its state goes under Home
// through the XDG variables.
func openCodeInvocation(a contract.Agent, p AgentPaths) (Invocation, error) {
	pkg, baseURL := "@ai-sdk/openai", p.ModelBaseURL
	if a.ProviderKind == contract.ProviderKindAnthropic {
		// @ai-sdk/anthropic's baseURL includes /v1 (it asks for
		// {baseURL}/messages); the proxy's anthropic routes, like
		// ANTHROPIC_BASE_URL for Claude Code, take /v1/messages.
		pkg, baseURL = "@ai-sdk/anthropic", p.ModelBaseURL+"/v1"
	}
	model := "inspect/" + a.Model
	cfg := map[string]any{
		"autoupdate":        false,
		"share":             "disabled",
		"snapshot":          false,
		"lsp":               false,
		"formatter":         false,
		"model":             model,
		"small_model":       model,
		"enabled_providers": []string{"inspect"},
		"provider": map[string]any{
			"inspect": map[string]any{
				"npm":  pkg,
				"name": "Inspect model proxy",
				"options": map[string]any{
					"baseURL": baseURL,
					"apiKey":  ProxyKeyPlaceholder,
				},
				"models": map[string]any{a.Model: map[string]any{"name": a.Model}},
			},
		},
		"permission": map[string]any{
			"edit":               "allow",
			"bash":               "allow",
			"external_directory": "allow",
			"webfetch":           "deny",
			"websearch":          "deny",
		},
		"agent": map[string]any{
			"build": map[string]any{"steps": AgentMaxTurns},
			// The title agent names the conversation for OpenCode's own
			// session list, which nobody sees here: one model request
			// fewer, and none racing the agent's first.
			"title": map[string]any{"disable": true},
		},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return Invocation{}, err
	}
	argv := []string{cliPath(a, toolsimage.OpenCode), "run", "--pure", "--auto", "--model", model}
	if p.TranscriptFile != "" {
		argv = append(argv, "--format", "json")
	}
	home := path.Join(p.Home, "opencode")
	return Invocation{
		Argv: argv,
		Env: map[string]string{
			"XDG_CONFIG_HOME":                  path.Join(home, "config"),
			"XDG_DATA_HOME":                    path.Join(home, "data"),
			"XDG_CACHE_HOME":                   path.Join(home, "cache"),
			"XDG_STATE_HOME":                   path.Join(home, "state"),
			"OPENCODE_DISABLE_AUTOUPDATE":      "1",
			"OPENCODE_DISABLE_MODELS_FETCH":    "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
			"OPENCODE_DISABLE_CLAUDE_CODE":     "1",
			"OPENCODE_DISABLE_PROJECT_CONFIG":  "1",
			"OPENCODE_DISABLE_SHARE":           "1",
		},
		Files: map[string][]byte{
			"opencode/config/opencode/opencode.json": append(data, '\n'),
			// OpenCode installs its plugin SDK, @opencode-ai/plugin, into
			// every config directory at each start, in the background,
			// unless the directory has a node_modules and a package-lock.json
			// that lists the package (Npm.install in its bundle). The SDK
			// serves plugins only, and --pure loads none: without these two
			// files each start resolves the SDK's dependency tree against
			// the npm registry (4–5 requests, which the sandbox has no route
			// for) beside the agent's first request.
			"opencode/config/opencode/node_modules/.keep": {},
			"opencode/config/opencode/package-lock.json":  []byte(openCodePluginLock),
		},
		StdinFile:        p.PromptFile,
		StdoutTranscript: p.TranscriptFile != "",
	}, nil
}

// openCodePluginLock is the package-lock.json that tells OpenCode's
// start-up install that @opencode-ai/plugin is in its config directory
// already: it compares the root package's dependencies only, and never
// reads node_modules when the lock names every package it would add.
const openCodePluginLock = `{"packages":{"":{"dependencies":{"@opencode-ai/plugin":"` + OpenCodeVersion + `"}}}}` + "\n"

// claudeCodeInvocation runs `claude -p` (Claude Code 2.1.332):
//
//	claude -p --model MODEL --dangerously-skip-permissions
//	  --max-turns N --setting-sources user --strict-mcp-config
//	  --disallowed-tools WebSearch,WebFetch
//	  [--output-format stream-json --verbose]
//
// With no prompt argument, `claude -p` reads the prompt from standard
// input. --dangerously-skip-permissions because ours is the sandbox (the
// CLI refuses it as root; the sandbox's uid is not). --setting-sources user
// loads only the settings under CLAUDE_CONFIG_DIR (ours, empty), not the
// workspace's .claude/settings*.json, which could set its own base URL,
// hooks or permissions, nor its CLAUDE.md (the prompt carries the default
// branch's AGENTS.md); --strict-mcp-config starts none of the workspace's
// MCP servers. WebSearch is a server tool the provider would run on the
// open web, and WebFetch cannot work without a network. stream-json needs
// --verbose with -p. There is no flag for the final message: the agent
// writes AnswerFile as the prompt asks.
//
// CLAUDE_CONFIG_DIR/settings.json is written empty: the only settings
// source it reads is ours, even over a restored conversation's state.
//
// The environment points the CLI at the proxy (ANTHROPIC_BASE_URL; it asks
// for /v1/messages under it) with the placeholder key, keeps its state in
// Home, turns off telemetry, error reporting, autoupdate and other
// non-essential traffic, and makes the model it would use for background
// and sub-agent work the chosen one, the only one the server allowed, with
// no remapping of an older model id to a newer one.
func claudeCodeInvocation(a contract.Agent, p AgentPaths) Invocation {
	argv := []string{cliPath(a, toolsimage.Claude), "-p",
		"--model", a.Model,
		"--dangerously-skip-permissions",
		"--max-turns", fmt.Sprint(AgentMaxTurns),
		"--setting-sources", "user",
		"--strict-mcp-config",
		"--disallowed-tools", "WebSearch,WebFetch",
	}
	if p.TranscriptFile != "" {
		argv = append(argv, "--output-format", "stream-json", "--verbose")
	}
	return Invocation{
		Argv: argv,
		Env: map[string]string{
			"ANTHROPIC_BASE_URL":                       p.ModelBaseURL,
			"ANTHROPIC_API_KEY":                        ProxyKeyPlaceholder,
			"CLAUDE_CONFIG_DIR":                        path.Join(p.Home, "claude"),
			"DISABLE_TELEMETRY":                        "1",
			"DISABLE_ERROR_REPORTING":                  "1",
			"DISABLE_AUTOUPDATER":                      "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"ANTHROPIC_DEFAULT_OPUS_MODEL":             a.Model,
			"ANTHROPIC_DEFAULT_SONNET_MODEL":           a.Model,
			"ANTHROPIC_DEFAULT_HAIKU_MODEL":            a.Model,
			"CLAUDE_CODE_SUBAGENT_MODEL":               a.Model,
			// Keep the model id as given: the server allowed that one.
			"CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP": "1",
		},
		// Its own settings file, empty, over whatever a restored state
		// holds there (decision 0073): --setting-sources user reads it,
		// and its env block or apiKeyHelper would win over ours.
		Files:            map[string][]byte{"claude/settings.json": []byte("{}\n")},
		StdinFile:        p.PromptFile,
		StdoutTranscript: p.TranscriptFile != "",
	}
}

// cliPath is how the preset runs the CLI name: from the tools image's
// bin/ when the session has one (decision 0069), else by name, from the
// PATH of the sandbox's root.
func cliPath(a contract.Agent, name string) string {
	if a.ToolsImage != "" {
		return toolsimage.Bin(name)
	}
	return name
}

// tomlString quotes s as a TOML basic string. JSON's string escapes are
// TOML's (\", \\, \n, \uXXXX, ...); model names and the proxy URL are
// checked to need none anyway.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// ToolsPackages are the npm packages of the pinned CLIs, as the tools
// image (toolsimage, `inspect tools build`) installs them.
func ToolsPackages() []toolsimage.Package {
	return []toolsimage.Package{
		{Name: "@openai/codex", Version: CodexVersion},
		{Name: "opencode-ai", Version: OpenCodeVersion},
		{Name: "@anthropic-ai/claude-code", Version: ClaudeCodeVersion},
	}
}
