//! Runtime limits and HTTP security settings: each one a flag of `codemcp`
//! and a `CODEMCP_*` environment variable, the flag winning when both are
//! given. `codemcp --help` lists them all, with their variables and defaults.
//!
//! A value that is unset, empty or only whitespace takes its default.
//! Anything else must parse, or startup fails naming the variable (or the
//! flag); [`values`] holds the rules for each kind of value.
//!
//! The settings come in groups, one per part of the gateway that uses them,
//! so each engine takes its group. A few fields are spelled
//! `std::option::Option` or `std::vec::Vec`: that way clap reads them as one
//! value through our parser, not as an optional or repeated flag.

pub mod helpers;
pub mod values;

#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, FromArgMatches};

pub use codemcp_sdk::policy::Decision;
use values::{
    Lenient, count, cpus, decision, fallback, hosts, isolation, millis, millis_or_zero, origins,
    output, path, placement, secs, size, text, token,
};

/// Every setting, read once at startup.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "Tool")]
pub struct Settings {
    /// The text block of an `execute_python` result, `compact` or `json`.
    #[arg(long = "output", env = "CODEMCP_OUTPUT")]
    #[arg(value_name = "FORMAT", default_value = "compact")]
    #[arg(global = true, value_parser = Lenient::new(output))]
    pub output: OutputFormat,
    /// Characters available for the `execute_python` tool description: the
    /// default is what Claude Code keeps; raise it for clients that keep more.
    #[arg(long = "description-budget", env = "CODEMCP_DESCRIPTION_BUDGET")]
    #[arg(value_name = "CHARS", default_value = "2048")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub description_budget: usize,
    #[command(flatten)]
    pub upstream: UpstreamSettings,
    #[command(flatten)]
    pub limits: RunLimits,
    #[command(flatten)]
    pub sessions: SessionSettings,
    #[command(flatten)]
    pub monty: MontySettings,
    #[command(flatten)]
    pub cpython: CpythonSettings,
    #[command(flatten)]
    pub http: HttpSettings,
    #[command(flatten)]
    pub authority: AuthoritySettings,
    #[command(flatten)]
    pub helpers: helpers::HelperSettings,
}

/// What agent code may do with the upstream tools, and the record of it.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "Policy, approvals and audit")]
pub struct AuthoritySettings {
    /// The policy of a tool that no rule of its server's `"policy"` matches
    /// and whose annotations say neither read-only nor destructive:
    /// `allow`, `ask` (recommended for untrusted agents) or `deny`.
    #[arg(long = "policy-default", env = "CODEMCP_POLICY_DEFAULT")]
    #[arg(value_name = "POLICY", default_value = "allow")]
    #[arg(global = true, value_parser = Lenient::new(decision))]
    pub policy_default: Decision,
    /// How long a call of an `ask` tool waits for the user's answer before
    /// it is denied.
    #[arg(long = "approval-timeout-secs", env = "CODEMCP_APPROVAL_TIMEOUT_SECS")]
    #[arg(value_name = "SECS", default_value = "120")]
    #[arg(global = true, value_parser = Lenient::new(secs))]
    pub approval_timeout: Duration,
    /// Append one JSON line per upstream call that agent code makes or
    /// attempts to this file (created 0600; unset: only the `codemcp::audit`
    /// log target).
    #[arg(long = "audit-log", env = "CODEMCP_AUDIT_LOG")]
    #[arg(value_name = "PATH", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(path))]
    pub audit_log: std::option::Option<PathBuf>,
    /// The audit log's size at which it is renamed to `PATH.1` (replacing
    /// the previous one) and started afresh.
    #[arg(long = "audit-max-bytes", env = "CODEMCP_AUDIT_MAX_BYTES")]
    #[arg(value_name = "SIZE", default_value = "64MiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub audit_max_bytes: usize,
    /// How many rotated audit files are kept (`PATH.1` newest … `PATH.N`
    /// oldest). Lines are bounded (long arguments shortened), so each file
    /// holds at least `AUDIT_MAX_BYTES / 64 KiB` records.
    #[arg(long = "audit-keep-files", env = "CODEMCP_AUDIT_KEEP_FILES")]
    #[arg(value_name = "N", default_value = "5")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub audit_keep_files: usize,
    /// Refuse calls of tools that may have side effects (not `readOnlyHint`)
    /// unless their audit line is written first; a failing audit write is
    /// always logged.
    #[arg(long = "audit-required", env = "CODEMCP_AUDIT_REQUIRED")]
    #[arg(value_name = "BOOL", default_value = "false", action = clap::ArgAction::Set)]
    #[arg(global = true, value_parser = Lenient::new(values::boolean))]
    pub audit_required: bool,
}

