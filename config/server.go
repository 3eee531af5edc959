// Package config holds Inspect's two kinds of configuration: the server's
// own (YAML plus INSPECT_* environment overrides) and each repository's
// `.github/inspect.yml`. Server config may set anything; repo config may only
// choose among what the server allows (see ARCHITECTURE.md, "Configuration
// boundaries").
package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// Server is the server-wide configuration. Every field is documented in
// docs/configuration.md; TestEveryEnvVarIsDocumented keeps the two in step.
type Server struct {
	// Listen is the HTTP listen address of `inspect serve`.
	Listen string `yaml:"listen"`
	// CommandWord is the comment command, server-wide, e.g. "/inspect".
	CommandWord string `yaml:"command_word"`
	// Paused stops every new session: triggers are answered with a refusal.
	Paused bool `yaml:"paused"`
	// LogLevel is a zerolog level name.
	LogLevel string `yaml:"log_level"`
	// RepoConfigMaxAge is how long a cached repo config may refuse a
	// trigger as paused without being read again.
	RepoConfigMaxAge time.Duration `yaml:"repo_config_max_age"`

	// StateDir holds what `inspect serve` keeps by default: a relative
	// database.dsn (sqlite) and a relative "oci:" snapshots.store are
	// taken from it. Empty means $XDG_STATE_HOME/inspect, or
	// ~/.local/state/inspect; serve makes it (0700) when missing. Load
	// sets it absolute.
	StateDir string `yaml:"state_dir"`

	// ChannelURL is where supervisors reach the session channel. Empty
	// means http://<listen address> (right for the local executor).
	ChannelURL string `yaml:"channel_url"`

	Metrics Metrics `yaml:"metrics"`

	GitHub    GitHub    `yaml:"github"`
	Sessions  Sessions  `yaml:"sessions"`
	Limits    Limits    `yaml:"limits"`
	Repair    Repair    `yaml:"repair"`
	Executor  Executor  `yaml:"executor"`
	Buildkite Buildkite `yaml:"buildkite"`
	Snapshots Snapshots `yaml:"snapshots"`
	Database  Database  `yaml:"database"`
	Workers   Workers   `yaml:"workers"`
	HTTP      HTTP      `yaml:"http"`
	Policy    Policy    `yaml:"policy"`
	Agents    Agents    `yaml:"agents"`
	Egress    Egress    `yaml:"egress"`
	Artifacts Artifacts `yaml:"artifacts"`
	// Web is the dashboard and sign-in with GitHub.
	Web Web `yaml:"web"`
	// Provenance signs each attempt that reports a change (decision 0078).
	Provenance Provenance `yaml:"provenance"`
}

// Metrics is the operator-only Prometheus endpoint.
type Metrics struct {
	// Listen is the address /metrics is served on, a listener of its own
	// so the public webhook listener never exposes it. Empty: no metrics
	// endpoint.
	Listen string `yaml:"listen"`
}

// Artifacts caps the files sessions collect after verify (a repository's
// artifacts: globs) and how long the store keeps them.
type Artifacts struct {
	// MaxFileBytes caps one file; a bigger one is listed, refused.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxSessionBytes caps one session's artifacts together.
	MaxSessionBytes int64 `yaml:"max_session_bytes"`
	// Retention is how long the store keeps an artifact after it was
	// collected; older ones are deleted by the reconcile loop.
	Retention time.Duration `yaml:"retention"`
}

// GitHub is how the app reaches GitHub (or GitHub Enterprise Server).
type GitHub struct {
	AppID int64 `yaml:"app_id"`
	// AppSlug recognises our own events ("<slug>[bot]"). Empty means: ask
	// GET /app at start-up.
	AppSlug        string `yaml:"app_slug"`
	PrivateKey     string `yaml:"private_key"`
	PrivateKeyPath string `yaml:"private_key_path"`
	// WebhookSecret is the active secret; WebhookSecretPrevious, when set, is
	// also accepted so a secret can be rotated without dropping deliveries.
	WebhookSecret string `yaml:"webhook_secret"`
	// WebhookSecretPath is a file holding the active secret; Load reads
	// it into WebhookSecret.
	WebhookSecretPath     string `yaml:"webhook_secret_path"`
	WebhookSecretPrevious string `yaml:"webhook_secret_previous"`
	// APIURL is the REST base: https://api.github.com/; for GHE.com
	// (data residency), https://api.SUBDOMAIN.ghe.com/; for Enterprise
	// Server, https://HOST/api/v3/. Left at github.com's, it follows
	// WebURL (APIURLFor).
	APIURL string `yaml:"api_url"`
	// WebURL is the web root: https://github.com or https://HOST.
	WebURL string `yaml:"web_url"`
	// Outbound is how hard the app may press on GitHub's API.
	Outbound Outbound `yaml:"outbound"`
	// Redelivery recovers webhook deliveries GitHub could not hand us.
	Redelivery Redelivery `yaml:"redelivery"`
}

// Outbound is the discipline toward GitHub's API (its documented secondary
// rate limits), fleet-wide: the counts of content-creating requests live in
// the database, so replicas share one budget per installation.
type Outbound struct {
	// Creates caps content-creating requests (POST, PATCH, PUT, DELETE)
	// per installation in each sliding window; GitHub documents 80 a
	// minute and 500 an hour.
	Creates []RateWindow `yaml:"creates"`
	// MaxConcurrent caps requests in flight across the fleet: GitHub
	// documents 100 concurrent requests, counted whichever replica sends
	// them. Each replica takes an equal share by the live replicas it
	// sees at each heartbeat (at least 1; decision 0054).
	MaxConcurrent int `yaml:"max_concurrent"`
	// ETagCacheEntries bounds the conditional-request cache (0 turns it
	// off). A 304 does not count against the primary rate limit.
	ETagCacheEntries int `yaml:"etag_cache_entries"`
	// MaxWait is how long a request waits in-line for a rate-limit slot or
	// a Retry-After; longer waits give the work back to the queue instead.
	MaxWait time.Duration `yaml:"max_wait"`
}

// RateWindow is at most Limit requests in any Window.
type RateWindow struct {
	Limit  int           `yaml:"limit"`
	Window time.Duration `yaml:"window"`
}

// Redelivery is the sweep over the App's webhook deliveries (GET
// /app/hook/deliveries) that asks GitHub to redeliver the ones we never
// answered 2xx: GitHub does not retry failed deliveries on its own.
type Redelivery struct {
	// Interval is how often the sweep runs, once per interval across the
	// fleet; 0 turns it off.
	Interval time.Duration `yaml:"interval"`
	// Window is how far back the sweep looks; GitHub keeps deliveries
	// (and redelivers them) for 3 days.
	Window time.Duration `yaml:"window"`
	// MaxPerGUID caps the redeliveries asked for one delivery GUID.
	MaxPerGUID int `yaml:"max_per_guid"`
}

// Sessions bounds every session; a repo's config may only narrow these.
type Sessions struct {
	Timeout         time.Duration `yaml:"timeout"`
	CommandTimeout  time.Duration `yaml:"command_timeout"`
	MaxChangedFiles int           `yaml:"max_changed_files"`
	MaxChangeBytes  int64         `yaml:"max_change_bytes"`
	// Baseline runs verify also on the base (the pinned commit without
	// the change) in an attempt of its own, cached per snapshot, base and
	// verify commands, and compares each named test (decision 0080).
	Baseline bool `yaml:"baseline"`
}

