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

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use self::entry::Entry;
use self::fields::{bool_field, kind_of, str_field, str_list_field, str_map_field};
use self::oauth::oauth_field;
pub use self::oauth::{Grant, OAuthConfig};
pub use self::start::Start;
use super::interpolate::{expand_home, interpolate};
use super::{ConfigError, jsonc};
use codemcp_sdk::policy::Rules;

/// How long an upstream may take to answer `initialize` unless its entry
/// says otherwise.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

const SSE_REASON: &str = "SSE transport is not supported; use a Streamable HTTP URL";

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

// ---------------------------------------------------------------------------
// Reading the file's structure. The top level and the two sections are read
// with serde visitors so that shape errors and duplicate names carry a
// position; each server entry is kept as a `Value` and judged on its own.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// `mcpServers`: Claude Desktop, Claude Code, Cursor.
    Common,
    /// `mcp`: opencode.
    OpenCode,
}

impl Dialect {
    fn from_key(key: &str) -> Option<Self> {
        match key {
            "mcpServers" => Some(Dialect::Common),
            "mcp" => Some(Dialect::OpenCode),
            _ => None,
        }
    }

    fn key(self) -> &'static str {
        match self {
            Dialect::Common => "mcpServers",
            Dialect::OpenCode => "mcp",
        }
    }
}

struct RawEntry {
    name: String,
    dialect: Dialect,
    value: Value,
    /// Read apart from `value`, so that a malformed policy is an error with
    /// its position rather than a skipped server.
    policy: Rules,
}

#[derive(Default)]
struct RawFile {
    entries: Vec<RawEntry>,
    sections: usize,
    other_keys: usize,
}

impl<'de> Deserialize<'de> for RawFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FileVisitor)
    }
}

struct FileVisitor;

impl<'de> Visitor<'de> for FileVisitor {
    type Value = RawFile;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object with an \"mcpServers\" or \"mcp\" key")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFile, A::Error> {
        let mut file = RawFile::default();
        while let Some(key) = map.next_key::<String>()? {
            if let Some(dialect) = Dialect::from_key(&key) {
                file.sections += 1;
                map.next_value_seed(Section {
                    dialect,
                    entries: &mut file.entries,
                })?;
            } else {
                file.other_keys += 1;
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(file)
    }
}

struct Section<'a> {
    dialect: Dialect,
    entries: &'a mut Vec<RawEntry>,
}

