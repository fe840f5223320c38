//! The remembered catalog: each server's last `tools/list`, kept in the
//! state directory so the next start serves the description, stub and
//! `search_tools` at once, before any server finished its handshake.
//!
//! An entry is found by a hash of how the server is reached (command, args,
//! working directory and env names; or URL and header names), so a changed
//! entry starts afresh; it records the server's `serverInfo` version and
//! what the server says it is for (the description names it), and is
//! replaced whenever the server lists its tools again. So the description
//! served from it is the one the live servers give, byte for byte.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};

use crate::config::ServerConfig;

/// Where remembered catalogs live; `None` remembers nothing.
#[derive(Debug, Clone)]
pub(super) struct Remembered {
    dir: Option<PathBuf>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    server: String,
    /// The server's `serverInfo.version` when it listed these tools.
    version: String,
    /// What the server says it is for (see `server_about`), if anything.
    #[serde(default)]
    about: Option<String>,
    tools: Vec<Tool>,
}

/// What is remembered of one server: all the description needs.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Known {
    pub tools: Vec<Tool>,
    pub about: Option<String>,
}

impl Remembered {
    /// Catalogs under `state_dir/catalog`.
    pub(super) fn new(state_dir: Option<&Path>) -> Self {
        Self {
            dir: state_dir.map(|d| d.join("catalog")),
        }
    }

    fn path(&self, config: &ServerConfig) -> Option<PathBuf> {
        use sha2::Digest;
        // Debug hides env and header values; names and the command decide.
        let reached = format!("{:?}", config.transport);
        let digest = sha2::Sha256::digest(reached.as_bytes());
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        Some(self.dir.as_ref()?.join(format!("{hex}.json")))
    }

    /// The server's last listed tools and what it said it is for, if remembered.
    pub(super) fn load(&self, config: &ServerConfig) -> Option<Known> {
        let path = self.path(config)?;
        let text = std::fs::read(&path).ok()?;
        match serde_json::from_slice::<Entry>(&text) {
            Ok(entry) => Some(Known {
                tools: entry.tools,
                about: entry.about,
            }),
            Err(e) => {
                tracing::warn!(target: "codemcp::upstream", server = %config.name, path = %path.display(), error = %e, "remembered catalog unreadable; ignored");
                None
            }
        }
    }

    /// Remembers `known` as the server's catalog at `version`. Failing to
    /// write only costs the next start its head start, so it is logged.
    pub(super) fn save(&self, config: &ServerConfig, version: &str, known: &Known) {
        let Some(path) = self.path(config) else {
            return;
        };
        let entry = Entry {
            server: config.name.clone(),
            version: version.to_owned(),
            about: known.about.clone(),
            tools: known.tools.clone(),
        };
        if let Err(e) = write_private(&path, &entry) {
            tracing::warn!(target: "codemcp::upstream", server = %config.name, path = %path.display(), error = %e, "could not remember the server's catalog");
        }
    }
}

/// Writes `entry` to a temp file beside `path` (owner-only) and renames it
/// over, so a reader never sees half a catalog.
fn write_private(path: &Path, entry: &Entry) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let text = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    file.write_all(&text)?;
    drop(file);
    std::fs::rename(&temp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Transport;

    fn config(command: &str) -> ServerConfig {
        let text = format!(r#"{{"mcpServers": {{"s": {{"command": "{command}"}}}}}}"#);
        let parsed = crate::config::parse(&text, Path::new("mcp.json"), &|_| None);
        match parsed {
            Ok(mut c) => c.servers.remove(0),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_catalog_is_remembered_per_command() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let remembered = Remembered::new(Some(dir.path()));
        let a = config("a");
        assert!(matches!(a.transport, Transport::Stdio { .. }));
        assert!(remembered.load(&a).is_none());
        let known = Known {
            tools: vec![Tool::new("t", "does t", serde_json::Map::new())],
            about: Some("Tickets of the help desk.".into()),
        };
        remembered.save(&a, "1.0", &known);
        assert_eq!(remembered.load(&a), Some(known));
        assert!(remembered.load(&config("b")).is_none());
        assert!(Remembered::new(None).load(&a).is_none());
    }

    #[test]
    fn an_entry_from_before_purposes_were_remembered_still_loads() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let remembered = Remembered::new(Some(dir.path()));
        let a = config("a");
        let path = remembered.path(&a).unwrap_or_else(|| panic!("a path"));
        std::fs::create_dir_all(path.parent().unwrap_or(dir.path()))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&path, r#"{"server":"s","version":"1","tools":[]}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let known = remembered.load(&a).unwrap_or_else(|| panic!("loads"));
        assert_eq!((known.tools.len(), known.about), (0, None));
    }
}