// Limits caps how many sessions run and start; a repo's config may only
// narrow the per-repository ones. 0 means no cap.
type Limits struct {
	// ActivePerRepo, ActivePerUser and ActivePerInstallation cap the
	// sessions active at once in one repository, for one requester, and
	// in one GitHub App installation. A session beyond a cap is queued,
	// first come, first served.
	ActivePerRepo         int `yaml:"active_per_repo"`
	ActivePerUser         int `yaml:"active_per_user"`
	ActivePerInstallation int `yaml:"active_per_installation"`
	// DailyPerRepo caps the sessions started in one repository per
	// rolling 24 hours; a trigger beyond it is refused.
	DailyPerRepo int `yaml:"daily_per_repo"`
	// DailyMoneyPerRepo and DailyMoneyPerInstallation are money budgets,
	// in US dollars: the model cost, at agents.models[]'s prices
	// (ModelCost), of the sessions started in one repository, and in one
	// installation, per rolling 24 hours, as daily_per_repo counts them.
	// A trigger when one is reached is refused; a running session that
	// reaches one is stopped at its next model request (decision 0077).
	// 0 means none; a repo's limits.daily_money may narrow the first.
	DailyMoneyPerRepo         float64 `yaml:"daily_money_per_repo"`
	DailyMoneyPerInstallation float64 `yaml:"daily_money_per_installation"`
}

// Repair bounds automatic repair of failing checks, which a repository
// turns on in its own config (repair.enabled).
type Repair struct {
	// MaxSessionsPerPR is how many repair sessions one pull request may
	// have; 0 turns automatic repair off server-wide.
	MaxSessionsPerPR int `yaml:"max_sessions_per_pr"`
	// Cooldown is the least time between the end of a pull request's
	// repair session and the start of its next.
	Cooldown time.Duration `yaml:"cooldown"`
	// Debounce is how long after a failing check its repair is considered,
	// so that checks failing on one commit coalesce into one repair.
	Debounce time.Duration `yaml:"debounce"`
}

// MaxRepairsPerPR caps repair.max_sessions_per_pr.
const MaxRepairsPerPR = 20

// MaxRepairDebounce caps repair.debounce (its validation message says 10m).
const MaxRepairDebounce = 10 * time.Minute

// Executor says where sessions run.
type Executor struct {
	// Kind is "local" (the embedded default: `inspect runner` on this host,
	// in bubblewrap), "buildkite" (a build per attempt on the session
	// pipeline; see Buildkite) or "none" (accept and prepare sessions,
	// never run them).
	Kind string `yaml:"kind"`
	// MaxConcurrent caps the local executor's attempts at once.
	MaxConcurrent int `yaml:"max_concurrent"`
	// WorkDir holds the local attempts' workspaces ("" = the system temp
	// dir). The sandbox user must be able to search every parent.
	WorkDir string `yaml:"work_dir"`
	// SandboxUID and SandboxGID are the host ids the local executor's
	// sandboxes run as when the app runs as root: a dedicated uid no host
	// account or daemon has, never nobody (65534). 0 means the
	// supervisor's default (65600).
	SandboxUID int `yaml:"sandbox_uid"`
	SandboxGID int `yaml:"sandbox_gid"`
	// Limits cap every sandboxed command of the local executor
	// (decision 0031).
	Limits SandboxLimits `yaml:"limits"`
}

// SandboxLimits cap one sandboxed command (setup, agent, verify, a
// service) and everything it starts. 0 turns a limit off.
type SandboxLimits struct {
	// MemoryBytes caps RAM with page cache and /tmp (a cgroup's).
	MemoryBytes int64 `yaml:"memory_bytes"`
	// Pids caps processes and threads at once.
	Pids int64 `yaml:"pids"`
	// CPUShares is the CPU weight under contention (1024 is an ordinary
	// process's).
	CPUShares int64 `yaml:"cpu_shares"`
	// TmpBytes is the size of /tmp.
	TmpBytes int64 `yaml:"tmp_bytes"`
	// WorkspaceBytes caps the disk used under /workspace.
	WorkspaceBytes int64 `yaml:"workspace_bytes"`
	// SessionMemoryBytes and SessionPids cap one session's commands and
	// services together (a parent cgroup holding theirs; decision 0058),
	// beside each one's own limits above.
	SessionMemoryBytes int64 `yaml:"session_memory_bytes"`
	SessionPids        int64 `yaml:"session_pids"`
}

// Defaults of SandboxLimits, sized for a 2-core, 24 GB host running a
// few sessions: one runaway command takes at most a sixth of the memory,
// a tenth of a percent of the host's pid space, and half an ordinary
// process's CPU weight under contention (decision 0031).
const (
	DefaultSandboxMemoryBytes    = 4 << 30
	DefaultSandboxPids           = 4096
	DefaultSandboxCPUShares      = 512
	DefaultSandboxTmpBytes       = 2 << 30
	DefaultSandboxWorkspaceBytes = 10 << 30
	// A session's whole: two commands' (the agent and a service) worth,
	// whatever number of services it starts, so executor.max_concurrent
	// 2 sessions keep within 16 of the host's 24 GB (decision 0058).
	DefaultSessionMemoryBytes = 8 << 30
	DefaultSessionPids        = 8192
)

func (l SandboxLimits) validate(add func(key, format string, args ...any)) {
	for _, f := range []struct {
		key string
		v   int64
		min int64
	}{
		{"executor.limits.memory_bytes", l.MemoryBytes, 64 << 20},
		{"executor.limits.pids", l.Pids, 16},
		{"executor.limits.tmp_bytes", l.TmpBytes, 1 << 20},
		{"executor.limits.workspace_bytes", l.WorkspaceBytes, 64 << 20},
		{"executor.limits.session_memory_bytes", l.SessionMemoryBytes, 64 << 20},
		{"executor.limits.session_pids", l.SessionPids, 16},
	} {
		if f.v != 0 && f.v < f.min {
			add(f.key, "must be 0 (no limit) or at least %d (found %d)", f.min, f.v)
		}
	}
	if l.CPUShares != 0 && (l.CPUShares < 2 || l.CPUShares > 262144) {
		add("executor.limits.cpu_shares", "must be 0 (no weighting) or between 2 and 262144 (found %d)", l.CPUShares)
	}
}

