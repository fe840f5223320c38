//! Runtime limits and HTTP security settings from `CODEMCP_*` environment
//! variables.
//!
//! A variable that is unset, empty or only whitespace takes its default.
//! Anything else must parse, or startup fails with [`ConfigError::BadEnv`].

use std::fmt;
use std::time::Duration;

use super::ConfigError;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// The longest duration any setting accepts. Far beyond any sensible limit,
/// and small enough that adding it to an `Instant` cannot overflow.
const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Limits and switches read once at startup.
#[derive(Clone, PartialEq, Eq)]
pub struct Settings {
    /// `CODEMCP_TOOL_TIMEOUT_MS`: how long one upstream tool call may take
    /// (default 60 000 ms).
    pub tool_timeout: Duration,
    /// `CODEMCP_EXEC_TIMEOUT_MS`: wall time for one `execute_python` run,
    /// tool calls included (default 30 000 ms).
    pub exec_timeout: Duration,
    /// `CODEMCP_MAX_OUTPUT_BYTES`: captured `print` output per run before it
    /// is truncated (default 1 MiB).
    pub max_output_bytes: usize,
    /// `CODEMCP_MAX_RESULT_BYTES`: size of a run's returned value (default 1 MiB).
    pub max_result_bytes: usize,
    /// `CODEMCP_MAX_TOOL_RESULT_BYTES`: the largest message (in practice, a
    /// tool result) one upstream may send (default 16 MiB, rmcp's own line and
    /// SSE-event cap). A stdio server that sends more is stopped and the call
    /// fails with this name in the error.
    pub max_tool_result_bytes: usize,
    /// `CODEMCP_MAX_SOURCE_BYTES`: size of the submitted code (default 256 KiB).
    pub max_source_bytes: usize,
    /// `CODEMCP_MAX_TOOL_CALLS`: upstream tool calls per run (default 500).
    pub max_tool_calls: u32,
    /// `CODEMCP_MAX_RECURSION`: Python call depth in Monty (default 200).
    pub max_recursion_depth: usize,
    /// `CODEMCP_MAX_SLEEP_MS`: total `time.sleep` per run (default 10 000 ms;
    /// 0 forbids sleeping).
    pub max_sleep_total: Duration,
    /// `CODEMCP_MONTY_MEM_LIMIT`: memory for Monty, in bytes or with a
    /// suffix (`512MiB`, `512M`, `1G`, `64k`; all binary multiples, as in
    /// Docker's `--memory`). Default 256 MiB.
    pub monty_mem_limit: usize,
    /// `CODEMCP_SESSION_IDLE_SECS`: an MCP session with no calls for this
    /// long is dropped with its interpreter state (default 1800 s).
    pub session_idle: Duration,
    /// `CODEMCP_MAX_SESSIONS`: concurrent MCP sessions with interpreter
    /// state (default 64).
    pub max_sessions: usize,
    /// `CODEMCP_DESCRIPTION_BUDGET`: characters available for the
    /// `execute_python` tool description (default 8 000, tuned with
    /// `bench/tokens`).
    pub description_budget: usize,
    /// `CODEMCP_HTTP_TOKEN`: bearer token required by `serve --http`;
    /// `None` when unset or empty.
    pub http_token: Option<String>,
    /// `CODEMCP_ALLOWED_HOSTS`: accepted `Host` header names, comma
    /// separated, lower-cased (default `localhost,127.0.0.1,::1`).
    pub allowed_hosts: Vec<String>,
    /// `CODEMCP_ALLOWED_ORIGINS`: accepted `Origin` headers, comma separated
    /// (`http://localhost:8080`). Empty (the default) means: derive them
    /// from `allowed_hosts`.
    pub allowed_origins: Vec<String>,
    /// `CODEMCP_MONTY`: where the Monty engine runs, `inprocess` or `pool`
    /// (worker processes). `None` (unset) means: in-process for stdio, pool
    /// for `serve --http`.
    pub monty_placement: Option<MontyPlacement>,
    /// `CODEMCP_MONTY_BIN`: the `monty` worker binary for pool mode; unset
    /// means look for it (see `exec::monty::pool::find_worker_binary`).
    pub monty_bin: Option<std::path::PathBuf>,
    /// `CODEMCP_MONTY_WORKERS`: most live Monty worker processes in pool
    /// mode, one per active session (default 16).
    pub monty_workers: usize,
    /// `CODEMCP_OUTPUT`: the text block of an `execute_python` result,
    /// `compact` (default) or `json`.
    pub output: OutputFormat,
    /// `CODEMCP_ISOLATION`: `MONTY` (default: Monty, escalating to the
    /// fallback), `DOCKER` or `HOST_SYSTEM` (every run in CPython).
    pub isolation: Isolation,
    /// `CODEMCP_FALLBACK`: where Monty escalates code it cannot run:
    /// `auto` (default: Docker when an engine answers, else none), `docker`,
    /// `host` (only when asked for: no sandbox) or `none`.
    pub fallback: Fallback,
    /// `CODEMCP_PYTHON`: the CPython for host workers (default `python3`).
    pub python: Option<std::path::PathBuf>,
    /// `CODEMCP_WORKER_IDLE_SECS`: a CPython worker (process or container)
    /// whose session made no call for this long is stopped, and its session
    /// state with it (default 600 s).
    pub worker_idle: Duration,
    /// `CODEMCP_DOCKER_IMAGE`: the worker image (default `codemcp-worker:1`,
    /// built by `scripts/build-worker-image.sh`).
    pub docker_image: String,
    /// `CODEMCP_DOCKER_MEMORY`: memory per worker container, swap included,
    /// with the same suffixes as `CODEMCP_MONTY_MEM_LIMIT` (default 512 MiB).
    pub docker_memory: usize,
    /// `CODEMCP_DOCKER_PIDS`: processes and threads per worker container
    /// (default 128).
    pub docker_pids: u32,
    /// `CODEMCP_DOCKER_CPUS`: CPUs per worker container, fractions allowed
    /// (`0.5`), kept as billionths as Docker's `NanoCpus` (default 1).
    pub docker_nano_cpus: u64,
}