/// Calls to upstream MCP servers.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "Upstream servers")]
pub struct UpstreamSettings {
    /// How long one upstream tool call may take.
    #[arg(long = "tool-timeout-ms", env = "CODEMCP_TOOL_TIMEOUT_MS")]
    #[arg(value_name = "MS", default_value = "60000")]
    #[arg(global = true, value_parser = Lenient::new(millis))]
    pub tool_timeout: Duration,
    /// The largest message (in practice, a tool result) one upstream may
    /// send (rmcp's own line and SSE-event cap). A stdio server that sends
    /// more is stopped and the call fails with this name in the error.
    #[arg(long = "max-tool-result-bytes", env = "CODEMCP_MAX_TOOL_RESULT_BYTES")]
    #[arg(value_name = "SIZE", default_value = "16MiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub max_tool_result_bytes: usize,
    /// How long the first `tools/list`, `execute_python` call or SDK read
    /// waits for upstreams still connecting after launch; `initialize` never
    /// waits. Those that arrive later join (`tools/list_changed`). 0: no wait.
    #[arg(long = "startup-wait-ms", env = "CODEMCP_STARTUP_WAIT_MS")]
    #[arg(value_name = "MS", default_value = "5000")]
    #[arg(global = true, value_parser = Lenient::new(millis_or_zero))]
    pub startup_wait: Duration,
    /// How many upstream handshakes run at once at start-up (and in the
    /// background retries of those that failed), so dozens of servers on a
    /// few cores do not starve each other's handshakes.
    #[arg(long = "startup-concurrency", env = "CODEMCP_STARTUP_CONCURRENCY")]
    #[arg(value_name = "N", default_value = "4")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub startup_concurrency: usize,
    /// How long a `"start": "lazy"` server stays up after its last call.
    #[arg(long = "lazy-idle-ms", env = "CODEMCP_LAZY_IDLE_MS")]
    #[arg(value_name = "MS", default_value = "300000")]
    #[arg(global = true, value_parser = Lenient::new(millis))]
    pub lazy_idle: Duration,
}

/// The limits of one `execute_python` run, whichever engine runs it.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "Limits per run")]
pub struct RunLimits {
    /// Wall time for one `execute_python` run, tool calls included.
    #[arg(long = "exec-timeout-ms", env = "CODEMCP_EXEC_TIMEOUT_MS")]
    #[arg(value_name = "MS", default_value = "30000")]
    #[arg(global = true, value_parser = Lenient::new(millis))]
    pub exec_timeout: Duration,
    /// Captured `print` output per run before it is truncated.
    #[arg(long = "max-output-bytes", env = "CODEMCP_MAX_OUTPUT_BYTES")]
    #[arg(value_name = "SIZE", default_value = "1MiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub max_output_bytes: usize,
    /// Size of a run's returned value.
    #[arg(long = "max-result-bytes", env = "CODEMCP_MAX_RESULT_BYTES")]
    #[arg(value_name = "SIZE", default_value = "1MiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub max_result_bytes: usize,
    /// Size of the submitted code.
    #[arg(long = "max-source-bytes", env = "CODEMCP_MAX_SOURCE_BYTES")]
    #[arg(value_name = "SIZE", default_value = "256KiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub max_source_bytes: usize,
    /// Upstream tool calls per run.
    #[arg(long = "max-tool-calls", env = "CODEMCP_MAX_TOOL_CALLS")]
    #[arg(value_name = "N", default_value = "500")]
    #[arg(global = true, value_parser = Lenient::new(count::<u32>))]
    pub max_tool_calls: u32,
    /// Python call depth in Monty.
    #[arg(long = "max-recursion", env = "CODEMCP_MAX_RECURSION")]
    #[arg(value_name = "N", default_value = "200")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub max_recursion_depth: usize,
    /// Total `time.sleep` per run; 0 forbids sleeping.
    #[arg(long = "max-sleep-ms", env = "CODEMCP_MAX_SLEEP_MS")]
    #[arg(value_name = "MS", default_value = "10000")]
    #[arg(global = true, value_parser = Lenient::new(millis_or_zero))]
    pub max_sleep_total: Duration,
}

