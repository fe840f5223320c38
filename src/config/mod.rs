//! Configuration: the upstream servers file ([`file`]) and the runtime limits
//! read from flags and `CODEMCP_*` environment variables ([`settings`]).
//!
//! Both are read once at startup. Nothing here touches the network or spawns
//! anything; the upstream module acts on the [`UpstreamConfig`] it is given.

pub mod edit;
pub mod file;
pub mod interpolate;
mod jsonc;
pub mod self_ref;
pub mod settings;
pub mod write;

use std::path::PathBuf;

pub use file::{
    ConfigPath, ConfigSource, Grant, OAuthConfig, ServerConfig, SkippedServer, Start, Transport,
    UpstreamConfig, load, parse, resolve_path,
};
pub use settings::{
    CpythonSettings, Fallback, HttpSettings, Isolation, MontyPlacement, MontySettings,
    OutputFormat, RunLimits, SessionSettings, Settings, UpstreamSettings,
};

/// Why the configuration could not be read.
///
/// Every variant stops startup: the gateway never runs with a half-read
/// configuration. A problem with a single upstream server entry is not an
/// error; that server is listed in [`UpstreamConfig::skipped`] instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config file named by `--config` or `CODEMCP_CONFIG` does not exist.
    /// (A missing file at the default location is not an error.)
    #[error("config file {path} does not exist (named by {from})")]
    Missing { path: PathBuf, from: ConfigSource },

    /// The config file exists but could not be read (permissions, not UTF-8, ...).
    #[error("cannot read config file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The path is not a regular file (a FIFO, a device, a directory) or is
    /// larger than [`CONFIG_FILE`] allows: refused unread, so it cannot hang
    /// or flood the gateway.
    #[error(transparent)]
    Unsafe(#[from] codemcp_base::secure_file::UnsafeFile),

    /// The file is not valid JSON (with comments), or a top-level section has
    /// the wrong shape, or two servers share a name. `line` and `column` are
    /// 1-based and count bytes, as `serde_json` does.
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },

    /// The file parsed but is not a config file we understand (for example
    /// an object with neither `mcpServers` nor `mcp`).
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },

    /// A `CODEMCP_*` environment variable has a value we cannot use.
    #[error("{var}={value:?}: expected {expected}")]
    BadEnv {
        var: String,
        value: String,
        expected: String,
    },
}

/// How a config file is read (`load`, `enable`/`disable`): any owner (it is
/// the user's own file), but a regular file of at most 4 MiB, opened without
/// blocking, so a FIFO or a device in its place is refused at once.
pub(crate) const CONFIG_FILE: codemcp_base::secure_file::Rules = codemcp_base::secure_file::Rules {
    what: "config file",
    max_bytes: 4 << 20,
    follow_symlink: true,
    owner: codemcp_base::secure_file::Owner::Anyone,
    private_writes: false,
};
