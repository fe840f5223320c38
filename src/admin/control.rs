//! The gateway's side of the admin commands: its config as last read, the
//! servers switched on or off at run time, and how both become the catalog's
//! upstreams.
//!
//! A runtime switch (`enable`/`disable` without `--make-default`) lasts
//! until the gateway exits, across reloads, except that it is forgotten as
//! soon as the file says the same (then the file is in charge again).

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::Mutex;

use super::protocol::{Answer, Change, InstanceInfo, Listing, Reply, Request, Saved, ServerLine};
use crate::config::{self, ConfigPath, ServerConfig, SkippedServer, UpstreamConfig};
use crate::upstream::{Catalog, Reconfigured};

/// The skip reason `config::parse` gives an entry the file turns off.
const DISABLED: &str = "disabled";

pub struct Control {
    catalog: Catalog,
    path: ConfigPath,
    /// How long a change waits for new servers' first connection attempt.
    wait: Duration,
    info: InstanceInfo,
    state: Mutex<State>,
}

struct State {
    /// The config file as last read successfully.
    file: UpstreamConfig,
    /// Runtime switches: `true` on, `false` off.
    switches: BTreeMap<String, bool>,
    /// Why the last reload failed, until one succeeds.
    error: Option<String>,
}

impl Control {
    /// `file` is what the catalog was started with, read from `path`.
    pub fn new(
        catalog: Catalog,
        path: ConfigPath,
        file: UpstreamConfig,
        wait: Duration,
        info: InstanceInfo,
    ) -> Self {
        Self {
            catalog,
            path,
            wait,
            info,
            state: Mutex::new(State {
                file,
                switches: BTreeMap::new(),
                error: None,
            }),
        }
    }

    pub fn info(&self) -> &InstanceInfo {
        &self.info
    }

    /// Answers one request.
    pub async fn answer(&self, request: Request) -> Answer {
        let reply = match request {
            Request::Info => Ok(Reply::Info(self.info.clone())),
            Request::List => Ok(Reply::List(self.listing(&*self.state.lock().await))),
            Request::Enable { name, make_default } => self.switch(&name, true, make_default).await,
            Request::Disable { name, make_default } => {
                self.switch(&name, false, make_default).await
            }
            Request::Reload => self.reload().await,
        };
        match reply {
            Ok(reply) => Answer::Ok(Box::new(reply)),
            Err(message) => Answer::Err(message),
        }
    }

    /// Reads the config file again and applies what changed. A file that
    /// cannot be read leaves everything as it was.
    ///
    /// # Errors
    /// The file's error (with its line and column), for the user.
    pub async fn reload(&self) -> Result<Reply, String> {
        let mut state = self.state.lock().await;
        let loaded = match self.path.path() {
            // Between an editor's delete and write, or deleted by mistake:
            // not a reason to drop every server.
            Some(path) if state.file.path.is_some() && !path.exists() => {
                Err(format!("config file {} is gone", path.display()))
            }
            _ => config::load(&self.path).map_err(|e| e.to_string()),
        };
        let file = match loaded {
            Ok(file) => file,
            Err(e) => {
                let message = format!("{e}; the gateway keeps its last good config");
                tracing::warn!(target: "codemcp::admin", error = %e, "config reload refused; keeping the last good config");
                state.error = Some(message.clone());
                return Err(message);
            }
        };
        let state = &mut *state;
        state.error = None;
        state.file = file;
        let file = &state.file;
        state
            .switches
            .retain(|name, on| file_says(file, name).is_some_and(|says| says != *on));
        Ok(self.apply(state, None).await)
    }

    async fn switch(&self, name: &str, on: bool, make_default: bool) -> Result<Reply, String> {
        let mut state = self.state.lock().await;
        let Some(in_file) = file_says(&state.file, name) else {
            return Err(unknown(&state.file, name));
        };
        let now = state.switches.get(name).copied().unwrap_or(in_file);
        let word = if on { "enabled" } else { "disabled" };
        if now == on && (!make_default || in_file == on) {
            return Err(format!("'{name}' is already {word}"));
        }
        let mut saved = None;
        if make_default && in_file != on {
            let path = self
                .path
                .path()
                .ok_or("there is no config file to write (HOME is not set)")?;
            let backup = config::edit::set_enabled(path, name, on).map_err(|e| e.to_string())?;
            saved = Some(Saved {
                path: path.display().to_string(),
                backup: backup.display().to_string(),
            });
            state.file = config::load(&self.path).map_err(|e| e.to_string())?;
            state.error = None;
        }
        if file_says(&state.file, name) == Some(on) {
            state.switches.remove(name);
        } else {
            state.switches.insert(name.to_owned(), on);
        }
        tracing::info!(target: "codemcp::admin", server = %name, state = word, make_default, "server switched");
        Ok(self.apply(&state, saved).await)
    }