// Buildkite is the Buildkite executor's settings (executor.kind
// buildkite), and `inspect buildkite setup`'s.
type Buildkite struct {
	// APIURL is the REST base: https://api.buildkite.com/ .
	APIURL string `yaml:"api_url"`
	// Organization and Pipeline name the session pipeline.
	Organization string `yaml:"organization"`
	Pipeline     string `yaml:"pipeline"`
	// SnapshotPipeline builds snapshot images (decision 0012): its agents
	// need push access to snapshots.store.
	SnapshotPipeline string `yaml:"snapshot_pipeline"`
	// Branch is the branch builds are created on; empty means the
	// pipeline's default branch. The session's repo and commit come
	// through the spec, never through Buildkite's checkout.
	Branch string `yaml:"branch"`
	// APIToken (or a file holding it) is a REST token with read_builds,
	// write_builds, read_artifacts, read_pipelines and write_pipelines.
	APIToken     string `yaml:"api_token"`
	APITokenPath string `yaml:"api_token_path"`
	// WebhookToken authenticates Buildkite's webhooks to
	// /api/buildkite/hook: sent as X-Buildkite-Token, or used as the key of
	// X-Buildkite-Signature, whichever the webhook is set to.
	WebhookToken string `yaml:"webhook_token"`
	// Queue is the agent queue the session step targets.
	Queue string `yaml:"queue"`
	// SnapshotQueue is the snapshot pipeline's queue: its agents hold
	// registry push credentials, which session agents must not.
	SnapshotQueue string `yaml:"snapshot_queue"`
	// ClusterID is the Buildkite cluster `inspect buildkite setup` creates
	// the pipelines in: Buildkite requires one to create a pipeline.
	ClusterID string `yaml:"cluster_id"`
	// PipelineName and SnapshotPipelineName are the names setup gives the
	// pipelines it creates ("" = the slug). Buildkite derives a pipeline's
	// slug from its name, so each must give its configured slug.
	PipelineName         string `yaml:"pipeline_name"`
	SnapshotPipelineName string `yaml:"snapshot_pipeline_name"`
}

// Snapshots is where snapshot images live and how fresh they are kept.
type Snapshots struct {
	// Store is "oci:" and a directory holding an OCI image layout (the
	// embedded default; a relative path is taken from the working
	// directory), or a registry repository prefix such as
	// "registry.example.com/inspect" (auth from the usual keychains). ""
	// turns snapshots off: every session starts with a cold clone.
	Store string `yaml:"store"`
	// BaseImage is the toolchain image snapshots start from, pinned by
	// digest: "name@sha256:..." in a registry or "oci:/dir@sha256:..." for
	// an OCI layout ("" = an empty base: the sandbox binds the host's
	// toolchain read-only). Any number of layers (decision 0026).
	BaseImage string `yaml:"base_image"`
	// Refresh is how often each enabled repo's snapshot is rebuilt.
	Refresh time.Duration `yaml:"refresh"`
	// Keep is how many snapshots per repo garbage collection keeps.
	Keep int `yaml:"keep"`
}

// Database selects the store.
type Database struct {
	// Driver is "sqlite" (embedded default, one file) or "postgres".
	Driver string `yaml:"driver"`
	// DSN is a file path for sqlite, a connection URL for postgres.
	DSN string `yaml:"dsn"`
}

// Workers tunes the background work loop.
type Workers struct {
	Count        int           `yaml:"count"`
	Lease        time.Duration `yaml:"lease"`
	PollInterval time.Duration `yaml:"poll_interval"`
	MaxAttempts  int           `yaml:"max_attempts"`
	RetryBackoff time.Duration `yaml:"retry_backoff"`
	// ReconcileInterval is how often (and at start-up) each replica asks
	// remote services about active sessions: Buildkite about unfinished
	// builds, GitHub whether each session's PR or repository is still
	// there. Every question is an API call, so it is not every poll.
	ReconcileInterval time.Duration `yaml:"reconcile_interval"`
	// Heartbeat is how often a replica records that it is alive.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// ReplicaTimeout is how long a replica may go without a heartbeat
	// before the others treat it as dead and re-dispatch the local
	// attempts that died with it.
	ReplicaTimeout time.Duration `yaml:"replica_timeout"`
}