/// MCP sessions and the interpreter state they hold.
#[derive(Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "Sessions")]
pub struct SessionSettings {
    /// An MCP session with no calls for this long is dropped with its
    /// interpreter state.
    #[arg(long = "session-idle-secs", env = "CODEMCP_SESSION_IDLE_SECS")]
    #[arg(value_name = "SECS", default_value = "1800")]
    #[arg(global = true, value_parser = Lenient::new(secs))]
    pub session_idle: Duration,
    /// Concurrent MCP sessions with interpreter state.
    #[arg(long = "max-sessions", env = "CODEMCP_MAX_SESSIONS")]
    #[arg(value_name = "N", default_value = "64")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub max_sessions: usize,
    /// Where session state is kept between calls: `memory`, `file` or
    /// `file:PATH` (SQLite; survives restarts), `redis://HOST:PORT[/DB]`
    /// (shared by several gateways). Unset: memory for stdio, file for HTTP.
    #[arg(long = "session-store", env = "CODEMCP_SESSION_STORE")]
    #[arg(value_name = "STORE", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(token))]
    pub session_store: std::option::Option<String>,
    /// The key that authenticates saved sessions: 32 characters or more, the
    /// same on every gateway of a deployment. Unset: a key file created in
    /// the state directory.
    #[arg(long = "session-key", env = "CODEMCP_SESSION_KEY")]
    #[arg(value_name = "KEY", hide_env_values = true)]
    #[arg(default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::untrimmed(token))]
    pub session_key: std::option::Option<String>,
    /// The largest saved session; a bigger one lives only in memory.
    #[arg(long = "max-session-bytes", env = "CODEMCP_MAX_SESSION_BYTES")]
    #[arg(value_name = "SIZE", default_value = "16MiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub max_session_bytes: usize,
    /// The longest one tool call's session-store operations may wait,
    /// together, for a store that does not answer (a paused or unreachable
    /// Redis, a locked SQLite file); past it the run goes on with what this
    /// gateway holds, and says the store did not answer.
    #[arg(
        long = "session-store-timeout-ms",
        env = "CODEMCP_SESSION_STORE_TIMEOUT_MS"
    )]
    #[arg(value_name = "MS", default_value = "5000")]
    #[arg(global = true, value_parser = Lenient::new(millis))]
    pub session_store_timeout: Duration,
}

/// The session key is a credential; show only whether it is set.
impl fmt::Debug for SessionSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionSettings")
            .field("session_idle", &self.session_idle)
            .field("max_sessions", &self.max_sessions)
            .field("session_store", &self.session_store)
            .field(
                "session_key",
                &self.session_key.as_ref().map(|_| "<redacted>"),
            )
            .field("max_session_bytes", &self.max_session_bytes)
            .field("session_store_timeout", &self.session_store_timeout)
            .finish()
    }
}