/// Which engine runs snippets (`CODEMCP_ISOLATION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    Monty,
    Docker,
    HostSystem,
}

/// Where Monty escalates (`CODEMCP_FALLBACK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    Auto,
    Docker,
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

impl Default for Settings {
    fn default() -> Self {
        Settings {
            tool_timeout: Duration::from_millis(60_000),
            exec_timeout: Duration::from_millis(30_000),
            max_output_bytes: 1024 * 1024,
            max_result_bytes: 1024 * 1024,
            max_tool_result_bytes: 16 * 1024 * 1024,
            max_source_bytes: 256 * 1024,
            max_tool_calls: 500,
            max_recursion_depth: 200,
            max_sleep_total: Duration::from_millis(10_000),
            monty_mem_limit: 256 * 1024 * 1024,
            session_idle: Duration::from_secs(1800),
            max_sessions: 64,
            description_budget: 8_000,
            http_token: None,
            allowed_hosts: ["localhost", "127.0.0.1", "::1"]
                .map(str::to_owned)
                .to_vec(),
            allowed_origins: Vec::new(),
            monty_placement: None,
            monty_bin: None,
            monty_workers: 16,
            isolation: Isolation::Monty,
            fallback: Fallback::Auto,
            python: None,
            worker_idle: Duration::from_secs(600),
            docker_image: "codemcp-worker:1".to_owned(),
            docker_memory: 512 * 1024 * 1024,
            docker_pids: 128,
            docker_nano_cpus: 1_000_000_000,
            output: OutputFormat::Compact,
        }
    }
}

