//! The upstream servers file.
//!
//! Two layouts are read, and a file may hold both (their servers are merged;
//! a name used twice is an error):
//!
//! - the common one written by Claude Desktop, Claude Code and Cursor:
//!   `{"mcpServers": {"name": {"command": "npx", "args": [...], "env": {...},
//!   "cwd": "..."}}}` or `{"mcpServers": {"name": {"url": "https://...",
//!   "headers": {...}}}}`, with optional `"type"` (`stdio`, `http`,
//!   `streamable-http`, `streamableHttp`; `sse` is not supported),
//!   `"disabled"` and `"timeout"`;
//! - opencode's: `{"mcp": {"name": {"type": "local", "command": ["cmd",
//!   "arg"], "environment": {...}}}}` or `{"mcp": {"name": {"type":
//!   "remote", "url": "...", "headers": {...}}}}`, with optional `"enabled"`
//!   and `"timeout"`.
//!
//! The file may contain `//` and `/* */` comments and trailing commas. Every
//! string value may refer to environment variables (see [`interpolate`]).
//! Unknown fields are ignored. A server entry we cannot use is skipped with
//! a reason and never blocks the others; only a file we cannot read as a
//! whole is an error.
//!
//! [`interpolate`]: super::interpolate

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use self::judge::{build, switched_off};
use self::layout::RawFile;
pub use self::oauth::{Grant, OAuthConfig};
pub use self::start::Start;
use super::{ConfigError, jsonc};
use codemcp_sdk::policy::Rules;

/// How long an upstream may take to answer `initialize` unless its entry
/// says otherwise.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach one upstream server.
///
/// `Debug` shows the names of environment variables and headers but not
/// their values, which are often credentials.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP over stdin/stdout. `env` is added to the
    /// environment the gateway passes on.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &Redacted(env))
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &Redacted(headers))
                .finish(),
        }
    }
}

struct Redacted<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, format_args!("<redacted>"))))
            .finish()
    }
}

/// One upstream server the gateway should connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The key of the entry in the config file; never empty.
    pub name: String,
    pub transport: Transport,
    /// From the entry's `timeout`, else [`DEFAULT_HANDSHAKE_TIMEOUT`].
    pub handshake_timeout: Duration,
    /// The entry's `"policy"`: what agent code may do with each tool.
    pub policy: Rules,
    /// The entry's `"oauth"`: how to log in to a remote server that asks for
    /// it (default for stdio servers, which never do).
    pub oauth: OAuthConfig,
    /// The entry's `"start"`: with the gateway, or on first use.
    pub start: Start,
}

/// A server entry that is in the file but will not be connected to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedServer {
    pub name: String,
    /// Why, in words meant for the user (`disabled`, `environment variable
    /// GITHUB_TOKEN is not set`, ...).
    pub reason: String,
}

/// What the config file asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamConfig {
    /// The file that was read; `None` when there was none.
    pub path: Option<PathBuf>,
    /// Usable servers, sorted by name.
    pub servers: Vec<ServerConfig>,
    /// Entries that were skipped, sorted by name.
    pub skipped: Vec<SkippedServer>,
    /// Entries the file turns off (`"disabled": true`, opencode's
    /// `"enabled": false`) that are otherwise usable, sorted by name. They
    /// are in `skipped` too; `codemcp enable` can turn one on at run time.
    pub disabled: Vec<ServerConfig>,
}

/// Who named an explicit config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// The `--config` command-line flag.
    Flag,
    /// The `CODEMCP_CONFIG` environment variable.
    Env,
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigSource::Flag => "--config",
            ConfigSource::Env => "CODEMCP_CONFIG",
        })
    }
}

/// Where the config file is, and whether the user asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigPath {
    /// Named by the user: it must exist.
    Explicit { path: PathBuf, from: ConfigSource },
    /// The default location: it may be missing.
    Default(PathBuf),
    /// There is no default location because neither `XDG_CONFIG_HOME` nor
    /// `HOME` is set; no upstreams are configured.
    Unavailable,
}

impl ConfigPath {
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigPath::Explicit { path, .. } | ConfigPath::Default(path) => Some(path),
            ConfigPath::Unavailable => None,
        }
    }

    #[must_use]
    pub fn is_explicit(&self) -> bool {
        matches!(self, ConfigPath::Explicit { .. })
    }
}

/// Picks the config file: the `--config` flag, else `CODEMCP_CONFIG`, else
/// `$XDG_CONFIG_HOME/codemcp/mcp.json` (when that is an absolute path),
/// else `~/.config/codemcp/mcp.json`.
#[must_use]
pub fn resolve_path(cli: Option<&Path>) -> ConfigPath {
    resolve_path_with(cli, &|name| std::env::var_os(name).map(PathBuf::from))
}

fn resolve_path_with(cli: Option<&Path>, env: &dyn Fn(&str) -> Option<PathBuf>) -> ConfigPath {
    let set = |name: &str| env(name).filter(|value| !value.as_os_str().is_empty());
    if let Some(path) = cli {
        return ConfigPath::Explicit {
            path: path.to_owned(),
            from: ConfigSource::Flag,
        };
    }
    if let Some(path) = set("CODEMCP_CONFIG") {
        return ConfigPath::Explicit {
            path,
            from: ConfigSource::Env,
        };
    }
    let config_dir = set("XDG_CONFIG_HOME")
        .filter(|dir| dir.is_absolute())
        .or_else(|| set("HOME").map(|home| home.join(".config")));
    match config_dir {
        Some(dir) => ConfigPath::Default(dir.join("codemcp").join("mcp.json")),
        None => ConfigPath::Unavailable,
    }
}