/// The Monty engine.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "Monty")]
pub struct MontySettings {
    /// Where the Monty engine runs, `inprocess` or `pool` (worker
    /// processes). Unset means: in-process for stdio, pool for `serve --http`.
    #[arg(long = "monty", env = "CODEMCP_MONTY")]
    #[arg(value_name = "MODE", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(placement))]
    pub monty_placement: std::option::Option<MontyPlacement>,
    /// Memory for Monty, in bytes or with a suffix (`512MiB`, `512M`, `1G`,
    /// `64k`; all binary multiples, as in Docker's `--memory`).
    #[arg(long = "monty-mem-limit", env = "CODEMCP_MONTY_MEM_LIMIT")]
    #[arg(value_name = "SIZE", default_value = "256MiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub monty_mem_limit: usize,
    /// The `monty` worker binary for pool mode; unset means codemcp itself
    /// (feature `self-worker`), else a `monty` beside codemcp or on `PATH`,
    /// else the pinned worker it provisions (`codemcp setup pool`).
    #[arg(long = "monty-bin", env = "CODEMCP_MONTY_BIN")]
    #[arg(value_name = "PATH", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(path))]
    pub monty_bin: std::option::Option<PathBuf>,
    /// Most live Monty worker processes in pool mode, one per active session.
    #[arg(long = "monty-workers", env = "CODEMCP_MONTY_WORKERS")]
    #[arg(value_name = "N", default_value = "16")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub monty_workers: usize,
}

/// The CPython engines: on the host, or in Docker containers.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "CPython")]
pub struct CpythonSettings {
    /// `MONTY` (Monty, escalating to the fallback), `SANDBOX`, `DOCKER` or
    /// `HOST_SYSTEM` (every run in CPython: in a bubblewrap sandbox, in a
    /// Docker container, or unsandboxed on the host).
    #[arg(long = "isolation", env = "CODEMCP_ISOLATION")]
    #[arg(value_name = "ENGINE", default_value = "MONTY")]
    #[arg(global = true, value_parser = Lenient::new(isolation))]
    pub isolation: Isolation,
    /// Where Monty escalates code it cannot run: `auto` (the strongest
    /// placement this machine has: Docker when an engine answers, else a
    /// bubblewrap sandbox, else none), `docker`, `sandbox`,
    /// `host-unsandboxed` (also `host`; only when asked for: no sandbox at
    /// all) or `none`.
    #[arg(long = "fallback", env = "CODEMCP_FALLBACK")]
    #[arg(value_name = "ENGINE", default_value = "auto")]
    #[arg(global = true, value_parser = Lenient::new(fallback))]
    pub fallback: Fallback,
    /// The CPython for host workers (unset: `python3`).
    #[arg(long = "python", env = "CODEMCP_PYTHON")]
    #[arg(value_name = "PATH", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(path))]
    pub python: std::option::Option<PathBuf>,
    /// A CPython worker (process or container) whose session made no call
    /// for this long is stopped, and its session state with it.
    #[arg(long = "worker-idle-secs", env = "CODEMCP_WORKER_IDLE_SECS")]
    #[arg(value_name = "SECS", default_value = "600")]
    #[arg(global = true, value_parser = Lenient::new(secs))]
    pub worker_idle: Duration,
    /// The worker image (built by `codemcp setup docker`, or on the first
    /// Docker escalation when it is missing).
    #[arg(long = "docker-image", env = "CODEMCP_DOCKER_IMAGE")]
    #[arg(value_name = "IMAGE", default_value = "codemcp-worker:2")]
    #[arg(global = true, value_parser = Lenient::new(text))]
    pub docker_image: String,
    /// Memory per worker container, swap included, with the same suffixes as
    /// `CODEMCP_MONTY_MEM_LIMIT`.
    #[arg(long = "docker-memory", env = "CODEMCP_DOCKER_MEMORY")]
    #[arg(value_name = "SIZE", default_value = "512MiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub docker_memory: usize,
    /// Processes and threads per worker container.
    #[arg(long = "docker-pids", env = "CODEMCP_DOCKER_PIDS")]
    #[arg(value_name = "N", default_value = "128")]
    #[arg(global = true, value_parser = Lenient::new(count::<u32>))]
    pub docker_pids: u32,
    /// CPUs per worker container, fractions allowed (`0.5`), kept as
    /// billionths as Docker's `NanoCpus`.
    #[arg(long = "docker-cpus", env = "CODEMCP_DOCKER_CPUS")]
    #[arg(value_name = "CPUS", default_value = "1")]
    #[arg(global = true, value_parser = Lenient::new(cpus))]
    pub docker_nano_cpus: u64,
    /// The `bwrap` executable for sandboxed workers (unset: `bwrap` on `PATH`).
    #[arg(long = "bwrap", env = "CODEMCP_BWRAP")]
    #[arg(value_name = "PATH", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(path))]
    pub bwrap: std::option::Option<PathBuf>,
    /// A CPython root file system for sandboxed workers instead of the one
    /// `codemcp setup sandbox` makes from the worker image's recipe.
    #[arg(long = "sandbox-rootfs", env = "CODEMCP_SANDBOX_ROOTFS")]
    #[arg(value_name = "DIR", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(path))]
    pub sandbox_rootfs: std::option::Option<PathBuf>,
    /// The Debian mirror the worker image's pinned packages are fetched from
    /// (each checked against its pinned SHA-256).
    #[arg(long = "debian-mirror", env = "CODEMCP_DEBIAN_MIRROR")]
    #[arg(value_name = "URL", default_value = "http://deb.debian.org/debian")]
    #[arg(global = true, value_parser = Lenient::new(text))]
    pub debian_mirror: String,
    /// Where pinned wheels are fetched from: the worker image's `websockets`
    /// and the provisioned Monty pool worker (each checked against its SHA-256).
    #[arg(long = "pypi-files", env = "CODEMCP_PYPI_FILES")]
    #[arg(value_name = "URL", default_value = "https://files.pythonhosted.org")]
    #[arg(global = true, value_parser = Lenient::new(text))]
    pub pypi_files: String,
}

