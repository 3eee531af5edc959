package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// EnvVar is one INSPECT_* override. The list is data, not an init()
// registry, so docs and tests can range over it.
type EnvVar struct {
	Name string
	Key  string // the YAML key it overrides
	set  func(c *Server, v string) error
}

func str(p func(*Server) *string) func(*Server, string) error {
	return func(c *Server, v string) error { *p(c) = v; return nil }
}

func integer(p func(*Server) *int) func(*Server, string) error {
	return func(c *Server, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		*p(c) = n
		return nil
	}
}

func int64v(p func(*Server) *int64) func(*Server, string) error {
	return func(c *Server, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		*p(c) = n
		return nil
	}
}

func float(p func(*Server) *float64) func(*Server, string) error {
	return func(c *Server, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		*p(c) = f
		return nil
	}
}

func duration(p func(*Server) *time.Duration) func(*Server, string) error {
	return func(c *Server, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not a duration such as 30s or 2m")
		}
		*p(c) = d
		return nil
	}
}

func boolean(p func(*Server) *bool) func(*Server, string) error {
	return func(c *Server, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not true or false")
		}
		*p(c) = b
		return nil
	}
}

func list(p func(*Server) *[]string) func(*Server, string) error {
	return func(c *Server, v string) error {
		var out []string
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
		*p(c) = out
		return nil
	}
}

