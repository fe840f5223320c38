//! `codemcp import`: the servers of the clients found on this machine,
//! added to codemcp's config file (shown first; written with `--write`).
//!
//! Names: an entry keeps its name unless that name is taken, in codemcp's
//! config or by another client's different entry; then it becomes
//! `NAME_CLIENT` (`github_cursor`), and `_2`, `_3`... if that is taken too.
//! An entry identical to one already in codemcp's config, or to one being
//! added from another client, is not added again.
#![allow(clippy::print_stdout)] // a command: its output is for the terminal, not the stdio transport

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Map, Value};

use super::{Client, Entry, Found, Server, edit, mcp_servers, opencode, read_client};
use crate::config::interpolate::{expand_home, interpolate};
use crate::config::self_ref::{SELF_REFERENCE, SelfBinaries};
use crate::config::{self, ConfigPath, Transport};

/// What happens to one client entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Added under `name` (the entry's own, or a clash-free one).
    Add { name: String, server: Server },
    /// An identical entry is already in codemcp's config under this name.
    Present { name: String },
    /// The same server is being added from an earlier client.
    Duplicate { client: Client, name: String },
    /// Its command is codemcp itself.
    SelfReference,
    /// codemcp cannot run it; the reason.
    Unusable(String),
}

#[derive(Debug, Clone)]
pub struct Item {
    pub client: Client,
    /// The name in the client's file.
    pub name: String,
    pub outcome: Outcome,
    pub notes: Vec<String>,
}

/// codemcp's own config: every name in it, and the entries it can run.
#[derive(Debug, Default)]
pub struct Existing {
    pub names: BTreeSet<String>,
    pub servers: Vec<(String, Server)>,
    /// `servers` by [`key`], so finding an identical one is a lookup.
    index: HashMap<String, Vec<usize>>,
}

/// A key identical servers share (their config entry as JSON): comparing
/// against every entry made import quadratic in the number of entries.
fn key(server: &Server) -> String {
    server.to_mcp_servers().to_string()
}

impl Existing {
    /// Reads codemcp's config text (either layout, or both).
    ///
    /// # Errors
    /// When the text is not JSON with comments or a section is not an object.
    pub fn parse(text: &str) -> Result<Self, String> {
        let root = mcp_servers::parse_jsonc(text)?;
        let mut entries = mcp_servers::read_section(root.get("mcpServers"), None)?;
        entries.extend(opencode::read_section(root.get("mcp"))?);
        Ok(Self::from_entries(entries))
    }

    fn from_entries(entries: Vec<Entry>) -> Self {
        let mut existing = Self::default();
        for entry in entries {
            existing.names.insert(entry.name.clone());
            if let Ok(server) = entry.server {
                existing
                    .index
                    .entry(key(&server))
                    .or_default()
                    .push(existing.servers.len());
                existing.servers.push((entry.name, server));
            }
        }
        existing
    }

    /// The name of an entry identical to `server`, if there is one.
    #[must_use]
    pub fn holding(&self, server: &Server) -> Option<&str> {
        self.index
            .get(&key(server))?
            .iter()
            .map(|&i| &self.servers[i])
            .find(|(_, s)| s == server)
            .map(|(name, _)| name.as_str())
    }
}

/// Whether `server` starts codemcp itself; references in its command are
/// expanded from our environment for the check only.
#[must_use]
pub fn is_self(server: &Server, guard: &SelfBinaries) -> bool {
    let Transport::Stdio { command, cwd, .. } = &server.transport else {
        return false;
    };
    let env = |name: &str| std::env::var(name).ok();
    let expand = |text: &str| {
        let text = interpolate(text, &env).unwrap_or_else(|_| text.to_owned());
        expand_home(text.clone(), &env).unwrap_or(text)
    };
    let cwd = cwd.as_ref().map(|cwd| expand(&cwd.to_string_lossy()));
    guard.launches_codemcp(&expand(command), cwd.as_deref().map(Path::new))
}