/// Who may reach `serve --http`.
#[derive(Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "HTTP")]
pub struct HttpSettings {
    /// Bearer token required by `serve --http`; unset or empty: none.
    #[arg(long = "http-token", env = "CODEMCP_HTTP_TOKEN")]
    #[arg(value_name = "TOKEN", hide_env_values = true)]
    #[arg(default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::untrimmed(token))]
    pub http_token: std::option::Option<String>,
    /// A principals file (`codemcp token add NAME` writes one): each bearer
    /// token is one principal with its own policy overrides and sessions.
    #[arg(long = "http-tokens", env = "CODEMCP_HTTP_TOKENS")]
    #[arg(value_name = "PATH", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(path))]
    pub http_tokens: std::option::Option<PathBuf>,
    /// Accepted `Host` header names, comma separated, lower-cased.
    #[arg(long = "allowed-hosts", env = "CODEMCP_ALLOWED_HOSTS")]
    #[arg(value_name = "HOSTS", default_value = "localhost,127.0.0.1,::1")]
    #[arg(global = true, value_parser = Lenient::list(hosts))]
    pub allowed_hosts: std::vec::Vec<String>,
    /// Accepted `Origin` headers, comma separated (`http://localhost:8080`).
    /// Empty (the default) means: derive them from the allowed hosts.
    #[arg(long = "allowed-origins", env = "CODEMCP_ALLOWED_ORIGINS")]
    #[arg(value_name = "ORIGINS", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::list(origins))]
    pub allowed_origins: std::vec::Vec<String>,
    /// `GET /healthz` answers anyone (a load balancer) without the bearer
    /// token or an allowed `Host`; `/metrics` and `/mcp` stay guarded.
    #[arg(long = "healthz-open", env = "CODEMCP_HEALTHZ_OPEN")]
    #[arg(value_name = "BOOL", default_value = "false", action = clap::ArgAction::Set)]
    #[arg(global = true, value_parser = Lenient::new(values::boolean))]
    pub healthz_open: bool,
    /// Time a connection has to send a request's headers, counted from when
    /// it opens or its previous response ends (so also how long an idle
    /// kept-alive connection stays open).
    #[arg(
        long = "http-header-timeout-ms",
        env = "CODEMCP_HTTP_HEADER_TIMEOUT_MS"
    )]
    #[arg(value_name = "MS", default_value = "10000")]
    #[arg(global = true, value_parser = Lenient::new(millis))]
    pub http_header_timeout: Duration,
    /// Time a request has to send its whole body once its headers are in.
    #[arg(long = "http-body-timeout-ms", env = "CODEMCP_HTTP_BODY_TIMEOUT_MS")]
    #[arg(value_name = "MS", default_value = "30000")]
    #[arg(global = true, value_parser = Lenient::new(millis))]
    pub http_body_timeout: Duration,
    /// Open HTTP connections (at most half the open-files limit); those that
    /// have not yet sent an authenticated request get half of them, the
    /// oldest giving way to a new one.
    #[arg(long = "http-max-connections", env = "CODEMCP_HTTP_MAX_CONNECTIONS")]
    #[arg(value_name = "N", default_value = "1024")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub http_max_connections: usize,
    /// MCP sessions (`Mcp-Session-Id`) open at once over HTTP; at the cap an
    /// `initialize` ends the least recently used session of the principal
    /// holding the most.
    #[arg(long = "http-max-sessions", env = "CODEMCP_HTTP_MAX_SESSIONS")]
    #[arg(value_name = "N", default_value = "256")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub http_max_sessions: usize,
    /// MCP sessions one principal (or the shared token) holds at once; its
    /// next `initialize` ends its least recently used one.
    #[arg(
        long = "http-max-sessions-per-principal",
        env = "CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL"
    )]
    #[arg(value_name = "N", default_value = "32")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub http_max_sessions_per_principal: usize,
}