/// The token is a credential; show only whether it is set.
impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("tool_timeout", &self.tool_timeout)
            .field("exec_timeout", &self.exec_timeout)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("max_result_bytes", &self.max_result_bytes)
            .field("max_tool_result_bytes", &self.max_tool_result_bytes)
            .field("max_source_bytes", &self.max_source_bytes)
            .field("max_tool_calls", &self.max_tool_calls)
            .field("max_recursion_depth", &self.max_recursion_depth)
            .field("max_sleep_total", &self.max_sleep_total)
            .field("monty_mem_limit", &self.monty_mem_limit)
            .field("session_idle", &self.session_idle)
            .field("max_sessions", &self.max_sessions)
            .field("description_budget", &self.description_budget)
            .field(
                "http_token",
                &self.http_token.as_ref().map(|_| "<redacted>"),
            )
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("monty_placement", &self.monty_placement)
            .field("monty_bin", &self.monty_bin)
            .field("monty_workers", &self.monty_workers)
            .field("isolation", &self.isolation)
            .field("fallback", &self.fallback)
            .field("python", &self.python)
            .field("worker_idle", &self.worker_idle)
            .field("docker_image", &self.docker_image)
            .field("docker_memory", &self.docker_memory)
            .field("docker_pids", &self.docker_pids)
            .field("docker_nano_cpus", &self.docker_nano_cpus)
            .field("output", &self.output)
            .finish()
    }
}

impl Settings {
    /// Reads the process environment. A value that is not valid Unicode is
    /// read with its bad bytes replaced by U+FFFD, so a number or size
    /// holding them is rejected rather than ignored.
    ///
    /// # Errors
    /// [`ConfigError::BadEnv`] for the first variable whose value is unusable.
    pub fn from_env() -> Result<Settings, ConfigError> {
        Settings::from_lookup(&|name| {
            std::env::var_os(name).map(|value| value.to_string_lossy().into_owned())
        })
    }

    /// Reads settings through `lookup` (the environment, or a table in tests).
    ///
    /// # Errors
    /// [`ConfigError::BadEnv`] for the first variable whose value is unusable.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Settings, ConfigError> {
        let env = Env(lookup);
        let d = Settings::default();
        Ok(Settings {
            tool_timeout: env.millis("CODEMCP_TOOL_TIMEOUT_MS", d.tool_timeout, Zero::Reject)?,
            exec_timeout: env.millis("CODEMCP_EXEC_TIMEOUT_MS", d.exec_timeout, Zero::Reject)?,
            max_output_bytes: env.size("CODEMCP_MAX_OUTPUT_BYTES", d.max_output_bytes)?,
            max_result_bytes: env.size("CODEMCP_MAX_RESULT_BYTES", d.max_result_bytes)?,
            max_tool_result_bytes: env
                .size("CODEMCP_MAX_TOOL_RESULT_BYTES", d.max_tool_result_bytes)?,
            max_source_bytes: env.size("CODEMCP_MAX_SOURCE_BYTES", d.max_source_bytes)?,
            max_tool_calls: env.count("CODEMCP_MAX_TOOL_CALLS", d.max_tool_calls)?,
            max_recursion_depth: env.count("CODEMCP_MAX_RECURSION", d.max_recursion_depth)?,
            max_sleep_total: env.millis("CODEMCP_MAX_SLEEP_MS", d.max_sleep_total, Zero::Allow)?,
            monty_mem_limit: env.size("CODEMCP_MONTY_MEM_LIMIT", d.monty_mem_limit)?,
            session_idle: env.secs("CODEMCP_SESSION_IDLE_SECS", d.session_idle)?,
            max_sessions: env.count("CODEMCP_MAX_SESSIONS", d.max_sessions)?,
            description_budget: env.count("CODEMCP_DESCRIPTION_BUDGET", d.description_budget)?,
            http_token: env.get("CODEMCP_HTTP_TOKEN").map(|(raw, _)| raw),
            allowed_hosts: env.hosts("CODEMCP_ALLOWED_HOSTS", d.allowed_hosts)?,
            allowed_origins: env.origins("CODEMCP_ALLOWED_ORIGINS", d.allowed_origins)?,
            monty_placement: env.placement("CODEMCP_MONTY")?,
            monty_bin: env
                .get("CODEMCP_MONTY_BIN")
                .map(|(_, path)| std::path::PathBuf::from(path)),
            monty_workers: env.count("CODEMCP_MONTY_WORKERS", d.monty_workers)?,
            isolation: env.choice(
                "CODEMCP_ISOLATION",
                d.isolation,
                &[
                    ("monty", Isolation::Monty),
                    ("docker", Isolation::Docker),
                    ("host_system", Isolation::HostSystem),
                ],
            )?,
            fallback: env.choice(
                "CODEMCP_FALLBACK",
                d.fallback,
                &[
                    ("auto", Fallback::Auto),
                    ("docker", Fallback::Docker),
                    ("host", Fallback::Host),
                    ("none", Fallback::None),
                ],
            )?,
            python: env
                .get("CODEMCP_PYTHON")
                .map(|(_, path)| std::path::PathBuf::from(path)),
            worker_idle: env.secs("CODEMCP_WORKER_IDLE_SECS", d.worker_idle)?,
            docker_image: env
                .get("CODEMCP_DOCKER_IMAGE")
                .map_or(d.docker_image, |(_, image)| image),
            docker_memory: env.size("CODEMCP_DOCKER_MEMORY", d.docker_memory)?,
            docker_pids: env.count("CODEMCP_DOCKER_PIDS", d.docker_pids)?,
            docker_nano_cpus: env.cpus("CODEMCP_DOCKER_CPUS", d.docker_nano_cpus)?,
            output: env.output("CODEMCP_OUTPUT")?,
        })
    }
}