    /// Makes the catalog match the file plus the runtime switches.
    async fn apply(&self, state: &State, saved: Option<Saved>) -> Reply {
        let (servers, skipped) = effective(state);
        let done: Reconfigured = self
            .catalog
            .reconfigure(&servers, &skipped, self.wait)
            .await;
        Reply::Changed(Change {
            done,
            saved,
            listing: self.listing(state),
        })
    }

    fn listing(&self, state: &State) -> Listing {
        let mut servers: Vec<ServerLine> = self
            .catalog
            .statuses()
            .into_iter()
            .map(|s| {
                let state = match (s.connected, s.connecting) {
                    (true, _) => "connected",
                    (false, true) => "connecting",
                    (false, false) => "down",
                };
                ServerLine {
                    name: s.name,
                    state: state.to_owned(),
                    tools: s.tools,
                    note: s.error,
                }
            })
            .collect();
        for skipped in self.catalog.skipped() {
            let off = skipped.reason.starts_with(DISABLED);
            servers.push(ServerLine {
                name: skipped.name,
                state: if off { "disabled" } else { "skipped" }.to_owned(),
                tools: 0,
                note: Some(skipped.reason),
            });
        }
        for line in &mut servers {
            match state.switches.get(&line.name) {
                Some(true) => line.note = Some("enabled at run time".into()),
                Some(false) => line.note = Some("disabled at run time".into()),
                None => {}
            }
        }
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        Listing {
            config: self.info.config.clone(),
            config_error: state.error.clone(),
            servers,
        }
    }
}

/// Whether the file turns `name` on (`Some(true)`), off (`Some(false)`), or
/// has no usable entry of that name (`None`).
fn file_says(file: &UpstreamConfig, name: &str) -> Option<bool> {
    if file.servers.iter().any(|s| s.name == name) {
        Some(true)
    } else if file.disabled.iter().any(|s| s.name == name) {
        Some(false)
    } else {
        None
    }
}

fn unknown(file: &UpstreamConfig, name: &str) -> String {
    if let Some(skipped) = file.skipped.iter().find(|s| s.name == name) {
        return format!(
            "'{name}' cannot be switched on: its entry is not usable ({})",
            skipped.reason
        );
    }
    let mut names: Vec<&str> = file.servers.iter().map(|s| s.name.as_str()).collect();
    names.extend(file.disabled.iter().map(|s| s.name.as_str()));
    names.sort_unstable();
    let path = file
        .path
        .as_ref()
        .map_or_else(|| "the config".to_owned(), |p| p.display().to_string());
    if names.is_empty() {
        format!("no server named '{name}' in {path} (it has none)")
    } else {
        format!(
            "no server named '{name}' in {path} (it has: {})",
            names.join(", ")
        )
    }
}

/// The file's servers with the runtime switches applied, and what is skipped.
fn effective(state: &State) -> (Vec<ServerConfig>, Vec<SkippedServer>) {
    let on = |server: &&ServerConfig, default: bool| {
        state.switches.get(&server.name).copied().unwrap_or(default)
    };
    let mut servers: Vec<ServerConfig> = state
        .file
        .servers
        .iter()
        .filter(|s| on(s, true))
        .chain(state.file.disabled.iter().filter(|s| on(s, false)))
        .cloned()
        .collect();
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    let mut skipped: Vec<SkippedServer> = state
        .file
        .skipped
        .iter()
        .filter(|s| state.switches.get(&s.name) != Some(&true))
        .cloned()
        .collect();
    skipped.extend(
        state
            .file
            .servers
            .iter()
            .filter(|s| !on(s, true))
            .map(|s| SkippedServer {
                name: s.name.clone(),
                reason: format!("{DISABLED} at run time"),
            }),
    );
    skipped.sort_by(|a, b| a.name.cmp(&b.name));
    (servers, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(text: &str, switches: &[(&str, bool)]) -> State {
        let file = config::parse(text, std::path::Path::new("m.json"), &|_| None).expect("parses");
        State {
            file,
            switches: switches
                .iter()
                .map(|(n, on)| ((*n).to_owned(), *on))
                .collect(),
            error: None,
        }
    }

    const FILE: &str = r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y", "disabled": true},
        "c": {"url": "ftp://nope"}}}"#;

    #[test]
    fn runtime_switches_override_the_file() {
        let (servers, skipped) = effective(&state(FILE, &[("a", false), ("b", true)]));
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b"]);
        let reasons: Vec<(&str, &str)> = skipped
            .iter()
            .map(|s| (s.name.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(reasons[0], ("a", "disabled at run time"));
        assert_eq!(reasons[1].0, "c");
        assert_eq!(reasons.len(), 2, "b is no longer skipped: {reasons:?}");
    }

    #[test]
    fn an_unusable_or_unknown_name_says_why() {
        let file = state(FILE, &[]).file;
        assert_eq!(file_says(&file, "b"), Some(false));
        assert!(unknown(&file, "c").contains("its entry is not usable"));
        assert!(unknown(&file, "zz").contains("(it has: a, b)"));
    }
}