/// The token is a credential; show only whether it is set.
impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSettings")
            .field(
                "http_token",
                &self.http_token.as_ref().map(|_| "<redacted>"),
            )
            .field("http_tokens", &self.http_tokens)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("healthz_open", &self.healthz_open)
            .field("http_header_timeout", &self.http_header_timeout)
            .field("http_body_timeout", &self.http_body_timeout)
            .field("http_max_connections", &self.http_max_connections)
            .field("http_max_sessions", &self.http_max_sessions)
            .field(
                "http_max_sessions_per_principal",
                &self.http_max_sessions_per_principal,
            )
            .finish()
    }
}

/// Which engine runs snippets (`CODEMCP_ISOLATION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    Monty,
    Sandbox,
    Docker,
    HostSystem,
}

/// Where Monty escalates (`CODEMCP_FALLBACK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    Auto,
    Sandbox,
    Docker,
    /// No sandbox: `host-unsandboxed` (or `host`).
    Host,
    None,
}

/// How the text block of an `execute_python` result is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// Printed output, then `result: …` and the error, each only when present.
    #[default]
    Compact,
    /// One JSON object with only the non-empty fields.
    Json,
}

/// Where the Monty engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MontyPlacement {
    /// In the gateway process: fastest; one memory budget shared by sessions.
    InProcess,
    /// In `monty-pool` worker processes: exact per-session limits, crash isolation.
    Pool,
}

impl Settings {
    /// A command holding only the settings, each reading its variable.
    pub fn command() -> clap::Command {
        Settings::augment_args(clap::Command::new("codemcp").no_binary_name(true))
    }

    /// Settings from flags alone, such as `["--max-sessions=3"]`; the
    /// environment is not read (for tests, and embedders that want only
    /// their own values).
    ///
    /// # Errors
    /// clap's error for the first flag that is unknown or unusable;
    /// [`values::Rejected::from_clap`] tells which setting a value belongs to.
    pub fn from_flags<I, T>(flags: I) -> Result<Settings, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let matches = Settings::command()
            .mut_args(|arg| arg.env(None))
            .try_get_matches_from(flags)?;
        Settings::from_arg_matches(&matches)
    }
}

/// Every setting at its default.
impl Default for Settings {
    #[allow(clippy::expect_used)] // the defaults are constants, checked by tests
    fn default() -> Self {
        Settings::from_flags(std::iter::empty::<OsString>()).expect("the defaults parse")
    }
}