/// Decides every entry's fate. Pure: the files are already read.
#[must_use]
pub fn plan(found: &[Found], existing: &Existing, guard: &SelfBinaries) -> Vec<Item> {
    let mut items = Vec::new();
    let mut adding: Vec<(Client, String, Server)> = Vec::new();
    let mut adding_index: HashMap<String, Vec<usize>> = HashMap::new();
    for file in found {
        for entry in &file.listing.entries {
            let outcome = match &entry.server {
                Err(reason) => Outcome::Unusable(reason.clone()),
                Ok(server) if is_self(server, guard) => Outcome::SelfReference,
                Ok(server) => match existing.holding(server) {
                    Some(name) => Outcome::Present {
                        name: name.to_owned(),
                    },
                    None => match adding_index
                        .get(&key(server))
                        .and_then(|at| at.iter().map(|&i| &adding[i]).find(|a| a.2 == *server))
                    {
                        Some((client, name, _)) => Outcome::Duplicate {
                            client: *client,
                            name: name.clone(),
                        },
                        None => {
                            adding_index
                                .entry(key(server))
                                .or_default()
                                .push(adding.len());
                            adding.push((file.client, entry.name.clone(), server.clone()));
                            Outcome::Add {
                                name: entry.name.clone(),
                                server: server.clone(),
                            }
                        }
                    },
                },
            };
            items.push(Item {
                client: file.client,
                name: entry.name.clone(),
                outcome,
                notes: entry.notes.clone(),
            });
        }
    }
    rename_clashes(&mut items, existing, &adding);
    items
}

/// Gives `NAME_CLIENT` to every added entry whose name is taken, in
/// codemcp's config or by another added entry.
fn rename_clashes(items: &mut [Item], existing: &Existing, adding: &[(Client, String, Server)]) {
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for (_, name, _) in adding {
        *uses.entry(name.as_str()).or_default() += 1;
    }
    let clashes = |name: &str| {
        existing.names.contains(name) || uses.get(name).is_some_and(|&count| count > 1)
    };
    let mut taken: HashSet<String> = existing.names.iter().cloned().collect();
    taken.extend(
        adding
            .iter()
            .map(|(_, n, _)| n.clone())
            .filter(|n| !clashes(n)),
    );
    for item in items.iter_mut() {
        let Outcome::Add { name, .. } = &mut item.outcome else {
            continue;
        };
        if !clashes(name) {
            continue;
        }
        let base = format!("{name}_{}", item.client.suffix());
        let mut candidate = base.clone();
        let mut n = 2;
        while taken.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(candidate.clone());
        *name = candidate;
    }
}

/// `println!`, with what the files say shown escaped ([`shown`]).
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", shown(&format!($($arg)*)))
    };
}