/// Reads and parses the config file, taking environment references from the
/// process environment (a variable whose value is not valid Unicode counts
/// as unset). A server whose command is codemcp itself is skipped (see
/// [`super::self_ref`]). Logs each skipped server as a warning.
///
/// # Errors
/// A missing file at the default location gives an empty config; a missing
/// explicit file is [`ConfigError::Missing`]. Otherwise as [`parse`], or
/// [`ConfigError::Unsafe`] when the file cannot be read or is no regular file.
pub fn load(path: &ConfigPath) -> Result<UpstreamConfig, ConfigError> {
    let Some(file) = path.path() else {
        return Ok(UpstreamConfig::default());
    };
    let text = match codemcp_base::secure_file::read_trusted_text(file, &super::CONFIG_FILE) {
        Ok(text) => text,
        Err(err) if err.is_missing() => {
            if let ConfigPath::Explicit { path, from } = path {
                return Err(ConfigError::Missing {
                    path: path.clone(),
                    from: *from,
                });
            }
            tracing::debug!(target: "codemcp::config", path = %file.display(), "no config file; no upstream servers");
            return Ok(UpstreamConfig::default());
        }
        Err(err) => return Err(err.into()),
    };
    let mut config = parse(&text, file, &|name| std::env::var(name).ok())?;
    super::self_ref::skip_self_references(&mut config, &super::self_ref::SelfBinaries::detect());
    for skipped in &config.skipped {
        tracing::warn!(target: "codemcp::config", server = %skipped.name, reason = %skipped.reason, "skipping upstream server");
    }
    Ok(config)
}

/// Parses config file text. `origin` names the file in errors; `env` answers
/// environment references (and `HOME` for `~`). Does no I/O.
///
/// # Errors
/// [`ConfigError::Parse`] for malformed JSON, a top level or section of the
/// wrong type, or a duplicate server name; [`ConfigError::Invalid`] for an
/// empty file or an object with neither `mcpServers` nor `mcp`.
pub fn parse(
    text: &str,
    origin: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<UpstreamConfig, ConfigError> {
    let json = jsonc::blank_out(text);
    if json.iter().all(u8::is_ascii_whitespace) {
        return Err(invalid(
            origin,
            "the file is empty; expected {\"mcpServers\": {...}}",
        ));
    }
    let raw: RawFile = serde_json::from_slice(&json).map_err(|err| parse_error(origin, &err))?;
    if raw.sections == 0 && raw.other_keys > 0 {
        return Err(invalid(
            origin,
            "found neither \"mcpServers\" (Claude Desktop, Claude Code, Cursor) \
             nor \"mcp\" (opencode); expected {\"mcpServers\": {\"name\": {\"command\": ...}}}",
        ));
    }
    let mut config = UpstreamConfig {
        path: Some(origin.to_owned()),
        ..UpstreamConfig::default()
    };
    for entry in raw.entries {
        let built =
            build(&entry, env).map(
                |(transport, handshake_timeout, oauth, start)| ServerConfig {
                    name: entry.name.clone(),
                    transport,
                    handshake_timeout,
                    policy: entry.policy.clone(),
                    oauth,
                    start,
                },
            );
        let skip = |reason: String| SkippedServer {
            name: entry.name.clone(),
            reason,
        };
        match (switched_off(&entry), built) {
            (Err(reason), _) | (Ok(false), Err(reason)) => config.skipped.push(skip(reason)),
            (Ok(false), Ok(server)) => config.servers.push(server),
            (Ok(true), Ok(server)) => {
                config.skipped.push(skip("disabled".to_owned()));
                config.disabled.push(server);
            }
            (Ok(true), Err(reason)) => config.skipped.push(skip(format!(
                "disabled (and its entry is not usable: {reason})"
            ))),
        }
    }
    config.servers.sort_by(|a, b| a.name.cmp(&b.name));
    config.skipped.sort_by(|a, b| a.name.cmp(&b.name));
    config.disabled.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(config)
}

fn invalid(origin: &Path, message: &str) -> ConfigError {
    ConfigError::Invalid {
        path: origin.to_owned(),
        message: message.to_owned(),
    }
}

/// `serde_json` appends " at line L column C" to its messages; we print the
/// position first, compiler style, so it is split off. `serde_json` says
/// column 0 for an error at the first byte of a line; editors count from 1.
fn parse_error(origin: &Path, err: &serde_json::Error) -> ConfigError {
    let full = err.to_string();
    if err.line() == 0 {
        return invalid(origin, &full);
    }
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    ConfigError::Parse {
        path: origin.to_owned(),
        line: err.line(),
        column: err.column().max(1),
        message: full.strip_suffix(&suffix).unwrap_or(&full).to_owned(),
    }
}

mod entry;
pub(crate) mod fields;
mod judge;
mod layout;
mod oauth;
mod start;
#[cfg(test)]
mod tests;