impl<'de> DeserializeSeed<'de> for Section<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Section<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "\"{}\" to be an object mapping server names to their settings",
            self.dialect.key()
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // A set, not a scan of `entries` per name: that made loading (and
        // `import`, which loads what it would write) quadratic.
        let mut seen: std::collections::HashSet<String> = self
            .entries
            .iter()
            .map(|entry| entry.name.clone())
            .collect();
        while let Some(name) = map.next_key::<String>()? {
            if !seen.insert(name.clone()) {
                return Err(de::Error::custom(format_args!(
                    "duplicate server name \"{name}\""
                )));
            }
            let Entry { value, policy } = map.next_value::<Entry>()?;
            self.entries.push(RawEntry {
                name,
                dialect: self.dialect,
                value,
                policy,
            });
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Judging one server entry. `Err` is the reason it is skipped.

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

enum Kind {
    Local,
    Remote,
}

fn build(
    entry: &RawEntry,
    env: Env<'_>,
) -> Result<(Transport, Duration, OAuthConfig, Start), String> {
    if entry.name.trim().is_empty() {
        return Err("the server name is empty".to_owned());
    }
    if codemcp_base::for_humans::has_hidden(&entry.name) {
        // It is shown in approval questions and logs, where such characters forge or hide text.
        return Err("the server name has control, bidi or invisible characters".to_owned());
    }
    let Value::Object(fields) = &entry.value else {
        return Err(format!(
            "the entry must be an object, found {}",
            kind_of(&entry.value)
        ));
    };
    let transport = match entry.dialect {
        Dialect::Common => common_entry(fields, env)?,
        Dialect::OpenCode => opencode_entry(fields, env)?,
    };
    let timeout = timeout(fields)?.unwrap_or(DEFAULT_HANDSHAKE_TIMEOUT);
    let oauth = match transport {
        Transport::Http { .. } => oauth_field(fields, &|text| {
            interpolate(text, env).map_err(|e| e.to_string())
        })?,
        Transport::Stdio { .. } => OAuthConfig::default(),
    };
    let start = start::start_field(fields)?;
    Ok((transport, timeout, oauth, start))
}

/// Whether the entry turns its server off: `"disabled": true`, or
/// opencode's `"enabled": false`.
fn switched_off(entry: &RawEntry) -> Result<bool, String> {
    let Value::Object(fields) = &entry.value else {
        return Ok(false);
    };
    Ok(match entry.dialect {
        Dialect::Common => bool_field(fields, "disabled")? == Some(true),
        Dialect::OpenCode => bool_field(fields, "enabled")? == Some(false),
    })
}

fn common_entry(fields: &Map<String, Value>, env: Env<'_>) -> Result<Transport, String> {
    let declared = match str_field(fields, "type")? {
        None => None,
        Some(t) => match t.to_ascii_lowercase().as_str() {
            "stdio" => Some((Kind::Local, t)),
            "http" | "streamable-http" | "streamablehttp" => Some((Kind::Remote, t)),
            "sse" => return Err(SSE_REASON.to_owned()),
            _ => {
                return Err(format!(
                    "unknown \"type\" \"{t}\"; expected \"stdio\" or \"http\""
                ));
            }
        },
    };
    match kind(fields, declared)? {
        Kind::Local => {
            let command = str_field(fields, "command")?.unwrap_or_default();
            let args = str_list_field(fields, "args")?.unwrap_or_default();
            stdio(command, &args, fields, "env", env)
        }
        Kind::Remote => http(fields, env),
    }
}

fn opencode_entry(fields: &Map<String, Value>, env: Env<'_>) -> Result<Transport, String> {
    let declared = match str_field(fields, "type")? {
        None => None,
        Some(t @ "local") => Some((Kind::Local, t)),
        Some(t @ "remote") => Some((Kind::Remote, t)),
        Some(t) => {
            return Err(format!(
                "unknown \"type\" \"{t}\"; expected \"local\" or \"remote\""
            ));
        }
    };
    match kind(fields, declared)? {
        Kind::Local => {
            // opencode's `command` is the whole argv; a plain string is
            // accepted as a program without arguments.
            let argv = match fields.get("command") {
                Some(Value::String(command)) => vec![command.clone()],
                _ => str_list_field(fields, "command")?.unwrap_or_default(),
            };
            let Some((program, program_args)) = argv.split_first() else {
                return Err("\"command\" is an empty list".to_owned());
            };
            stdio(program, program_args, fields, "environment", env)
        }
        Kind::Remote => http(fields, env),
    }
}

/// Decides local or remote from `type` (with the spelling the user wrote)
/// and which of `command` and `url` are present.
fn kind(fields: &Map<String, Value>, declared: Option<(Kind, &str)>) -> Result<Kind, String> {
    let has = |key: &str| fields.get(key).is_some_and(|v| !v.is_null());
    match (declared, has("command"), has("url")) {
        (_, true, true) => Err(
            "has both \"command\" and \"url\"; a server is either a local command or a URL"
                .to_owned(),
        ),
        (Some((Kind::Local, t)), false, _) => {
            Err(format!("\"type\" is \"{t}\" but there is no \"command\""))
        }
        (Some((Kind::Remote, t)), _, false) => {
            Err(format!("\"type\" is \"{t}\" but there is no \"url\""))
        }
        (_, true, false) => Ok(Kind::Local),
        (_, false, true) => Ok(Kind::Remote),
        (None, false, false) => Err("has neither \"command\" nor \"url\"".to_owned()),
    }
}

fn stdio(
    command: &str,
    args: &[String],
    fields: &Map<String, Value>,
    env_key: &str,
    env: Env<'_>,
) -> Result<Transport, String> {
    let expand = |text: &str| interpolate(text, env).map_err(|err| err.to_string());
    let home = |text: String| expand_home(text, env).map_err(|err| err.to_string());
    let command = home(expand(command)?)?;
    if command.trim().is_empty() {
        return Err("\"command\" is empty".to_owned());
    }
    let args = args
        .iter()
        .map(|arg| expand(arg))
        .collect::<Result<Vec<_>, _>>()?;
    let env_vars = str_map_field(fields, env_key)?
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| Ok((name, expand(&value)?)))
        .collect::<Result<BTreeMap<_, _>, String>>()?;
    let cwd = match str_field(fields, "cwd")? {
        Some(cwd) => Some(PathBuf::from(home(expand(cwd)?)?)),
        None => None,
    };
    Ok(Transport::Stdio {
        command,
        args,
        env: env_vars,
        cwd,
    })
}

fn http(fields: &Map<String, Value>, env: Env<'_>) -> Result<Transport, String> {
    let expand = |text: &str| interpolate(text, env).map_err(|err| err.to_string());
    let url = expand(str_field(fields, "url")?.unwrap_or_default())?;
    let scheme_ok = ["http://", "https://"].iter().any(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
    });
    if !scheme_ok {
        return Err(format!(
            "\"url\" must start with http:// or https://, found \"{url}\""
        ));
    }
    let headers = str_map_field(fields, "headers")?
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| Ok((name, expand(&value)?)))
        .collect::<Result<BTreeMap<_, _>, String>>()?;
    Ok(Transport::Http { url, headers })
}

/// The entry's `timeout`. opencode documents milliseconds, but people also
/// write seconds, so a value of 1000 or more is read as milliseconds and a
/// smaller one as seconds (`5000` and `5` both mean five seconds). The same
/// rule applies to the `mcpServers` form, where clients disagree on the unit.
fn timeout(fields: &Map<String, Value>) -> Result<Option<Duration>, String> {
    let value = match fields.get("timeout") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64(),
        Some(other) => {
            return Err(format!(
                "\"timeout\" must be a number, found {}",
                kind_of(other)
            ));
        }
    };
    let seconds = match value {
        Some(v) if v >= 1000.0 => v / 1000.0,
        Some(v) if v > 0.0 => v,
        _ => return Err("\"timeout\" must be greater than zero".to_owned()),
    };
    Duration::try_from_secs_f64(seconds)
        .map(Some)
        .map_err(|_| "\"timeout\" is too large".to_owned())
}

mod entry;
pub(crate) mod fields;
mod oauth;
mod start;
#[cfg(test)]
mod tests;
