//! `codemcp install CLIENT [--undo]`: the client's server list becomes one
//! entry that starts codemcp, after a byte-for-byte backup of its file
//! (`FILE.codemcp-backup`); `--undo` puts the backup back.
//!
//! It refuses while a server it would remove is not in codemcp's config:
//! run `codemcp import --from CLIENT --write` first. Keeping the two steps
//! apart means the user sees what import adds before any client changes.
#![allow(clippy::print_stdout)] // a command: its output is for the terminal, not the stdio transport

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;

use super::import::{Existing, error_chain, is_self, read_own};
use super::{Client, codex, edit};
use crate::config::ConfigPath;
use crate::config::self_ref::SelfBinaries;

/// How the client should start codemcp.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Launch {
    command: String,
    args: Vec<String>,
    /// The variables codemcp's config refers to (for Codex, which passes a
    /// server only the variables it is told to).
    env_vars: Vec<String>,
}

/// `codemcp` when that is what `PATH` finds for the running binary, else
/// the running binary's path; with `--config` when the config file was
/// named explicitly.
fn launcher(config: &ConfigPath, existing: &Existing) -> Result<Launch, String> {
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .map_err(|err| format!("cannot tell where the codemcp binary is: {err}"))?;
    let on_path = which::which("codemcp")
        .ok()
        .and_then(|p| p.canonicalize().ok());
    let command = if on_path.as_deref() == Some(exe.as_path()) {
        "codemcp".to_owned()
    } else {
        exe.to_string_lossy().into_owned()
    };
    let mut args = Vec::new();
    if let ConfigPath::Explicit { path, .. } = config {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        args.extend(["--config".to_owned(), path.to_string_lossy().into_owned()]);
    }
    args.push("serve".to_owned());
    let env_vars: BTreeSet<String> = existing
        .servers
        .iter()
        .flat_map(|(_, server)| server.variables())
        .collect();
    Ok(Launch {
        command,
        args,
        env_vars: env_vars.into_iter().collect(),
    })
}

/// The client's file with its list replaced by the codemcp entry.
fn rewrite(client: Client, text: &str, launch: &Launch) -> Result<String, String> {
    let Launch { command, args, .. } = launch;
    let argv: Vec<&str> = std::iter::once(command.as_str())
        .chain(args.iter().map(String::as_str))
        .collect();
    match client {
        Client::Codex => codex::replace_servers(text, command, args, &launch.env_vars),
        Client::Opencode => edit::replace_servers(
            text,
            "mcp",
            "codemcp",
            &json!({"type": "local", "command": argv, "enabled": true}),
        ),
        Client::Vscode => edit::replace_servers(
            text,
            "servers",
            "codemcp",
            &json!({"type": "stdio", "command": command, "args": args}),
        ),
        Client::ClaudeCode => edit::replace_servers(
            text,
            "mcpServers",
            "codemcp",
            &json!({"type": "stdio", "command": command, "args": args, "env": {}}),
        ),
        _ => edit::replace_servers(
            text,
            "mcpServers",
            "codemcp",
            &json!({"command": command, "args": args}),
        ),
    }
}

/// The client's entries that codemcp's config does not hold yet, with why.
fn not_imported(client: Client, text: &str, existing: &Existing) -> Result<Vec<String>, String> {
    let guard = SelfBinaries::detect();
    let listing = client.read(text)?;
    Ok(listing
        .entries
        .iter()
        .filter_map(|entry| match &entry.server {
            Err(reason) => Some(format!("{} (codemcp cannot run it: {reason})", entry.name)),
            Ok(server) if is_self(server, &guard) || existing.holding(server).is_some() => None,
            Ok(_) => Some(entry.name.clone()),
        })
        .collect())
}

fn client_file(client: Client) -> Result<PathBuf, String> {
    client
        .config_file()
        .ok_or_else(|| "cannot tell where the clients keep their files: HOME is not set".to_owned())
}