// EnvVars lists every environment override.
func EnvVars() []EnvVar {
	return []EnvVar{
		{"INSPECT_LISTEN", "listen", str(func(c *Server) *string { return &c.Listen })},
		{"INSPECT_COMMAND_WORD", "command_word", str(func(c *Server) *string { return &c.CommandWord })},
		{"INSPECT_PAUSED", "paused", boolean(func(c *Server) *bool { return &c.Paused })},
		{"INSPECT_LOG_LEVEL", "log_level", str(func(c *Server) *string { return &c.LogLevel })},
		{"INSPECT_REPO_CONFIG_MAX_AGE", "repo_config_max_age", duration(func(c *Server) *time.Duration { return &c.RepoConfigMaxAge })},
		{"INSPECT_CHANNEL_URL", "channel_url", str(func(c *Server) *string { return &c.ChannelURL })},
		{"INSPECT_METRICS_LISTEN", "metrics.listen", str(func(c *Server) *string { return &c.Metrics.Listen })},
		{"INSPECT_SESSIONS_TIMEOUT", "sessions.timeout", duration(func(c *Server) *time.Duration { return &c.Sessions.Timeout })},
		{"INSPECT_SESSIONS_COMMAND_TIMEOUT", "sessions.command_timeout", duration(func(c *Server) *time.Duration { return &c.Sessions.CommandTimeout })},
		{"INSPECT_SESSIONS_MAX_CHANGED_FILES", "sessions.max_changed_files", integer(func(c *Server) *int { return &c.Sessions.MaxChangedFiles })},
		{"INSPECT_SESSIONS_MAX_CHANGE_BYTES", "sessions.max_change_bytes", int64v(func(c *Server) *int64 { return &c.Sessions.MaxChangeBytes })},
		{"INSPECT_SESSIONS_BASELINE", "sessions.baseline", boolean(func(c *Server) *bool { return &c.Sessions.Baseline })},
		{"INSPECT_LIMITS_ACTIVE_PER_REPO", "limits.active_per_repo", integer(func(c *Server) *int { return &c.Limits.ActivePerRepo })},
		{"INSPECT_LIMITS_ACTIVE_PER_USER", "limits.active_per_user", integer(func(c *Server) *int { return &c.Limits.ActivePerUser })},
		{"INSPECT_LIMITS_ACTIVE_PER_INSTALLATION", "limits.active_per_installation", integer(func(c *Server) *int { return &c.Limits.ActivePerInstallation })},
		{"INSPECT_LIMITS_DAILY_PER_REPO", "limits.daily_per_repo", integer(func(c *Server) *int { return &c.Limits.DailyPerRepo })},
		{"INSPECT_LIMITS_DAILY_MONEY_PER_REPO", "limits.daily_money_per_repo", float(func(c *Server) *float64 { return &c.Limits.DailyMoneyPerRepo })},
		{"INSPECT_LIMITS_DAILY_MONEY_PER_INSTALLATION", "limits.daily_money_per_installation", float(func(c *Server) *float64 { return &c.Limits.DailyMoneyPerInstallation })},
		{"INSPECT_REPAIR_MAX_SESSIONS_PER_PR", "repair.max_sessions_per_pr", integer(func(c *Server) *int { return &c.Repair.MaxSessionsPerPR })},
		{"INSPECT_REPAIR_COOLDOWN", "repair.cooldown", duration(func(c *Server) *time.Duration { return &c.Repair.Cooldown })},
		{"INSPECT_REPAIR_DEBOUNCE", "repair.debounce", duration(func(c *Server) *time.Duration { return &c.Repair.Debounce })},
		{"INSPECT_EXECUTOR_KIND", "executor.kind", str(func(c *Server) *string { return &c.Executor.Kind })},
		{"INSPECT_EXECUTOR_MAX_CONCURRENT", "executor.max_concurrent", integer(func(c *Server) *int { return &c.Executor.MaxConcurrent })},
		{"INSPECT_EXECUTOR_WORK_DIR", "executor.work_dir", str(func(c *Server) *string { return &c.Executor.WorkDir })},
		{"INSPECT_EXECUTOR_SANDBOX_UID", "executor.sandbox_uid", integer(func(c *Server) *int { return &c.Executor.SandboxUID })},
		{"INSPECT_EXECUTOR_SANDBOX_GID", "executor.sandbox_gid", integer(func(c *Server) *int { return &c.Executor.SandboxGID })},
		{"INSPECT_EXECUTOR_LIMITS_MEMORY_BYTES", "executor.limits.memory_bytes", int64v(func(c *Server) *int64 { return &c.Executor.Limits.MemoryBytes })},
		{"INSPECT_EXECUTOR_LIMITS_PIDS", "executor.limits.pids", int64v(func(c *Server) *int64 { return &c.Executor.Limits.Pids })},
		{"INSPECT_EXECUTOR_LIMITS_CPU_SHARES", "executor.limits.cpu_shares", int64v(func(c *Server) *int64 { return &c.Executor.Limits.CPUShares })},
		{"INSPECT_EXECUTOR_LIMITS_TMP_BYTES", "executor.limits.tmp_bytes", int64v(func(c *Server) *int64 { return &c.Executor.Limits.TmpBytes })},
		{"INSPECT_EXECUTOR_LIMITS_WORKSPACE_BYTES", "executor.limits.workspace_bytes", int64v(func(c *Server) *int64 { return &c.Executor.Limits.WorkspaceBytes })},
		{"INSPECT_EXECUTOR_LIMITS_SESSION_MEMORY_BYTES", "executor.limits.session_memory_bytes", int64v(func(c *Server) *int64 { return &c.Executor.Limits.SessionMemoryBytes })},
		{"INSPECT_EXECUTOR_LIMITS_SESSION_PIDS", "executor.limits.session_pids", int64v(func(c *Server) *int64 { return &c.Executor.Limits.SessionPids })},
		{"INSPECT_BUILDKITE_API_URL", "buildkite.api_url", str(func(c *Server) *string { return &c.Buildkite.APIURL })},
		{"INSPECT_BUILDKITE_ORGANIZATION", "buildkite.organization", str(func(c *Server) *string { return &c.Buildkite.Organization })},
		{"INSPECT_BUILDKITE_PIPELINE", "buildkite.pipeline", str(func(c *Server) *string { return &c.Buildkite.Pipeline })},
		{"INSPECT_BUILDKITE_SNAPSHOT_PIPELINE", "buildkite.snapshot_pipeline", str(func(c *Server) *string { return &c.Buildkite.SnapshotPipeline })},
		{"INSPECT_BUILDKITE_SNAPSHOT_QUEUE", "buildkite.snapshot_queue", str(func(c *Server) *string { return &c.Buildkite.SnapshotQueue })},
		{"INSPECT_BUILDKITE_BRANCH", "buildkite.branch", str(func(c *Server) *string { return &c.Buildkite.Branch })},
		{"INSPECT_BUILDKITE_API_TOKEN", "buildkite.api_token", str(func(c *Server) *string { return &c.Buildkite.APIToken })},
		{"INSPECT_BUILDKITE_API_TOKEN_PATH", "buildkite.api_token_path", str(func(c *Server) *string { return &c.Buildkite.APITokenPath })},
		{"INSPECT_BUILDKITE_WEBHOOK_TOKEN", "buildkite.webhook_token", str(func(c *Server) *string { return &c.Buildkite.WebhookToken })},
		{"INSPECT_BUILDKITE_QUEUE", "buildkite.queue", str(func(c *Server) *string { return &c.Buildkite.Queue })},
		{"INSPECT_BUILDKITE_CLUSTER_ID", "buildkite.cluster_id", str(func(c *Server) *string { return &c.Buildkite.ClusterID })},
		{"INSPECT_BUILDKITE_PIPELINE_NAME", "buildkite.pipeline_name", str(func(c *Server) *string { return &c.Buildkite.PipelineName })},
		{"INSPECT_BUILDKITE_SNAPSHOT_PIPELINE_NAME", "buildkite.snapshot_pipeline_name", str(func(c *Server) *string { return &c.Buildkite.SnapshotPipelineName })},
		{"INSPECT_SNAPSHOTS_STORE", "snapshots.store", str(func(c *Server) *string { return &c.Snapshots.Store })},
		{"INSPECT_SNAPSHOTS_BASE_IMAGE", "snapshots.base_image", str(func(c *Server) *string { return &c.Snapshots.BaseImage })},
		{"INSPECT_SNAPSHOTS_REFRESH", "snapshots.refresh", duration(func(c *Server) *time.Duration { return &c.Snapshots.Refresh })},
		{"INSPECT_SNAPSHOTS_KEEP", "snapshots.keep", integer(func(c *Server) *int { return &c.Snapshots.Keep })},
		{"INSPECT_ARTIFACTS_MAX_FILE_BYTES", "artifacts.max_file_bytes", int64v(func(c *Server) *int64 { return &c.Artifacts.MaxFileBytes })},
		{"INSPECT_ARTIFACTS_MAX_SESSION_BYTES", "artifacts.max_session_bytes", int64v(func(c *Server) *int64 { return &c.Artifacts.MaxSessionBytes })},
		{"INSPECT_ARTIFACTS_RETENTION", "artifacts.retention", duration(func(c *Server) *time.Duration { return &c.Artifacts.Retention })},
		{"INSPECT_WEB_PUBLIC_URL", "web.public_url", str(func(c *Server) *string { return &c.Web.PublicURL })},
		{"INSPECT_WEB_CLIENT_ID", "web.client_id", str(func(c *Server) *string { return &c.Web.ClientID })},
		{"INSPECT_WEB_CLIENT_SECRET", "web.client_secret", str(func(c *Server) *string { return &c.Web.ClientSecret })},
		{"INSPECT_WEB_CLIENT_SECRET_PATH", "web.client_secret_path", str(func(c *Server) *string { return &c.Web.ClientSecretPath })},
		{"INSPECT_WEB_KEY_PATH", "web.key_path", str(func(c *Server) *string { return &c.Web.KeyPath })},
		{"INSPECT_WEB_PERMISSION_CACHE", "web.permission_cache", duration(func(c *Server) *time.Duration { return &c.Web.PermissionCache })},
		{"INSPECT_WEB_SESSION_LIFETIME", "web.session_lifetime", duration(func(c *Server) *time.Duration { return &c.Web.SessionLifetime })},
		{"INSPECT_WEB_MAX_LIVE_STREAMS", "web.max_live_streams", integer(func(c *Server) *int { return &c.Web.MaxLiveStreams })},
		{"INSPECT_WEB_PUBLIC_SCREENSHOT_THUMBNAILS", "web.public_screenshot_thumbnails", boolean(func(c *Server) *bool { return &c.Web.PublicScreenshotThumbnails })},
		{"INSPECT_PROVENANCE_SIGNING_KEY", "provenance.signing_key", str(func(c *Server) *string { return &c.Provenance.SigningKey })},
		{"INSPECT_GITHUB_APP_ID", "github.app_id", int64v(func(c *Server) *int64 { return &c.GitHub.AppID })},
		{"INSPECT_GITHUB_APP_SLUG", "github.app_slug", str(func(c *Server) *string { return &c.GitHub.AppSlug })},
		{"INSPECT_STATE_DIR", "state_dir", str(func(c *Server) *string { return &c.StateDir })},
		{"INSPECT_GITHUB_PRIVATE_KEY", "github.private_key", str(func(c *Server) *string { return &c.GitHub.PrivateKey })},
		{"INSPECT_GITHUB_PRIVATE_KEY_PATH", "github.private_key_path", str(func(c *Server) *string { return &c.GitHub.PrivateKeyPath })},
		{"INSPECT_GITHUB_WEBHOOK_SECRET", "github.webhook_secret", str(func(c *Server) *string { return &c.GitHub.WebhookSecret })},
		{"INSPECT_GITHUB_WEBHOOK_SECRET_PATH", "github.webhook_secret_path", str(func(c *Server) *string { return &c.GitHub.WebhookSecretPath })},
		{"INSPECT_GITHUB_WEBHOOK_SECRET_PREVIOUS", "github.webhook_secret_previous", str(func(c *Server) *string { return &c.GitHub.WebhookSecretPrevious })},
		{"INSPECT_GITHUB_API_URL", "github.api_url", str(func(c *Server) *string { return &c.GitHub.APIURL })},
		{"INSPECT_GITHUB_WEB_URL", "github.web_url", str(func(c *Server) *string { return &c.GitHub.WebURL })},
		{"INSPECT_GITHUB_OUTBOUND_MAX_CONCURRENT", "github.outbound.max_concurrent", integer(func(c *Server) *int { return &c.GitHub.Outbound.MaxConcurrent })},
		{"INSPECT_GITHUB_OUTBOUND_ETAG_CACHE_ENTRIES", "github.outbound.etag_cache_entries", integer(func(c *Server) *int { return &c.GitHub.Outbound.ETagCacheEntries })},
		{"INSPECT_GITHUB_OUTBOUND_MAX_WAIT", "github.outbound.max_wait", duration(func(c *Server) *time.Duration { return &c.GitHub.Outbound.MaxWait })},
		{"INSPECT_GITHUB_REDELIVERY_INTERVAL", "github.redelivery.interval", duration(func(c *Server) *time.Duration { return &c.GitHub.Redelivery.Interval })},
		{"INSPECT_GITHUB_REDELIVERY_WINDOW", "github.redelivery.window", duration(func(c *Server) *time.Duration { return &c.GitHub.Redelivery.Window })},
		{"INSPECT_GITHUB_REDELIVERY_MAX_PER_GUID", "github.redelivery.max_per_guid", integer(func(c *Server) *int { return &c.GitHub.Redelivery.MaxPerGUID })},
		{"INSPECT_DATABASE_DRIVER", "database.driver", str(func(c *Server) *string { return &c.Database.Driver })},
		{"INSPECT_DATABASE_DSN", "database.dsn", str(func(c *Server) *string { return &c.Database.DSN })},
		{"INSPECT_WORKERS_COUNT", "workers.count", integer(func(c *Server) *int { return &c.Workers.Count })},
		{"INSPECT_WORKERS_LEASE", "workers.lease", duration(func(c *Server) *time.Duration { return &c.Workers.Lease })},
		{"INSPECT_WORKERS_POLL_INTERVAL", "workers.poll_interval", duration(func(c *Server) *time.Duration { return &c.Workers.PollInterval })},
		{"INSPECT_WORKERS_MAX_ATTEMPTS", "workers.max_attempts", integer(func(c *Server) *int { return &c.Workers.MaxAttempts })},
		{"INSPECT_WORKERS_RECONCILE_INTERVAL", "workers.reconcile_interval", duration(func(c *Server) *time.Duration { return &c.Workers.ReconcileInterval })},
		{"INSPECT_WORKERS_HEARTBEAT", "workers.heartbeat", duration(func(c *Server) *time.Duration { return &c.Workers.Heartbeat })},
		{"INSPECT_WORKERS_REPLICA_TIMEOUT", "workers.replica_timeout", duration(func(c *Server) *time.Duration { return &c.Workers.ReplicaTimeout })},
		{"INSPECT_WORKERS_RETRY_BACKOFF", "workers.retry_backoff", duration(func(c *Server) *time.Duration { return &c.Workers.RetryBackoff })},
		{"INSPECT_HTTP_READ_HEADER_TIMEOUT", "http.read_header_timeout", duration(func(c *Server) *time.Duration { return &c.HTTP.ReadHeaderTimeout })},
		{"INSPECT_HTTP_READ_TIMEOUT", "http.read_timeout", duration(func(c *Server) *time.Duration { return &c.HTTP.ReadTimeout })},
		{"INSPECT_HTTP_WRITE_TIMEOUT", "http.write_timeout", duration(func(c *Server) *time.Duration { return &c.HTTP.WriteTimeout })},
		{"INSPECT_EGRESS_IDLE_TIMEOUT", "egress.idle_timeout", duration(func(c *Server) *time.Duration { return &c.Egress.IdleTimeout })},
		{"INSPECT_EGRESS_CACHE_DIR", "egress.cache.dir", str(func(c *Server) *string { return &c.Egress.Cache.Dir })},
		{"INSPECT_EGRESS_CACHE_DISABLED", "egress.cache.disabled", boolean(func(c *Server) *bool { return &c.Egress.Cache.Disabled })},
		{"INSPECT_EGRESS_CACHE_MAX_BYTES", "egress.cache.max_bytes", int64v(func(c *Server) *int64 { return &c.Egress.Cache.MaxBytes })},
		{"INSPECT_EGRESS_MAX_REGISTRY_REQUESTS_PER_ATTEMPT", "egress.max_registry_requests_per_attempt", integer(func(c *Server) *int { return &c.Egress.MaxRegistryRequestsPerAttempt })},
		{"INSPECT_EGRESS_MAX_REGISTRY_REQUESTS", "egress.max_registry_requests", integer(func(c *Server) *int { return &c.Egress.MaxRegistryRequests })},
		{"INSPECT_HTTP_IDLE_TIMEOUT", "http.idle_timeout", duration(func(c *Server) *time.Duration { return &c.HTTP.IdleTimeout })},
		{"INSPECT_HTTP_SHUTDOWN_TIMEOUT", "http.shutdown_timeout", duration(func(c *Server) *time.Duration { return &c.HTTP.ShutdownTimeout })},
		{"INSPECT_HTTP_MAX_BODY_BYTES", "http.max_body_bytes", int64v(func(c *Server) *int64 { return &c.HTTP.MaxBodyBytes })},
		{"INSPECT_HTTP_MAX_INFLIGHT_WEBHOOKS", "http.max_inflight_webhooks", integer(func(c *Server) *int { return &c.HTTP.MaxInflightWebhooks })},
		{"INSPECT_POLICY_ALLOWED_BOTS", "policy.allowed_bots", list(func(c *Server) *[]string { return &c.Policy.AllowedBots })},
		{"INSPECT_POLICY_FORK_PR_REPOS", "policy.fork_pr_repos", list(func(c *Server) *[]string { return &c.Policy.ForkPRRepos })},
		{"INSPECT_AGENTS_TOKEN_BUDGET", "agents.token_budget", int64v(func(c *Server) *int64 { return &c.Agents.TokenBudget })},
		{"INSPECT_AGENTS_MAX_REQUESTS_IN_FLIGHT", "agents.max_requests_in_flight", integer(func(c *Server) *int { return &c.Agents.MaxRequestsInFlight })},
		{"INSPECT_AGENTS_OUTPUT_RESERVATION", "agents.output_reservation", int64v(func(c *Server) *int64 { return &c.Agents.OutputReservation })},
		{"INSPECT_AGENTS_MAX_REQUEST_BYTES", "agents.max_request_bytes", int64v(func(c *Server) *int64 { return &c.Agents.MaxRequestBytes })},
		{"INSPECT_AGENTS_TOOLS_IMAGE", "agents.tools_image", str(func(c *Server) *string { return &c.Agents.ToolsImage })},
	}
}

func applyEnv(c *Server, env func(string) (string, bool)) error {
	var faults []string
	for _, ev := range EnvVars() {
		v, ok := env(ev.Name)
		if !ok {
			continue
		}
		if err := ev.set(c, v); err != nil {
			faults = append(faults, fmt.Sprintf("%s (%s): %v", ev.Name, ev.Key, err))
		}
	}
	if len(faults) > 0 {
		return &ValidationError{Faults: faults}
	}
	return nil
}

func parseLogLevel(s string) (zerolog.Level, error) {
	lvl, err := zerolog.ParseLevel(s)
	if err != nil || s == "" {
		return zerolog.NoLevel, fmt.Errorf("%q is not one of trace, debug, info, warn, error", s)
	}
	return lvl, nil
}

// Level returns the parsed log level (validated already).
func (c Server) Level() zerolog.Level {
	lvl, _ := parseLogLevel(c.LogLevel) // Validate already rejected bad levels
	return lvl
}

func sortStrings(s []string) { sort.Strings(s) }
