//! Where each client keeps its user-level MCP server list, per OS, as the
//! clients document it. docs/configuration.md "Bring the servers you already have" has the
//! same table.

use std::path::PathBuf;

use super::Client;

/// The base directories the client paths hang from.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// `$HOME` (`%USERPROFILE%` on Windows).
    pub home: PathBuf,
    /// Where desktop apps keep settings: `$XDG_CONFIG_HOME` or `~/.config`
    /// on Linux, `~/Library/Application Support` on macOS, `%APPDATA%` on
    /// Windows (Claude Desktop, VS Code).
    pub app_config: PathBuf,
    /// `$XDG_CONFIG_HOME` or `~/.config` on every OS (opencode).
    pub xdg_config: PathBuf,
    /// `$CODEX_HOME` or `~/.codex`.
    pub codex_home: PathBuf,
}

impl Dirs {
    /// From the process environment; `None` without a home directory.
    #[must_use]
    pub fn from_env() -> Option<Self> {
        let home = dirs::home_dir()?;
        let set = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        let xdg_config = set("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
        Some(Self {
            app_config: dirs::config_dir().unwrap_or_else(|| xdg_config.clone()),
            xdg_config,
            codex_home: set("CODEX_HOME").unwrap_or_else(|| home.join(".codex")),
            home,
        })
    }
}

/// `client`'s user-level config file under `dirs`. For opencode, the
/// `.jsonc` file when it exists, else the `.json` one.
#[must_use]
pub fn config_file(client: Client, dirs: &Dirs) -> PathBuf {
    match client {
        Client::ClaudeDesktop => dirs
            .app_config
            .join("Claude")
            .join("claude_desktop_config.json"),
        Client::ClaudeCode => dirs.home.join(".claude.json"),
        Client::Cursor => dirs.home.join(".cursor").join("mcp.json"),
        Client::Vscode => dirs.app_config.join("Code").join("User").join("mcp.json"),
        Client::Opencode => {
            let dir = dirs.xdg_config.join("opencode");
            let jsonc = dir.join("opencode.jsonc");
            if jsonc.exists() {
                jsonc
            } else {
                dir.join("opencode.json")
            }
        }
        Client::Codex => dirs.codex_home.join("config.toml"),
        Client::Windsurf => dirs
            .home
            .join(".codeium")
            .join("windsurf")
            .join("mcp_config.json"),
        Client::Gemini => dirs.home.join(".gemini").join("settings.json"),
    }
}