/// `codemcp install CLIENT [--undo]`.
///
/// # Errors
/// A message for the user; nothing has been changed then.
pub fn run(config: &ConfigPath, client: Client, undo: bool) -> Result<ExitCode, String> {
    // A file kept as a symlink (dotfiles) is changed, and backed up, where it points.
    let path = client_file(client)?;
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    if undo {
        return restore(client, &path);
    }
    let backup = edit::backup_path(&path);
    if backup.exists() {
        return Err(format!(
            "{} exists from an earlier install; run `codemcp install {} --undo` first (or remove it)",
            backup.display(),
            client.name()
        ));
    }
    let text = codemcp_base::secure_file::read_trusted_text(&path, &super::CONFIG_RULES).map_err(
        |err| {
            format!(
                "cannot read {}'s config {}: {err}",
                client.name(),
                path.display()
            )
        },
    )?;
    let own_path = config
        .path()
        .ok_or("no config file location: set HOME, CODEMCP_CONFIG or --config")?;
    let existing = read_own(own_path)?.map(|(_, e)| e).unwrap_or_default();
    let missing =
        not_imported(client, &text, &existing).map_err(|m| format!("{}: {m}", path.display()))?;
    if !missing.is_empty() {
        return Err(format!(
            "not changed: {} lists servers that are not in codemcp's config {} yet: {}. \
             Run `codemcp import --from {} --write` first (or remove them from the client).",
            path.display(),
            own_path.display(),
            missing.join(", "),
            client.name()
        ));
    }
    let launch = launcher(config, &existing)?;
    let new_text =
        rewrite(client, &text, &launch).map_err(|m| format!("{}: {m}", path.display()))?;
    let backup = edit::back_up(&path).map_err(|e| error_chain(&e))?;
    edit::write_atomic(&path, &new_text).map_err(|e| error_chain(&e))?;
    println!(
        "{} now starts codemcp ({} {}) instead of its own servers, which codemcp's config {} holds",
        path.display(),
        launch.command,
        launch.args.join(" "),
        own_path.display()
    );
    if client == Client::Codex && !launch.env_vars.is_empty() {
        println!("passed on by Codex: {}", launch.env_vars.join(", "));
    }
    println!("backup: {}", backup.display());
    println!("undo: codemcp install {} --undo", client.name());
    Ok(ExitCode::SUCCESS)
}

/// Puts the backup back (the whole file as it was before install).
fn restore(client: Client, path: &Path) -> Result<ExitCode, String> {
    let backup = edit::backup_path(path);
    if !backup.exists() {
        return Err(format!(
            "nothing to undo: no backup at {} (made by `codemcp install {}`)",
            backup.display(),
            client.name()
        ));
    }
    std::fs::rename(&backup, path).map_err(|err| {
        format!(
            "cannot restore {} from {}: {err}",
            path.display(),
            backup.display()
        )
    })?;
    println!("{} restored from {}", path.display(), backup.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_gets_one_codemcp_entry_in_its_own_format() {
        let launch = Launch {
            command: "/opt/codemcp".to_owned(),
            args: vec!["serve".to_owned()],
            env_vars: vec!["TOKEN".to_owned()],
        };
        let cases = [
            (
                Client::Cursor,
                "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}",
            ),
            (
                Client::Vscode,
                "{\"servers\": {\"a\": {\"command\": \"x\"}}, \"inputs\": []}",
            ),
            (
                Client::Opencode,
                "{\"mcp\": {\"a\": {\"type\": \"local\", \"command\": [\"x\"]}}}",
            ),
            (
                Client::Codex,
                "model = \"o3\"\n[mcp_servers.a]\ncommand = \"x\"\n",
            ),
        ];
        for (client, text) in cases {
            let out = rewrite(client, text, &launch).expect("rewrites");
            let listing = client.read(&out).expect("reads back");
            assert_eq!(listing.entries.len(), 1, "{client:?}: {out}");
            assert_eq!(listing.entries[0].name, "codemcp");
            let server = listing.entries[0].server.clone().expect("usable");
            assert!(
                server.summary().starts_with("/opt/codemcp serve"),
                "{client:?}: {out}"
            );
        }
    }
}