// HTTP holds the server's timeouts and limits.
type HTTP struct {
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `yaml:"read_timeout"`
	WriteTimeout      time.Duration `yaml:"write_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	ShutdownTimeout   time.Duration `yaml:"shutdown_timeout"`
	// MaxBodyBytes caps a webhook body. GitHub never sends more than 25 MB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxInflightWebhooks sheds load: a webhook arriving while this many
	// are being accepted is answered 503 at once, so GitHub records a
	// failure the redelivery sweep recovers, instead of the server
	// falling over. 0 means no limit.
	MaxInflightWebhooks int `yaml:"max_inflight_webhooks"`
}

// Policy is what only the server may decide.
type Policy struct {
	// AllowedBots are exact bot logins ("renovate[bot]") that may trigger.
	AllowedBots []string `yaml:"allowed_bots"`
	// ForkPRRepos are "owner/name" repos that accept sessions on fork PRs.
	ForkPRRepos []string `yaml:"fork_pr_repos"`
}

// Agents is the model side of agent sessions: which providers the model
// proxy reaches, with what keys, and which models repositories may choose.
// Endpoints and keys are server-side only: a repository names a model, the
// sandbox reaches the model proxy by the provider's name, and the app adds
// the key at the far end.
type Agents struct {
	// TokenBudget caps the tokens (input plus output, as the provider
	// reports them) one session may use, counted by the model proxy; 0
	// means no cap.
	TokenBudget int64 `yaml:"token_budget"`
	// MaxRequestsInFlight caps one session's model requests in flight at
	// once, across replicas (the store holds each one's reservation).
	MaxRequestsInFlight int `yaml:"max_requests_in_flight"`
	// OutputReservation is the output tokens reserved for a model request
	// that names no output cap of its own (max_tokens and the like).
	OutputReservation int64 `yaml:"output_reservation"`
	// MaxRequestBytes bounds one model request's body, which the model
	// proxy reads whole to check the model and reserve tokens.
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// Providers are keyed by name (contract.ValidProviderName), which the
	// model proxy routes on and models refer to.
	Providers map[string]Provider `yaml:"providers"`
	// Models are the models repositories may choose, each served by one
	// provider.
	Models []Model `yaml:"models"`
	// ToolsImage is the agents' tools image (decision 0069: the CLIs,
	// node and their libraries, built by `inspect tools build`), pinned by
	// digest: "name@sha256:..." in a registry or "oci:/dir@sha256:..." for
	// an OCI layout on the runners' hosts. Every sandbox sees its root
	// read-only at /opt/inspect/tools, and the CLI presets run from there.
	// "" = none: the CLIs are looked for on the sandbox's root.
	ToolsImage string `yaml:"tools_image"`
}

// Provider is one model provider the model proxy forwards to.
type Provider struct {
	// Kind is the API it speaks: contract.ProviderKindOpenAI (Responses
	// and Chat Completions, a Bearer key) or contract.ProviderKindAnthropic
	// (Messages, an x-api-key).
	Kind string `yaml:"kind"`
	// BaseURL is the API's base, as the vendor's own SDKs take it:
	// https://api.openai.com/v1 (OPENAI_BASE_URL) for openai,
	// https://api.anthropic.com (ANTHROPIC_BASE_URL, no /v1) for anthropic.
	// The proxy appends the agent's request path to it.
	BaseURL string `yaml:"base_url"`
	// Key (api_key) or a file holding it (KeyPath, api_key_path) is the
	// provider's key; set exactly one. Read it with APIKey, which reads
	// the file.
	Key     string `yaml:"api_key"`
	KeyPath string `yaml:"api_key_path"`
	// AllowedServerTools are the classes of the provider's own server-side
	// tools (contract.ServerTools: web_search, mcp, ...) an agent's
	// request may offer the model. None by default: each reaches hosts or
	// data beyond the model (decision 0055).
	AllowedServerTools []string `yaml:"allowed_server_tools"`

	name string // set by Server.Provider, for messages
}

// String never shows the key.
func (p Provider) String() string {
	key := "none"
	switch {
	case p.Key != "":
		key = "(set)"
	case p.KeyPath != "":
		key = "file " + p.KeyPath
	}
	return fmt.Sprintf("{Kind:%s BaseURL:%s APIKey:%s}", p.Kind, p.BaseURL, key)
}

// APIKey returns the provider's key, read from its file when api_key_path
// is set (surrounding white space trimmed).
func (p Provider) APIKey() (string, error) {
	if p.KeyPath == "" {
		if p.Key == "" {
			return "", fmt.Errorf("%s: not set", p.key("api_key"))
		}
		return p.Key, nil
	}
	b, err := os.ReadFile(p.KeyPath)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.key("api_key_path"), err)
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", fmt.Errorf("%s: %s is empty", p.key("api_key_path"), p.KeyPath)
	}
	return k, nil
}

func (p Provider) key(k string) string {
	name := p.name
	if name == "" {
		name = "<name>"
	}
	return "agents.providers." + name + "." + k
}

// Model is one model repositories may choose.
type Model struct {
	// Name is the provider's model id (gpt-5-codex,
	// claude-opus-4-1), as the agent sends it and a repository's
	// agent.model names it (contract.ValidModelName); unique.
	Name string `yaml:"name"`
	// Provider names the entry of agents.providers that serves it.
	Provider string `yaml:"provider"`
	// Presets are the agent presets that may use it. Empty means every
	// preset but command that speaks the provider's kind (codex: openai;
	// claude-code: anthropic; opencode: both); command must be listed to
	// be allowed.
	Presets []string `yaml:"presets"`
	// InputPrice and OutputPrice are what the provider charges, in US
	// dollars per million input and output tokens, for the dashboard's
	// cost of a session; 0 (unset) shows no cost.
	InputPrice  float64 `yaml:"input_price"`
	OutputPrice float64 `yaml:"output_price"`
	// CachedInputPrice is what the provider charges per million input
	// tokens read from its prompt cache (OpenAI's cached input,
	// Anthropic's cache reads), and CacheWritePrice per million written
	// to it (Anthropic's cache writes); 0 (unset) prices them at
	// InputPrice (decision 0053).
	CachedInputPrice float64 `yaml:"cached_input_price"`
	CacheWritePrice  float64 `yaml:"cache_write_price"`
}

// validateAgentPrices refuses negative prices.
func (c Server) validateAgentPrices(add func(key, format string, args ...any)) {
	for i, m := range c.Agents.Models {
		if m.InputPrice < 0 || m.OutputPrice < 0 {
			add(fmt.Sprintf("agents.models[%d].input_price", i), "prices must not be negative (found %g and %g)", m.InputPrice, m.OutputPrice)
		}
		if m.CachedInputPrice < 0 {
			add(fmt.Sprintf("agents.models[%d].cached_input_price", i), "prices must not be negative (found %g)", m.CachedInputPrice)
		}
		if m.CacheWritePrice < 0 {
			add(fmt.Sprintf("agents.models[%d].cache_write_price", i), "prices must not be negative (found %g)", m.CacheWritePrice)
		}
	}
}

// ModelCost is what a session's tokens of model cost at the server's
// prices (agents.models[]'s input_price, output_price,
// cached_input_price, cache_write_price), and whether it has any: the
// one place a cost is computed, for the session page and `inspect run`'s
// summary alike. The input's cache reads and writes, parts of u.Input,
// are priced at their own rates, the rest of it at input_price. Tokens
// charged to the budget without a usage report (u.Total past u.Input plus
// u.Output: an answer that ended before its report is charged its
// reservation) are priced at output_price, the higher rate, for want of
// knowing their split (decision 0053).
func (c Server) ModelCost(model string, u contract.TokenUsage) (float64, bool) {
	for _, m := range c.Agents.Models {
		if m.Name != model || m.InputPrice <= 0 && m.OutputPrice <= 0 && m.CachedInputPrice <= 0 && m.CacheWritePrice <= 0 {
			continue
		}
		readPrice, writePrice := m.InputPrice, m.InputPrice
		if m.CachedInputPrice > 0 {
			readPrice = m.CachedInputPrice
		}
		if m.CacheWritePrice > 0 {
			writePrice = m.CacheWritePrice
		}
		uncached := max(u.Input-u.CacheRead-u.CacheWrite, 0)
		unreported := max(u.Total-u.Input-u.Output, 0)
		return (float64(uncached)*m.InputPrice + float64(u.CacheRead)*readPrice + float64(u.CacheWrite)*writePrice +
			float64(u.Output+unreported)*m.OutputPrice) / 1e6, true
	}
	return 0, false
}

// Provider returns the named provider.
// Registry is the package registry upstream the server names name
// (egress.registries).
func (c Server) Registry(name string) (Registry, bool) {
	r, ok := c.Egress.Registries[name]
	return r, ok
}

// Provider is the model provider the server names name.
func (c Server) Provider(name string) (Provider, bool) {
	p, ok := c.Agents.Providers[name]
	if ok {
		p.name = name
	}
	return p, ok
}

// modelPresets is the presets that may use m: its own list, or the
// default for its provider's kind.
func (c Server) modelPresets(m Model) []string {
	if len(m.Presets) > 0 {
		return m.Presets
	}
	var out []string
	kind := c.Agents.Providers[m.Provider].Kind
	for _, p := range contract.KnownPresets() {
		if p != contract.PresetCommand && p.Speaks(kind) {
			out = append(out, string(p))
		}
	}
	return out
}

// ModelAllowed reports whether a repository's agent of preset may use
// model, and the provider that serves it.
func (c Server) ModelAllowed(preset, model string) (provider string, ok bool) {
	for _, m := range c.Agents.Models {
		if m.Name == model {
			if slices.Contains(c.modelPresets(m), preset) {
				return m.Provider, true
			}
			return "", false
		}
	}
	return "", false
}

// modelPresetsByName is the presets that may use the named model, or nil
// when the server has no such model.
func (c Server) modelPresetsByName(model string) []string {
	for _, m := range c.Agents.Models {
		if m.Name == model {
			return c.modelPresets(m)
		}
	}
	return nil
}

// ModelsFor lists the models preset may use, in config order.
func (c Server) ModelsFor(preset string) []string {
	var out []string
	for _, m := range c.Agents.Models {
		if slices.Contains(c.modelPresets(m), preset) {
			out = append(out, m.Name)
		}
	}
	return out
}

// DefaultTokenBudget is agents.token_budget's default.
const DefaultTokenBudget = 2_000_000

// The defaults of agents.max_requests_in_flight, agents.output_reservation
// and agents.max_request_bytes (decision 0027).
const (
	DefaultMaxModelRequestsInFlight = 4
	DefaultOutputReservation        = 8192
	DefaultMaxModelRequestBytes     = 8 << 20
)

func (a Agents) validate(add func(key, format string, args ...any)) {
	if a.TokenBudget < 0 {
		add("agents.token_budget", "must not be negative (0 means no cap; found %d)", a.TokenBudget)
	}
	if a.MaxRequestsInFlight < 1 {
		add("agents.max_requests_in_flight", "must be at least 1 (found %d)", a.MaxRequestsInFlight)
	}
	if a.OutputReservation < 1 {
		add("agents.output_reservation", "must be at least 1 (found %d)", a.OutputReservation)
	}
	if a.MaxRequestBytes < 1024 {
		add("agents.max_request_bytes", "must be at least 1024 (found %d)", a.MaxRequestBytes)
	}
	if a.ToolsImage != "" {
		if err := contract.ValidToolsImage(a.ToolsImage); err != nil {
			add("agents.tools_image", "%v (found %q)", err, a.ToolsImage)
		}
	}
	for name, p := range a.Providers {
		key := "agents.providers." + name
		if err := contract.ValidProviderName(name); err != nil {
			add(key, "the name %v", err)
			continue
		}
		switch p.Kind {
		case contract.ProviderKindOpenAI, contract.ProviderKindAnthropic:
		case "":
			add(key+".kind", "is required: %s", strings.Join(contract.ProviderKinds(), " or "))
		default:
			add(key+".kind", "%q must be %s", p.Kind, strings.Join(contract.ProviderKinds(), " or "))
		}
		if p.BaseURL == "" {
			add(key+".base_url", "is required")
		} else if err := checkURL(p.BaseURL); err != nil {
			add(key+".base_url", "%v", err)
		} else if u, _ := url.Parse(p.BaseURL); u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			add(key+".base_url", "must have no query or fragment: the proxy appends the request's path to it")
		} else if p.Kind == contract.ProviderKindAnthropic && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") {
			add(key+".base_url", "must be the API's root without /v1 for kind anthropic (https://api.anthropic.com, as ANTHROPIC_BASE_URL): agents ask for /v1/messages under it")
		}
		switch {
		case p.Key == "" && p.KeyPath == "":
			add(key+".api_key", "set it or %s.api_key_path", key)
		case p.Key != "" && p.KeyPath != "":
			add(key+".api_key", "set only one of it and %s.api_key_path", key)
		case p.Key != "" && strings.TrimSpace(p.Key) != p.Key:
			add(key+".api_key", "must not start or end with white space")
		}
		for i, tool := range p.AllowedServerTools {
			tk := fmt.Sprintf("%s.allowed_server_tools[%d]", key, i)
			if !slices.Contains(contract.ServerTools(), tool) {
				add(tk, "%q is not a server tool class (known: %s)", tool, strings.Join(contract.ServerTools(), ", "))
			} else if slices.Index(p.AllowedServerTools, tool) < i {
				add(tk, "%q is listed twice", tool)
			}
		}
	}
	seen := map[string]int{}
	for i, m := range a.Models {
		key := fmt.Sprintf("agents.models[%d]", i)
		if err := contract.ValidModelName(m.Name); err != nil {
			add(key+".name", "%v", err)
		} else if j, dup := seen[m.Name]; dup {
			add(key+".name", "%q is also agents.models[%d]; model names are unique", m.Name, j)
		} else {
			seen[m.Name] = i
		}
		p, ok := a.Providers[m.Provider]
		switch {
		case m.Provider == "":
			add(key+".provider", "is required: one of agents.providers")
		case !ok:
			add(key+".provider", "%q is not in agents.providers (%s)", m.Provider, providerList(a.Providers))
		}
		for j, name := range m.Presets {
			pk := fmt.Sprintf("%s.presets[%d]", key, j)
			preset := contract.Preset(name)
			switch {
			case !preset.Known():
				add(pk, "%q is not a known preset (known: %s)", name, presetList())
			case slices.Contains(m.Presets[:j], name):
				add(pk, "%q is listed twice", name)
			case ok && p.Kind != "" && !preset.Speaks(p.Kind) && slices.Contains(contract.ProviderKinds(), p.Kind):
				add(pk, "preset %s cannot talk to provider %s, whose kind is %s", name, m.Provider, p.Kind)
			}
		}
	}
}

// providerList names agents.providers' entries for a fault, or says there
// are none (not "()").
func providerList(ps map[string]Provider) string {
	if len(ps) == 0 {
		return "none is configured"
	}
	return strings.Join(sortedKeys(ps), ", ")
}

func presetList() string {
	var names []string
	for _, p := range contract.KnownPresets() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// Defaults returns the configuration used where nothing is set.
func Defaults() Server {
	return Server{
		Listen:      ":8080",
		CommandWord: "/inspect",
		LogLevel:    "info",
		// Long enough that a burst of comments on a paused repo costs no
		// fetches, short enough that a lost un-pause push heals itself.
		RepoConfigMaxAge: 10 * time.Minute,
		GitHub: GitHub{
			APIURL: githubAPIURL,
			WebURL: "https://github.com",
			Outbound: Outbound{
				Creates:          []RateWindow{{Limit: 80, Window: time.Minute}, {Limit: 500, Window: time.Hour}},
				MaxConcurrent:    100,
				ETagCacheEntries: 4096,
				MaxWait:          30 * time.Second,
			},
			Redelivery: Redelivery{Interval: 5 * time.Minute, Window: 72 * time.Hour, MaxPerGUID: 3},
		},
		Sessions: Sessions{
			Timeout:         30 * time.Minute,
			CommandTimeout:  10 * time.Minute,
			MaxChangedFiles: 100,
			MaxChangeBytes:  5 << 20,
			Baseline:        true,
		},
		Limits: Limits{
			ActivePerRepo:         5,
			ActivePerUser:         3,
			ActivePerInstallation: 20,
			DailyPerRepo:          100,
		},
		Repair: Repair{
			MaxSessionsPerPR: 2,
			Cooldown:         10 * time.Minute,
			Debounce:         30 * time.Second,
		},
		Executor: Executor{Kind: "local", MaxConcurrent: 2, Limits: SandboxLimits{
			MemoryBytes:    DefaultSandboxMemoryBytes,
			Pids:           DefaultSandboxPids,
			CPUShares:      DefaultSandboxCPUShares,
			TmpBytes:       DefaultSandboxTmpBytes,
			WorkspaceBytes: DefaultSandboxWorkspaceBytes,

			SessionMemoryBytes: DefaultSessionMemoryBytes,
			SessionPids:        DefaultSessionPids,
		}},
		Buildkite: Buildkite{
			APIURL:           "https://api.buildkite.com/",
			Pipeline:         "inspect-session",
			SnapshotPipeline: "inspect-snapshot",
			SnapshotQueue:    "inspect-snapshot",
			Queue:            "inspect",
		},
		Snapshots: Snapshots{Store: "oci:inspect-snapshots", Refresh: 30 * time.Minute, Keep: 5},
		Database:  Database{Driver: "sqlite", DSN: "inspect.db"},
		Workers: Workers{
			Count:             4,
			Lease:             2 * time.Minute,
			PollInterval:      time.Second,
			MaxAttempts:       5,
			RetryBackoff:      5 * time.Second,
			ReconcileInterval: time.Minute,
			Heartbeat:         10 * time.Second,
			ReplicaTimeout:    time.Minute,
		},
		HTTP: HTTP{
			ReadHeaderTimeout:   5 * time.Second,
			ReadTimeout:         10 * time.Second,
			WriteTimeout:        15 * time.Second,
			IdleTimeout:         60 * time.Second,
			ShutdownTimeout:     30 * time.Second,
			MaxBodyBytes:        25 << 20,
			MaxInflightWebhooks: 256,
		},
		Agents: Agents{TokenBudget: DefaultTokenBudget, MaxRequestsInFlight: DefaultMaxModelRequestsInFlight,
			OutputReservation: DefaultOutputReservation, MaxRequestBytes: DefaultMaxModelRequestBytes},
		Egress: Egress{IdleTimeout: 2 * time.Minute, Cache: RegistryCache{MaxBytes: DefaultRegistryCacheBytes},
			MaxRegistryRequestsPerAttempt: DefaultMaxRegistryRequestsPerAttempt, MaxRegistryRequests: DefaultMaxRegistryRequests},
		Artifacts: Artifacts{MaxFileBytes: 10 << 20, MaxSessionBytes: 50 << 20, Retention: 30 * 24 * time.Hour},
		Web:       Web{PermissionCache: time.Minute, SessionLifetime: 7 * 24 * time.Hour, MaxLiveStreams: DefaultMaxLiveStreams},
	}
}

// Load reads the YAML file at path (optional: "" means defaults only), then
// applies INSPECT_* overrides from env, then validates.
func Load(path string, env func(string) (string, bool)) (Server, error) {
	cfg, err := load(path, env, nil)
	if err != nil {
		return Server{}, err
	}
	return cfg, nil
}

// DefaultStateDir is state_dir's default: $XDG_STATE_HOME/inspect, else
// $HOME/.local/state/inspect (the XDG base directory specification).
func DefaultStateDir(env func(string) (string, bool)) (string, error) {
	if env == nil {
		env = os.LookupEnv
	}
	if x, ok := env("XDG_STATE_HOME"); ok && filepath.IsAbs(x) {
		return filepath.Join(x, "inspect"), nil
	}
	if home, ok := env("HOME"); ok && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "inspect"), nil
	}
	return "", errors.New("state_dir: not set, and neither XDG_STATE_HOME nor HOME is an absolute path; set state_dir (INSPECT_STATE_DIR)")
}

// ResolveStatePaths makes StateDir absolute (its default when empty) and
// takes a relative sqlite database.dsn and a relative "oci:"
// snapshots.store from it. It writes nothing: serve makes the directory.
// The default comes from the process's XDG_STATE_HOME and HOME (not from
// Load's env, which is for INSPECT_* overrides).
func (c *Server) ResolveStatePaths() error {
	env := os.LookupEnv
	relDSN := c.Database.Driver == "sqlite" && c.Database.DSN != "" && !filepath.IsAbs(c.Database.DSN) &&
		!strings.HasPrefix(c.Database.DSN, "file:") && !strings.Contains(c.Database.DSN, ":memory:")
	layout, isLayout := strings.CutPrefix(c.Snapshots.Store, "oci:")
	relStore := isLayout && layout != "" && !filepath.IsAbs(layout)
	switch {
	case c.StateDir != "":
		abs, err := filepath.Abs(c.StateDir)
		if err != nil {
			return fmt.Errorf("state_dir: %w", err)
		}
		c.StateDir = abs
	case relDSN || relStore:
		dir, err := DefaultStateDir(env)
		if err != nil {
			return err
		}
		c.StateDir = dir
	default:
		if dir, err := DefaultStateDir(env); err == nil {
			c.StateDir = dir
		} // else: nothing relative needs it, and it stays unset
	}
	if relDSN {
		c.Database.DSN = filepath.Join(c.StateDir, c.Database.DSN)
	}
	if relStore {
		c.Snapshots.Store = "oci:" + filepath.Join(c.StateDir, layout)
	}
	return nil
}

// readWebhookSecret reads github.webhook_secret_path into WebhookSecret.
func (c *Server) readWebhookSecret() error {
	if c.GitHub.WebhookSecretPath == "" {
		return nil
	}
	if c.GitHub.WebhookSecret != "" {
		return fmt.Errorf("github.webhook_secret: set only one of it and github.webhook_secret_path")
	}
	b, err := os.ReadFile(c.GitHub.WebhookSecretPath)
	if err != nil {
		return fmt.Errorf("github.webhook_secret_path: %w", err)
	}
	c.GitHub.WebhookSecret = strings.TrimSpace(string(b))
	if c.GitHub.WebhookSecret == "" {
		return fmt.Errorf("github.webhook_secret_path: %s is empty: an empty secret would accept unsigned webhooks", c.GitHub.WebhookSecretPath)
	}
	return nil
}

// decodeStrict decodes YAML, refusing unknown keys so a typo is an error and
// not a silently ignored setting.
func decodeStrict(data []byte, out any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return friendlyYAMLError(err)
	}
	return nil
}

var unknownFieldRE = regexp.MustCompile(`field (\S+) not found in type \S+`)

// friendlyYAMLError rewrites yaml.v3's Go-flavoured messages ("field x not
// found in type config.Repo") into ones that name the key as the user wrote it.
func friendlyYAMLError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	msg = unknownFieldRE.ReplaceAllString(msg, "unknown key `$1`")
	return errors.New(msg)
}

// ValidationError lists every fault found, each naming its key.
type ValidationError struct {
	Faults []string
}

func (e *ValidationError) Error() string {
	return "invalid configuration:\n  " + strings.Join(e.Faults, "\n  ")
}

// Validate checks every field and reports all faults at once.
func (c Server) Validate() error {
	var faults []string
	add := func(key, format string, args ...any) {
		faults = append(faults, key+": "+fmt.Sprintf(format, args...))
	}
	if c.Listen == "" {
		add("listen", "must not be empty")
	}
	if c.Metrics.Listen != "" && c.Metrics.Listen == c.Listen && !strings.HasSuffix(c.Listen, ":0") {
		// The metrics are operator-only: never on the public listener.
		// (Port 0 is two ports the kernel picks, never the same one.)
		add("metrics.listen", "must differ from listen")
	}
	if a := c.Artifacts; a.MaxFileBytes <= 0 || a.MaxFileBytes > contract.HardMaxArtifactBytes {
		add("artifacts.max_file_bytes", "must be 1 to %d", contract.HardMaxArtifactBytes)
	} else if a.MaxSessionBytes < a.MaxFileBytes {
		add("artifacts.max_session_bytes", "must be at least artifacts.max_file_bytes (%d)", a.MaxFileBytes)
	}
	c.validateWeb(add)
	c.validateProvenance(add)
	c.validateAgentPrices(add)
	if c.Artifacts.Retention < time.Hour {
		add("artifacts.retention", "must be at least 1h")
	}
	if err := policy.ValidCommandWord(c.CommandWord); err != nil {
		add("command_word", "%v", err)
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		add("log_level", "%v", err)
	}
	if c.ChannelURL != "" {
		if err := checkURL(c.ChannelURL); err != nil {
			add("channel_url", "%v", err)
		}
	}
	c.validateSessionKeys(add)
	for key, n := range map[string]int{
		"limits.active_per_repo":         c.Limits.ActivePerRepo,
		"limits.active_per_user":         c.Limits.ActivePerUser,
		"limits.active_per_installation": c.Limits.ActivePerInstallation,
		"limits.daily_per_repo":          c.Limits.DailyPerRepo,
	} {
		if n < 0 {
			add(key, "must not be negative (0 means no cap; found %d)", n)
		}
	}
	for key, usd := range map[string]float64{
		"limits.daily_money_per_repo":         c.Limits.DailyMoneyPerRepo,
		"limits.daily_money_per_installation": c.Limits.DailyMoneyPerInstallation,
	} {
		if !(usd >= 0) || math.IsInf(usd, 0) {
			add(key, "must be a number of US dollars, 0 or more (0 means no budget; found %g)", usd)
		}
	}
	if c.Repair.MaxSessionsPerPR < 0 || c.Repair.MaxSessionsPerPR > MaxRepairsPerPR {
		add("repair.max_sessions_per_pr", "must be between 0 and %d (0 turns automatic repair off; found %d)", MaxRepairsPerPR, c.Repair.MaxSessionsPerPR)
	}
	if c.Repair.Cooldown < 0 {
		add("repair.cooldown", "must not be negative")
	}
	if c.Repair.Debounce < 0 || c.Repair.Debounce > MaxRepairDebounce {
		add("repair.debounce", "must be between 0s and 10m (found %s)", c.Repair.Debounce)
	}
	switch c.Executor.Kind {
	case "local", "none":
	case "buildkite":
		c.Buildkite.validate(add)
		if c.ChannelURL == "" {
			add("channel_url", "must be the app's public URL when executor.kind is buildkite: agents reach the session channel there")
		}
	default:
		add("executor.kind", "%q must be local, buildkite or none", c.Executor.Kind)
	}
	if c.Executor.MaxConcurrent < 1 || c.Executor.MaxConcurrent > 256 {
		add("executor.max_concurrent", "must be between 1 and 256")
	}
	c.Executor.Limits.validate(add)
	for _, f := range []struct {
		key string
		id  int
	}{{"executor.sandbox_uid", c.Executor.SandboxUID}, {"executor.sandbox_gid", c.Executor.SandboxGID}} {
		switch {
		case f.id == 65534:
			add(f.key, "must not be nobody's (65534): host daemons run as it")
		case f.id < 0 || f.id > 1<<31:
			add(f.key, "must be between 0 (the default, 65600) and %d", 1<<31)
		}
	}
	if (c.Executor.SandboxUID == 0) != (c.Executor.SandboxGID == 0) {
		add("executor.sandbox_uid", "give executor.sandbox_uid and executor.sandbox_gid together, or neither")
	}
	c.Snapshots.validate(add)
	if c.Workers.ReconcileInterval < time.Second {
		add("workers.reconcile_interval", "must be at least 1s")
	}
	if c.Workers.Heartbeat <= 0 {
		add("workers.heartbeat", "must be positive")
	}
	if c.Workers.ReplicaTimeout < 2*c.Workers.Heartbeat {
		add("workers.replica_timeout", "must be at least twice workers.heartbeat (%s), or a slow heartbeat reads as a dead replica", c.Workers.Heartbeat)
	}
	if c.HTTP.MaxInflightWebhooks < 0 {
		add("http.max_inflight_webhooks", "must not be negative")
	}
	c.GitHub.Outbound.validate(add)
	c.GitHub.Redelivery.validate(add)
	if c.RepoConfigMaxAge <= 0 {
		add("repo_config_max_age", "must be positive")
	}
	if c.GitHub.AppID <= 0 {
		add("github.app_id", "must be the App's numeric id (found %d)", c.GitHub.AppID)
	}
	if c.GitHub.PrivateKey == "" && c.GitHub.PrivateKeyPath == "" {
		add("github.private_key", "set it or github.private_key_path")
	}
	if c.GitHub.PrivateKey != "" && c.GitHub.PrivateKeyPath != "" {
		add("github.private_key", "set only one of it and github.private_key_path")
	}
	if strings.TrimSpace(c.GitHub.WebhookSecret) == "" {
		add("github.webhook_secret", "must not be empty: an empty secret would accept unsigned webhooks")
	}
	if c.GitHub.WebhookSecretPrevious != "" && c.GitHub.WebhookSecretPrevious == c.GitHub.WebhookSecret {
		add("github.webhook_secret_previous", "equals github.webhook_secret; remove it once rotation is done")
	}
	for key, u := range map[string]string{"github.api_url": c.GitHub.APIURL, "github.web_url": c.GitHub.WebURL} {
		if err := checkURL(u); err != nil {
			add(key, "%v", err)
		}
	}
	c.validateGitHubHost(add)
	switch c.Database.Driver {
	case "sqlite", "postgres":
	default:
		add("database.driver", "%q must be sqlite or postgres", c.Database.Driver)
	}
	if c.Database.DSN == "" {
		add("database.dsn", "must not be empty")
	}
	if c.Database.Driver == "sqlite" && (strings.HasPrefix(c.Database.DSN, "file:") || strings.Contains(c.Database.DSN, "?") || strings.Contains(c.Database.DSN, ":memory:")) {
		// Inspect sets the pragmas that make an acknowledgement durable
		// (WAL, synchronous=FULL); a URI or an in-memory database would lose them.
		add("database.dsn", "%q: for sqlite give a plain file path; Inspect sets the connection options itself", c.Database.DSN)
	}
	if c.Workers.Count < 0 {
		add("workers.count", "must not be negative")
	}
	if c.Workers.Lease < time.Second {
		add("workers.lease", "must be at least 1s (found %s)", c.Workers.Lease)
	}
	if c.Workers.PollInterval <= 0 {
		add("workers.poll_interval", "must be positive")
	}
	if c.Workers.MaxAttempts < 1 || c.Workers.MaxAttempts > 50 {
		add("workers.max_attempts", "must be between 1 and 50 (found %d)", c.Workers.MaxAttempts)
	}
	if c.Workers.RetryBackoff < 0 {
		add("workers.retry_backoff", "must not be negative")
	}
	for key, d := range map[string]time.Duration{
		"http.read_header_timeout": c.HTTP.ReadHeaderTimeout,
		"http.read_timeout":        c.HTTP.ReadTimeout,
		"http.write_timeout":       c.HTTP.WriteTimeout,
		"http.idle_timeout":        c.HTTP.IdleTimeout,
		"http.shutdown_timeout":    c.HTTP.ShutdownTimeout,
	} {
		if d <= 0 {
			add(key, "must be positive")
		}
	}
	if c.HTTP.MaxBodyBytes < 1<<10 || c.HTTP.MaxBodyBytes > 25<<20 {
		add("http.max_body_bytes", "must be between 1 KiB and 25 MiB, GitHub's largest payload")
	}
	for i, b := range c.Policy.AllowedBots {
		if !strings.HasSuffix(b, "[bot]") {
			add(fmt.Sprintf("policy.allowed_bots[%d]", i), "%q must be a full bot login ending in [bot]", b)
		}
	}
	for i, r := range c.Policy.ForkPRRepos {
		if parts := strings.Split(r, "/"); len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			add(fmt.Sprintf("policy.fork_pr_repos[%d]", i), "%q must be owner/name", r)
		}
	}
	if len(faults) == 0 {
		return nil
	}
	sortStrings(faults)
	return &ValidationError{Faults: faults}
}

func checkURL(u string) error {
	parsed, err := url.Parse(u)
	if err != nil {
		return err
	}
	if parsed.Scheme != "http" && parsed.Scheme != "https" || parsed.Host == "" {
		return fmt.Errorf("%q must be an absolute http(s) URL", u)
	}
	if parsed.User != nil {
		// Credentials never go in URLs; and this message must not echo one.
		return fmt.Errorf("must not carry a user name or password")
	}
	return nil
}

// PrivateKeyPEM returns the App key, reading the file when a path is set.
func (c Server) PrivateKeyPEM() ([]byte, error) {
	if c.GitHub.PrivateKey != "" {
		return []byte(c.GitHub.PrivateKey), nil
	}
	data, err := os.ReadFile(c.GitHub.PrivateKeyPath)
	if err != nil {
		return nil, fmt.Errorf("github.private_key_path: %w", err)
	}
	return data, nil
}

// WebhookSecrets returns the secrets a delivery may be signed with, active first.
func (c Server) WebhookSecrets() []string {
	secrets := []string{c.GitHub.WebhookSecret}
	if c.GitHub.WebhookSecretPrevious != "" {
		secrets = append(secrets, c.GitHub.WebhookSecretPrevious)
	}
	return secrets
}

// PolicyLimits returns the server's session limits, before any repo
// narrows them (policy.Narrow with Repo.PolicyLimits).
func (c Server) PolicyLimits() policy.Limits {
	return policy.Limits{
		ActivePerRepo:         c.Limits.ActivePerRepo,
		ActivePerUser:         c.Limits.ActivePerUser,
		ActivePerInstallation: c.Limits.ActivePerInstallation,
		DailyPerRepo:          c.Limits.DailyPerRepo,
		DailyMoneyPerRepo:     c.Limits.DailyMoneyPerRepo,
		SessionTimeout:        c.Sessions.Timeout,
		// The installation's budget is the server's alone (policy.Narrow).
		DailyMoneyPerInstallation: c.Limits.DailyMoneyPerInstallation,
		MaxChangedFiles:           c.Sessions.MaxChangedFiles,
		RepairsPerPR:              c.Repair.MaxSessionsPerPR,
	}
}

// ForkPRAllowed reports whether repo ("owner/name") opted in to fork PRs.
func (c Server) ForkPRAllowed(repo string) bool {
	for _, r := range c.Policy.ForkPRRepos {
		if strings.EqualFold(r, repo) {
			return true
		}
	}
	return false
}

var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)

// QueueRE is what a Buildkite queue name may be: it is written into the
// pipeline's YAML by `inspect buildkite setup`.
var QueueRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

func (b Buildkite) validate(add func(key, format string, args ...any)) {
	b.validateAPI(add)
	if len(strings.TrimSpace(b.WebhookToken)) < 16 {
		add("buildkite.webhook_token", "must be at least 16 characters: it is all that authenticates Buildkite's webhooks")
	}
}

// validateAPI checks what talking to Buildkite's REST API about the two
// pipelines needs: all of validate but the webhook's token.
func (b Buildkite) validateAPI(add func(key, format string, args ...any)) {
	if err := checkURL(b.APIURL); err != nil {
		add("buildkite.api_url", "%v", err)
	}
	if !slugRE.MatchString(b.Organization) {
		add("buildkite.organization", "must be the organization's slug (lower-case letters, digits, - and _)")
	}
	if !slugRE.MatchString(b.Pipeline) {
		add("buildkite.pipeline", "must be the session pipeline's slug (lower-case letters, digits, - and _)")
	}
	if !slugRE.MatchString(b.SnapshotPipeline) || b.SnapshotPipeline == b.Pipeline {
		add("buildkite.snapshot_pipeline", "must be the snapshot pipeline's slug, not the session pipeline's")
	}
	if b.APIToken == "" && b.APITokenPath == "" {
		add("buildkite.api_token", "set it or buildkite.api_token_path")
	}
	if b.APIToken != "" && b.APITokenPath != "" {
		add("buildkite.api_token", "set only one of it and buildkite.api_token_path")
	}
	if !QueueRE.MatchString(b.Queue) {
		add("buildkite.queue", "must be 1-100 of letters, digits, '_', '.' and '-'")
	}
	if !QueueRE.MatchString(b.SnapshotQueue) {
		add("buildkite.snapshot_queue", "must be 1-100 of letters, digits, '_', '.' and '-'")
	}
}

func (s Snapshots) validate(add func(key, format string, args ...any)) {
	if s.Store != "" {
		store := s.Store
		if dir, ok := strings.CutPrefix(store, "oci:"); ok && dir != "" && !filepath.IsAbs(dir) {
			store = "oci:/" + filepath.Clean(dir) // checked as if absolute; Load makes it so
		}
		if err := contract.ValidateSnapshotStore(store); err != nil {
			add("snapshots.store", "%v", err)
		}
	}
	if s.BaseImage != "" {
		// agents.tools_image's rule: every session pulls it now (decision
		// 0079), so a tag is refused at startup, not at each session.
		if err := contract.ValidToolsImage(s.BaseImage); err != nil {
			add("snapshots.base_image", "%v (found %q)", err, s.BaseImage)
		}
	}
	if s.Refresh < time.Minute {
		add("snapshots.refresh", "must be at least 1m")
	}
	if s.Keep < 1 || s.Keep > 100 {
		add("snapshots.keep", "must be between 1 and 100")
	}
}

// BuildkiteAPIToken returns the Buildkite API token, read from its file
// when api_token_path is set.
func (c Server) BuildkiteAPIToken() (string, error) {
	if c.Buildkite.APITokenPath == "" {
		return c.Buildkite.APIToken, nil
	}
	b, err := os.ReadFile(c.Buildkite.APITokenPath)
	if err != nil {
		return "", fmt.Errorf("buildkite.api_token_path: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func (o Outbound) validate(add func(key, format string, args ...any)) {
	for i, w := range o.Creates {
		if w.Limit < 1 || w.Window < time.Second {
			add(fmt.Sprintf("github.outbound.creates[%d]", i), "needs a limit of at least 1 and a window of at least 1s")
		}
	}
	if o.MaxConcurrent < 1 {
		add("github.outbound.max_concurrent", "must be at least 1")
	}
	if o.ETagCacheEntries < 0 {
		add("github.outbound.etag_cache_entries", "must not be negative")
	}
	if o.MaxWait < 0 {
		add("github.outbound.max_wait", "must not be negative")
	}
}

// MaxRedeliveryWindow is how long GitHub keeps deliveries and redelivers
// them.
const MaxRedeliveryWindow = 72 * time.Hour

func (r Redelivery) validate(add func(key, format string, args ...any)) {
	if r.Interval < 0 {
		add("github.redelivery.interval", "must not be negative (0 turns the sweep off)")
	}
	if r.Window <= 0 || r.Window > MaxRedeliveryWindow {
		add("github.redelivery.window", "must be positive and at most 72h, GitHub's limit (found %s)", r.Window)
	}
	if r.MaxPerGUID < 1 || r.MaxPerGUID > 20 {
		add("github.redelivery.max_per_guid", "must be between 1 and 20 (found %d)", r.MaxPerGUID)
	}
}

// readServer is the defaults, then the file at path (none when path is
// ""; a read failure is reported as reading), then the INSPECT_*
// overrides from env (os.LookupEnv when nil), not yet validated.
func readServer(path string, env func(string) (string, bool), reading string) (Server, error) {
	cfg := Defaults()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Server{}, fmt.Errorf("%s: %w", reading, err)
		}
		if err := decodeStrict(data, &cfg); err != nil {
			return Server{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	if env == nil {
		env = os.LookupEnv
	}
	if err := applyEnv(&cfg, env); err != nil {
		return Server{}, err
	}
	return cfg, nil
}