/// Whether zero is a meaningful value for a setting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Zero {
    Allow,
    Reject,
}

struct Env<'a>(&'a dyn Fn(&str) -> Option<String>);

impl Env<'_> {
    /// The raw value and its trimmed form, or `None` when unset or blank.
    fn get(&self, var: &str) -> Option<(String, String)> {
        let raw = (self.0)(var)?;
        let trimmed = raw.trim().to_owned();
        (!trimmed.is_empty()).then_some((raw, trimmed))
    }

    fn millis(&self, var: &str, default: Duration, zero: Zero) -> Result<Duration, ConfigError> {
        self.duration(var, default, zero, "milliseconds", Duration::from_millis)
    }

    fn secs(&self, var: &str, default: Duration) -> Result<Duration, ConfigError> {
        self.duration(var, default, Zero::Reject, "seconds", Duration::from_secs)
    }

    fn duration(
        &self,
        var: &str,
        default: Duration,
        zero: Zero,
        unit: &str,
        from: fn(u64) -> Duration,
    ) -> Result<Duration, ConfigError> {
        let Some((raw, value)) = self.get(var) else {
            return Ok(default);
        };
        let expected = match zero {
            Zero::Allow => format!("a whole number of {unit}"),
            Zero::Reject => format!("a whole number of {unit} greater than zero"),
        };
        let parsed = value
            .parse::<u64>()
            .map_err(|_| bad(var, &raw, &expected))?;
        if parsed == 0 && zero == Zero::Reject {
            return Err(bad(var, &raw, &expected));
        }
        let duration = from(parsed);
        if duration > MAX_DURATION {
            let most = MAX_DURATION.as_secs() * if unit == "seconds" { 1 } else { 1000 };
            return Err(bad(var, &raw, &format!("at most {most} {unit} (365 days)")));
        }
        Ok(duration)
    }

    fn output(&self, var: &str) -> Result<OutputFormat, ConfigError> {
        let Some((raw, value)) = self.get(var) else {
            return Ok(OutputFormat::default());
        };
        match value.to_ascii_lowercase().as_str() {
            "compact" => Ok(OutputFormat::Compact),
            "json" => Ok(OutputFormat::Json),
            _ => Err(bad(var, &raw, "compact or json")),
        }
    }

    /// One of a fixed set of words, case-insensitive.
    fn choice<T: Copy>(
        &self,
        var: &str,
        default: T,
        options: &[(&str, T)],
    ) -> Result<T, ConfigError> {
        let Some((raw, value)) = self.get(var) else {
            return Ok(default);
        };
        let value = value.to_ascii_lowercase();
        options
            .iter()
            .find(|(word, _)| *word == value)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                let words: Vec<&str> = options.iter().map(|(w, _)| *w).collect();
                bad(var, &raw, &format!("one of {}", words.join(", ")))
            })
    }

    fn placement(&self, var: &str) -> Result<Option<MontyPlacement>, ConfigError> {
        let Some((raw, value)) = self.get(var) else {
            return Ok(None);
        };
        match value.to_ascii_lowercase().as_str() {
            "inprocess" | "in-process" | "in_process" => Ok(Some(MontyPlacement::InProcess)),
            "pool" => Ok(Some(MontyPlacement::Pool)),
            _ => Err(bad(var, &raw, "inprocess or pool")),
        }
    }

    /// A positive whole number that fits `T`.
    fn count<T: TryFrom<u64>>(&self, var: &str, default: T) -> Result<T, ConfigError> {
        let Some((raw, value)) = self.get(var) else {
            return Ok(default);
        };
        let expected = "a whole number greater than zero";
        value
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| bad(var, &raw, expected))
    }

    fn size(&self, var: &str, default: usize) -> Result<usize, ConfigError> {
        let Some((raw, value)) = self.get(var) else {
            return Ok(default);
        };
        parse_size(&value)
            .filter(|&n| n > 0)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                bad(
                    var,
                    &raw,
                    "a size greater than zero in bytes, or with a suffix such as 64k, 512MiB or 1G",
                )
            })
    }

    /// A positive number of CPUs, fractions allowed, as billionths.
    fn cpus(&self, var: &str, default: u64) -> Result<u64, ConfigError> {
        let Some((raw, value)) = self.get(var) else {
            return Ok(default);
        };
        value
            .parse::<f64>()
            .ok()
            .filter(|cpus| cpus.is_finite() && (0.01..=1024.0).contains(cpus))
            .map(|cpus| (cpus * 1e9).round() as u64)
            .ok_or_else(|| {
                bad(
                    var,
                    &raw,
                    "a number of CPUs from 0.01 to 1024, such as 1 or 0.5",
                )
            })
    }

    fn hosts(&self, var: &str, default: Vec<String>) -> Result<Vec<String>, ConfigError> {
        self.list(
            var,
            default,
            "a comma-separated list of host names such as localhost,127.0.0.1,::1",
            |host| {
                let ok = !host.contains(['/', '@']) && !host.contains(char::is_whitespace);
                ok.then(|| host.to_ascii_lowercase())
            },
        )
    }

    fn origins(&self, var: &str, default: Vec<String>) -> Result<Vec<String>, ConfigError> {
        self.list(
            var,
            default,
            "a comma-separated list of origins such as http://localhost:8080",
            |origin| {
                let origin = origin.trim_end_matches('/').to_ascii_lowercase();
                let rest = origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"))?;
                let ok = !rest.is_empty()
                    && !rest.contains(['/', '@'])
                    && !rest.contains(char::is_whitespace);
                ok.then_some(origin)
            },
        )
    }

    /// A comma-separated list; `item` normalises one entry or rejects it.
    fn list(
        &self,
        var: &str,
        default: Vec<String>,
        expected: &str,
        item: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<String>, ConfigError> {
        let Some((raw, value)) = self.get(var) else {
            return Ok(default);
        };
        let items = value
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| item(entry).ok_or_else(|| bad(var, &raw, expected)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(if items.is_empty() { default } else { items })
    }
}

/// Bytes, optionally followed by `k`, `m` or `g` (any case, optionally with
/// `b` or `ib`); every multiple is binary.
fn parse_size(text: &str) -> Option<u64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..digits].parse().ok()?;
    let multiplier = match text[digits..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

fn bad(var: &str, raw: &str, expected: &str) -> ConfigError {
    ConfigError::BadEnv {
        var: var.to_owned(),
        value: raw.to_owned(),
        expected: expected.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn with(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        Settings::from_lookup(&|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    fn ok(vars: &[(&str, &str)]) -> Settings {
        with(vars).unwrap_or_else(|err| panic!("{vars:?} should be accepted: {err}"))
    }

    fn err(vars: &[(&str, &str)]) -> String {
        match with(vars) {
            Ok(settings) => panic!("{vars:?} should be rejected, got {settings:?}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn defaults() {
        let s = ok(&[]);
        assert_eq!(s, Settings::default());
        assert_eq!(s.tool_timeout, Duration::from_secs(60));
        assert_eq!(s.exec_timeout, Duration::from_secs(30));
        assert_eq!(s.max_output_bytes, 1 << 20);
        assert_eq!(s.max_result_bytes, 1 << 20);
        assert_eq!(s.max_tool_result_bytes, 16 << 20);
        assert_eq!(s.max_source_bytes, 256 << 10);
        assert_eq!(s.max_tool_calls, 500);
        assert_eq!(s.max_recursion_depth, 200);
        assert_eq!(s.max_sleep_total, Duration::from_secs(10));
        assert_eq!(s.monty_mem_limit, 256 << 20);
        assert_eq!(s.session_idle, Duration::from_secs(1800));
        assert_eq!(s.max_sessions, 64);
        assert_eq!(s.description_budget, 8_000);
        assert_eq!(s.http_token, None);
        assert_eq!(s.allowed_hosts, ["localhost", "127.0.0.1", "::1"]);
        assert!(s.allowed_origins.is_empty());
        assert_eq!(s.docker_image, "codemcp-worker:1");
        assert_eq!(s.docker_memory, 512 << 20);
        assert_eq!(s.docker_pids, 128);
        assert_eq!(s.docker_nano_cpus, 1_000_000_000);
    }

    #[test]
    fn docker_settings() {
        let s = ok(&[
            ("CODEMCP_DOCKER_IMAGE", "local/worker:2"),
            ("CODEMCP_DOCKER_MEMORY", "1G"),
            ("CODEMCP_DOCKER_PIDS", "64"),
            ("CODEMCP_DOCKER_CPUS", "0.5"),
        ]);
        assert_eq!(s.docker_image, "local/worker:2");
        assert_eq!(s.docker_memory, 1 << 30);
        assert_eq!(s.docker_pids, 64);
        assert_eq!(s.docker_nano_cpus, 500_000_000);
        for cpus in ["0", "-1", "lots", "NaN", "inf", "0.001", "2000"] {
            assert!(
                err(&[("CODEMCP_DOCKER_CPUS", cpus)]).contains("a number of CPUs"),
                "{cpus}"
            );
        }
        assert!(err(&[("CODEMCP_DOCKER_PIDS", "0")]).contains("greater than zero"));
    }

    #[test]
    fn every_variable_is_read() {
        let s = ok(&[
            ("CODEMCP_TOOL_TIMEOUT_MS", "1500"),
            ("CODEMCP_EXEC_TIMEOUT_MS", " 2000 "),
            ("CODEMCP_MAX_OUTPUT_BYTES", "100"),
            ("CODEMCP_MAX_RESULT_BYTES", "2k"),
            ("CODEMCP_MAX_TOOL_RESULT_BYTES", "3MiB"),
            ("CODEMCP_MAX_SOURCE_BYTES", "1MiB"),
            ("CODEMCP_MAX_TOOL_CALLS", "7"),
            ("CODEMCP_MAX_RECURSION", "50"),
            ("CODEMCP_MAX_SLEEP_MS", "0"),
            ("CODEMCP_MONTY_MEM_LIMIT", "1G"),
            ("CODEMCP_SESSION_IDLE_SECS", "60"),
            ("CODEMCP_MAX_SESSIONS", "3"),
            ("CODEMCP_DESCRIPTION_BUDGET", "9000"),
            ("CODEMCP_HTTP_TOKEN", "t0k3n"),
            ("CODEMCP_ALLOWED_HOSTS", "Example.COM, 10.0.0.5:8080,"),
            (
                "CODEMCP_ALLOWED_ORIGINS",
                "https://app.example.com/,http://localhost:3000",
            ),
        ]);
        assert_eq!(s.tool_timeout, Duration::from_millis(1500));
        assert_eq!(s.exec_timeout, Duration::from_secs(2));
        assert_eq!(s.max_output_bytes, 100);
        assert_eq!(s.max_result_bytes, 2048);
        assert_eq!(s.max_tool_result_bytes, 3 << 20);
        assert_eq!(s.max_source_bytes, 1 << 20);
        assert_eq!(s.max_tool_calls, 7);
        assert_eq!(s.max_recursion_depth, 50);
        assert_eq!(s.max_sleep_total, Duration::ZERO);
        assert_eq!(s.monty_mem_limit, 1 << 30);
        assert_eq!(s.session_idle, Duration::from_secs(60));
        assert_eq!(s.max_sessions, 3);
        assert_eq!(s.description_budget, 9000);
        assert_eq!(s.http_token.as_deref(), Some("t0k3n"));
        assert_eq!(s.allowed_hosts, ["example.com", "10.0.0.5:8080"]);
        assert_eq!(
            s.allowed_origins,
            ["https://app.example.com", "http://localhost:3000"]
        );
    }

    #[test]
    fn blank_values_take_the_default() {
        let s = ok(&[
            ("CODEMCP_EXEC_TIMEOUT_MS", ""),
            ("CODEMCP_HTTP_TOKEN", ""),
            ("CODEMCP_ALLOWED_HOSTS", " , "),
            ("CODEMCP_MONTY_MEM_LIMIT", "  "),
        ]);
        assert_eq!(s, Settings::default());
    }

    #[test]
    fn size_suffixes() {
        for (text, expected) in [
            ("0b", Some(0)),
            ("4096", Some(4096)),
            ("64k", Some(64 << 10)),
            ("64K", Some(64 << 10)),
            ("64KB", Some(64 << 10)),
            ("512M", Some(512 << 20)),
            ("512MiB", Some(512 << 20)),
            ("512 mib", Some(512 << 20)),
            ("1G", Some(1 << 30)),
            ("2gib", Some(2 << 30)),
            ("1.5G", None),
            ("G", None),
            ("-1", None),
            ("12T", None),
            ("10 apples", None),
            ("99999999999999999999", None),
            ("18446744073709551615G", None),
        ] {
            assert_eq!(parse_size(text), expected, "{text}");
        }
    }

    #[test]
    fn bad_number_message() {
        assert_eq!(
            err(&[("CODEMCP_EXEC_TIMEOUT_MS", "abc")]),
            r#"CODEMCP_EXEC_TIMEOUT_MS="abc": expected a whole number of milliseconds greater than zero"#
        );
        assert_eq!(
            err(&[("CODEMCP_MAX_SLEEP_MS", "1.5")]),
            r#"CODEMCP_MAX_SLEEP_MS="1.5": expected a whole number of milliseconds"#
        );
        assert_eq!(
            err(&[("CODEMCP_SESSION_IDLE_SECS", "30m")]),
            r#"CODEMCP_SESSION_IDLE_SECS="30m": expected a whole number of seconds greater than zero"#
        );
    }

    #[test]
    fn bad_env_carries_its_parts() {
        match with(&[("CODEMCP_MAX_TOOL_CALLS", "lots")]) {
            Err(ConfigError::BadEnv {
                var,
                value,
                expected,
            }) => {
                assert_eq!(var, "CODEMCP_MAX_TOOL_CALLS");
                assert_eq!(value, "lots");
                assert_eq!(expected, "a whole number greater than zero");
            }
            other => panic!("expected BadEnv, got {other:?}"),
        }
    }

    #[test]
    fn zero_is_rejected_where_it_makes_no_sense() {
        for var in [
            "CODEMCP_TOOL_TIMEOUT_MS",
            "CODEMCP_EXEC_TIMEOUT_MS",
            "CODEMCP_MAX_OUTPUT_BYTES",
            "CODEMCP_MAX_RESULT_BYTES",
            "CODEMCP_MAX_TOOL_RESULT_BYTES",
            "CODEMCP_MAX_SOURCE_BYTES",
            "CODEMCP_MAX_TOOL_CALLS",
            "CODEMCP_MAX_RECURSION",
            "CODEMCP_MONTY_MEM_LIMIT",
            "CODEMCP_SESSION_IDLE_SECS",
            "CODEMCP_MAX_SESSIONS",
            "CODEMCP_DESCRIPTION_BUDGET",
        ] {
            let message = err(&[(var, "0")]);
            assert!(
                message.starts_with(&format!("{var}=\"0\": expected ")),
                "{message}"
            );
        }
        assert_eq!(
            ok(&[("CODEMCP_MAX_SLEEP_MS", "0")]).max_sleep_total,
            Duration::ZERO
        );
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        assert_eq!(
            err(&[("CODEMCP_MAX_TOOL_CALLS", "4294967296")]),
            r#"CODEMCP_MAX_TOOL_CALLS="4294967296": expected a whole number greater than zero"#
        );
        assert_eq!(
            err(&[("CODEMCP_TOOL_TIMEOUT_MS", "18446744073709551615")]),
            r#"CODEMCP_TOOL_TIMEOUT_MS="18446744073709551615": expected at most 31536000000 milliseconds (365 days)"#
        );
        assert_eq!(
            err(&[("CODEMCP_SESSION_IDLE_SECS", "31536001")]),
            r#"CODEMCP_SESSION_IDLE_SECS="31536001": expected at most 31536000 seconds (365 days)"#
        );
        assert!(err(&[("CODEMCP_MAX_SESSIONS", "-1")]).contains("greater than zero"));
    }

    #[test]
    fn bad_size_message() {
        assert_eq!(
            err(&[("CODEMCP_MONTY_MEM_LIMIT", "lots")]),
            r#"CODEMCP_MONTY_MEM_LIMIT="lots": expected a size greater than zero in bytes, or with a suffix such as 64k, 512MiB or 1G"#
        );
    }

    #[test]
    fn bad_hosts_and_origins() {
        assert!(
            err(&[("CODEMCP_ALLOWED_HOSTS", "localhost,http://evil.com")])
                .contains("expected a comma-separated list of host names")
        );
        for origin in [
            "localhost:8080",
            "http://",
            "ftp://x",
            "http://x/path",
            "http://a b",
        ] {
            let message = err(&[("CODEMCP_ALLOWED_ORIGINS", origin)]);
            assert!(
                message.contains("expected a comma-separated list of origins"),
                "{message}"
            );
        }
    }

    #[test]
    fn debug_hides_the_token() {
        let s = ok(&[("CODEMCP_HTTP_TOKEN", "hunter2")]);
        let shown = format!("{s:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    proptest! {
        #[test]
        fn whole_milliseconds_round_trip(ms in 1u64..=31_536_000_000) {
            let s = ok(&[("CODEMCP_TOOL_TIMEOUT_MS", &ms.to_string())]);
            prop_assert_eq!(s.tool_timeout, Duration::from_millis(ms));
        }

        #[test]
        fn arbitrary_values_never_panic(value in "\\PC{0,24}") {
            for var in ["CODEMCP_MONTY_MEM_LIMIT", "CODEMCP_EXEC_TIMEOUT_MS", "CODEMCP_ALLOWED_ORIGINS"] {
                let _ = with(&[(var, &value)]);
            }
        }
    }
}
