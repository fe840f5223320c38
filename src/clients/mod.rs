//! The MCP clients whose server lists `codemcp import` reads and whose
//! config `codemcp install` rewrites: where each keeps its file on each OS,
//! and how each writes a server entry. One file per format; [`import`] and
//! [`install`] act on what they read.

pub mod codex;
pub mod edit;
pub mod import;
pub mod install;
pub mod mcp_servers;
pub mod opencode;
pub mod paths;
pub mod refs;
pub mod server;

use std::path::{Path, PathBuf};

pub use server::{Entry, Listing, Server};

/// An MCP client that codemcp can import from and install into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Opencode,
    Codex,
    Windsurf,
    Gemini,
}

impl Client {
    /// Every client, in the order imports are listed and clashes decided.
    pub const ALL: [Client; 8] = [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Cursor,
        Client::Vscode,
        Client::Opencode,
        Client::Codex,
        Client::Windsurf,
        Client::Gemini,
    ];

    /// The name on the command line (`claude-desktop`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Opencode => "opencode",
            Client::Codex => "codex",
            Client::Windsurf => "windsurf",
            Client::Gemini => "gemini",
        }
    }

    /// The suffix a clashing name gets (`github` → `github_claude_code`).
    #[must_use]
    pub fn suffix(self) -> String {
        self.name().replace('-', "_")
    }

    /// The user-level config file this client reads its servers from, if
    /// any exists; `None` when the home directory is unknown.
    #[must_use]
    pub fn config_file(self) -> Option<PathBuf> {
        paths::Dirs::from_env().map(|dirs| paths::config_file(self, &dirs))
    }

    /// Reads the servers out of this client's file text.
    ///
    /// # Errors
    /// A message naming what is wrong when the text is not this client's format.
    pub fn read(self, text: &str) -> Result<Listing, String> {
        match self {
            Client::Codex => codex::read(text),
            Client::Opencode => opencode::read_file(text),
            other => mcp_servers::read_file(other, text),
        }
    }
}

/// One client's file, read.
#[derive(Debug)]
pub struct Found {
    pub client: Client,
    pub path: PathBuf,
    pub listing: Listing,
}

/// Why a client file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file, or too large to be a config.
    #[error(transparent)]
    Unsafe(#[from] codemcp_base::secure_file::UnsafeFile),
}

/// A client config grants nothing, so anyone may own it and a symlink
/// (dotfiles) is followed; but only a regular file of a config's size is
/// read (`~/.claude.json` keeps history and grows to tens of MB).
pub const CONFIG_RULES: codemcp_base::secure_file::Rules = codemcp_base::secure_file::Rules {
    what: "the config file",
    max_bytes: 64 << 20,
    follow_symlink: true,
    owner: codemcp_base::secure_file::Owner::Anyone,
    private_writes: false,
};

/// Reads `client`'s file at `path`; `Ok(None)` when there is none.
///
/// # Errors
/// The file exists but cannot be read or is not in the client's format.
pub fn read_client(client: Client, path: &Path) -> Result<Option<Found>, ClientError> {
    let text = match codemcp_base::secure_file::read_trusted_text(path, &CONFIG_RULES) {
        Ok(text) => text,
        Err(err) if err.is_missing() => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let listing = client.read(&text).map_err(|message| ClientError::Format {
        path: path.to_owned(),
        message,
    })?;
    Ok(Some(Found {
        client,
        path: path.to_owned(),
        listing,
    }))
}