/// `text` with control characters (an escape sequence that would recolour
/// or rewrite the terminal, a newline that would fake a line) and bidi and
/// invisible characters (that would reorder or hide what is shown) written
/// as `\u{..}`, so an entry's name is shown as it is.
#[must_use]
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{061c}' | '\u{feff}')
    };
    if !text.chars().any(hidden) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if hidden(c) {
                format!("\\u{{{:x}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// Prints one line per entry, with its notes under it.
fn print_items(items: &[Item]) {
    for item in items {
        let from = format!("{}: {}", item.client.name(), item.name);
        match &item.outcome {
            Outcome::Add { name, server } if *name == item.name => {
                say!("  + {name:<20} ({from})  {}", server.summary());
            }
            Outcome::Add { name, server } => say!(
                "  + {name:<20} ({from}; renamed: \"{}\" is taken by a different server)  {}",
                item.name,
                server.summary()
            ),
            Outcome::Present { name } => {
                say!(
                    "  = {:<20} ({from}) already in codemcp's config as \"{name}\"",
                    item.name
                );
            }
            Outcome::Duplicate { client, name } => say!(
                "  = {:<20} ({from}) same as {}'s \"{name}\"",
                item.name,
                client.name()
            ),
            Outcome::SelfReference => {
                tracing::warn!(target: "codemcp::import", client = item.client.name(), server = %item.name, "skipping a server entry that launches codemcp itself");
                say!("  - {:<20} ({from}) skipped: {SELF_REFERENCE}", item.name);
            }
            Outcome::Unusable(reason) => {
                say!("  ! {:<20} ({from}) not importable: {reason}", item.name);
            }
        }
        for note in &item.notes {
            say!("      note: {note}");
        }
    }
}

/// Reads the chosen clients' files, printing where each was looked for.
fn find(from: Option<Client>) -> Result<Vec<Found>, String> {
    let clients: Vec<Client> = from.map_or_else(|| Client::ALL.to_vec(), |c| vec![c]);
    let mut found = Vec::new();
    for client in clients {
        let Some(path) = client.config_file() else {
            return Err("cannot tell where the clients keep their files: HOME is not set".into());
        };
        match read_client(client, &path) {
            Ok(Some(file)) => {
                say!(
                    "{:<15} {} ({} servers)",
                    client.name(),
                    path.display(),
                    file.listing.entries.len()
                );
                for note in &file.listing.notes {
                    say!("      note: {note}");
                }
                found.push(file);
            }
            Ok(None) if from.is_some() => {
                return Err(format!("no {} config at {}", client.name(), path.display()));
            }
            Ok(None) => say!("{:<15} {}: not found", client.name(), path.display()),
            Err(err) if from.is_some() => return Err(error_chain(&err)),
            // One unreadable file does not hide the others' servers.
            Err(err) => say!("{:<15} skipped: {}", client.name(), error_chain(&err)),
        }
    }
    Ok(found)
}

pub(super) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Reads codemcp's config file; `None` when it does not exist yet.
///
/// # Errors
/// When it exists but cannot be read or parsed.
pub fn read_own(path: &Path) -> Result<Option<(String, Existing)>, String> {
    match read_text(path)? {
        Some(text) => {
            let existing = Existing::parse(&text)
                .map_err(|message| format!("{}: {message}", path.display()))?;
            Ok(Some((text, existing)))
        }
        None => Ok(None),
    }
}

/// The text of codemcp's config (a regular file of a config's size); `None`
/// when there is none.
fn read_text(path: &Path) -> Result<Option<String>, String> {
    match codemcp_base::secure_file::read_trusted_text(path, &super::CONFIG_RULES) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.is_missing() => Ok(None),
        Err(err) => Err(err.to_string()),
    }
}

/// Refuses to write when `path` no longer holds `read` (what the plan was
/// made from): another program (an editor, another import) changed it, and
/// writing would throw that change away.
fn unchanged_since_read(path: &Path, read: Option<&str>) -> Result<(), String> {
    if read_text(path)?.as_deref() == read {
        return Ok(());
    }
    tracing::warn!(target: "codemcp::import", path = %path.display(), "config changed while import ran; not written");
    Err(format!(
        "not written: {} changed since import read it (another program edited it); \
         nothing of that edit was lost. Run `codemcp import --write` again",
        path.display()
    ))
}

/// `codemcp import [--from CLIENT] [--write]`.
///
/// # Errors
/// A message for the user: no home directory, a file that cannot be read
/// or written, a result that codemcp's loader would not accept.
pub fn run(config: &ConfigPath, from: Option<Client>, write: bool) -> Result<ExitCode, String> {
    let path = config
        .path()
        .ok_or("no config file location: set HOME, CODEMCP_CONFIG or --config")?
        .to_owned();
    let found = find(from)?;
    let own = read_own(&path)?;
    let existing = own.as_ref().map(|(_, e)| e);
    let items = plan(
        found.as_slice(),
        existing.unwrap_or(&Existing::default()),
        &SelfBinaries::detect(),
    );
    let added: Vec<(String, &Server)> = items
        .iter()
        .filter_map(|item| match &item.outcome {
            Outcome::Add { name, server } => Some((name.clone(), server)),
            _ => None,
        })
        .collect();
    let state = if own.is_some() { "" } else { " (a new file)" };
    println!("codemcp config: {}{state}", path.display());
    print_items(&items);
    if added.is_empty() {
        println!("nothing to add");
        return Ok(ExitCode::SUCCESS);
    }
    if !write {
        println!("{} to add; run again with --write to add them", added.len());
        return Ok(ExitCode::SUCCESS);
    }
    write_servers(&path, own.as_ref().map(|(text, _)| text.as_str()), &added)?;
    println!("added {} servers to {}", added.len(), path.display());
    Ok(ExitCode::SUCCESS)
}

/// Adds `added` to codemcp's config at `path` (whose text is `own`, or
/// which does not exist yet), after a backup; refuses to write anything
/// codemcp's own loader would not read.
fn write_servers(
    path: &Path,
    own: Option<&str>,
    added: &[(String, &Server)],
) -> Result<(), String> {
    let in_file = |message: String| format!("{}: {message}", path.display());
    let text = match own {
        Some(text) => {
            let layout = edit::layout(text).map_err(in_file)?;
            let entries: Vec<(String, Value)> = added
                .iter()
                .map(|(name, server)| (name.clone(), entry_value(server, layout)))
                .collect();
            edit::append_servers(text, &entries).map_err(in_file)?
        }
        None => new_file(added),
    };
    config::parse(&text, path, &|_| None).map_err(|err| {
        format!("not written: the result would not load ({err}); please report this")
    })?;
    unchanged_since_read(path, own)?;
    if own.is_some() {
        let backup = edit::back_up(path).map_err(|e| error_chain(&e))?;
        println!("backup: {}", backup.display());
    }
    // Checked again just before the swap, so the window for a lost edit is
    // the rename alone.
    unchanged_since_read(path, own)?;
    edit::write_atomic(path, &text).map_err(|e| error_chain(&e))
}

fn entry_value(server: &Server, layout: edit::Layout) -> Value {
    match layout {
        edit::Layout::McpServers => server.to_mcp_servers(),
        edit::Layout::OpenCode => server.to_opencode(),
    }
}

fn new_file(added: &[(String, &Server)]) -> String {
    let servers: Map<String, Value> = added
        .iter()
        .map(|(name, server)| (name.clone(), server.to_mcp_servers()))
        .collect();
    let mut root = Map::new();
    root.insert("mcpServers".into(), Value::Object(servers));
    let mut text = serde_json::to_string_pretty(&Value::Object(root)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::clients::Listing;

    fn stdio(command: &str) -> Server {
        Server {
            transport: Transport::Stdio {
                command: command.to_owned(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
            },
            disabled: false,
        }
    }

    fn found(client: Client, entries: &[(&str, &str)]) -> Found {
        Found {
            client,
            path: PathBuf::from("/x"),
            listing: Listing {
                entries: entries
                    .iter()
                    .map(|(name, command)| Entry {
                        name: (*name).to_owned(),
                        server: Ok(stdio(command)),
                        notes: Vec::new(),
                    })
                    .collect(),
                notes: Vec::new(),
            },
        }
    }

    fn names(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|item| match &item.outcome {
                Outcome::Add { name, .. } => format!("+{name}"),
                Outcome::Present { name } => format!("={name}"),
                Outcome::Duplicate { client, name } => format!("={}:{name}", client.name()),
                Outcome::SelfReference => format!("-{}", item.name),
                Outcome::Unusable(_) => format!("!{}", item.name),
            })
            .collect()
    }

    #[test]
    fn a_taken_name_gets_the_clients_suffix_and_then_a_number() {
        let existing = Existing::from_entries(vec![
            Entry {
                name: "github".into(),
                server: Ok(stdio("gh-old")),
                notes: Vec::new(),
            },
            Entry {
                name: "github_cursor".into(),
                server: Err("broken".into()),
                notes: Vec::new(),
            },
            Entry {
                name: "same".into(),
                server: Ok(stdio("same-cmd")),
                notes: Vec::new(),
            },
        ]);
        let files = [
            found(
                Client::Cursor,
                &[("github", "gh-cursor"), ("other", "same-cmd")],
            ),
            found(
                Client::Vscode,
                &[("github", "gh-vscode"), ("fs", "fs"), ("fs2", "fs")],
            ),
            found(Client::Codex, &[("fs", "fs-codex")]),
        ];
        let items = plan(&files, &existing, &SelfBinaries::default());
        assert_eq!(
            names(&items),
            [
                "+github_cursor_2",
                "=same",
                "+github_vscode",
                "+fs_vscode",
                "=vscode:fs",
                "+fs_codex",
            ]
        );
    }
}
