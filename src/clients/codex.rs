//! Codex: `[mcp_servers.NAME]` tables in `$CODEX_HOME/config.toml`
//! (`~/.codex/config.toml`), read with `toml` and rewritten with `toml_edit`
//! so that the rest of the file keeps its comments and layout.
//!
//! Codex expands no references: `env` and `http_headers` values are
//! literals. Its `env_http_headers = {HEADER = "VAR"}` and
//! `bearer_token_env_var = "VAR"` name variables; they become `${VAR}`
//! references. `env_vars` (variables passed through by name) needs nothing,
//! since codemcp passes its own environment on to the servers it starts.

use std::collections::BTreeMap;

use toml::{Table, Value};

use super::{Entry, Listing, Server};
use crate::config::Transport;

/// Reads Codex's config file.
///
/// # Errors
/// When the text is not TOML or `mcp_servers` is not a table.
pub fn read(text: &str) -> Result<Listing, String> {
    let root: Table = toml::from_str(text).map_err(|err| err.to_string())?;
    let servers = match root.get("mcp_servers") {
        None => return Ok(Listing::default()),
        Some(Value::Table(servers)) => servers,
        Some(_) => return Err("\"mcp_servers\" is not a table".to_owned()),
    };
    let entries = servers
        .iter()
        .map(|(name, value)| {
            let mut notes = Vec::new();
            let server = match value {
                Value::Table(fields) => entry(fields, &mut notes),
                _ => Err("the entry is not a table".to_owned()),
            };
            Entry {
                name: name.clone(),
                server,
                notes,
            }
        })
        .collect();
    Ok(Listing {
        entries,
        notes: Vec::new(),
    })
}

fn entry(fields: &Table, notes: &mut Vec<String>) -> Result<Server, String> {
    let transport = if let Some(command) = string(fields, "command")? {
        if fields.contains_key("env_vars") {
            notes.push(
                "its \"env_vars\" need nothing: codemcp passes its own environment on".to_owned(),
            );
        }
        Transport::Stdio {
            command: command.to_owned(),
            args: strings(fields, "args")?,
            env: strings_map(fields, "env")?,
            cwd: string(fields, "cwd")?.map(Into::into),
        }
    } else if let Some(url) = string(fields, "url")? {
        let mut headers = strings_map(fields, "http_headers")?;
        for (header, var) in strings_map(fields, "env_http_headers")? {
            headers.insert(header, format!("${{{var}}}"));
        }
        if let Some(var) = string(fields, "bearer_token_env_var")? {
            headers.insert("Authorization".to_owned(), format!("Bearer ${{{var}}}"));
        }
        Transport::Http {
            url: url.to_owned(),
            headers,
        }
    } else {
        return Err("has neither \"command\" nor \"url\"".to_owned());
    };
    Ok(Server {
        transport,
        disabled: fields.get("enabled") == Some(&Value::Boolean(false)),
    })
}

fn string<'a>(fields: &'a Table, key: &str) -> Result<Option<&'a str>, String> {
    match fields.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("\"{key}\" is not a string")),
    }
}

fn strings(fields: &Table, key: &str) -> Result<Vec<String>, String> {
    match fields.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("\"{key}\" holds something other than a string"))
            })
            .collect(),
        Some(_) => Err(format!("\"{key}\" is not a list of strings")),
    }
}

fn strings_map(fields: &Table, key: &str) -> Result<BTreeMap<String, String>, String> {
    match fields.get(key) {
        None => Ok(BTreeMap::new()),
        Some(Value::Table(items)) => items
            .iter()
            .map(|(name, value)| {
                value
                    .as_str()
                    .map(|v| (name.clone(), v.to_owned()))
                    .ok_or_else(|| format!("\"{key}.{name}\" is not a string"))
            })
            .collect(),
        Some(_) => Err(format!("\"{key}\" is not a table of strings")),
    }
}

/// `text` with every `[mcp_servers.*]` table replaced by one `codemcp`
/// server running `command` with `args`; the rest of the document is kept
/// as written. Codex passes a server only a few variables of its own
/// environment, so `env_vars` names the ones codemcp's config refers to.
///
/// # Errors
/// When the text is not TOML.
pub fn replace_servers(
    text: &str,
    command: &str,
    args: &[String],
    env_vars: &[String],
) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|err: toml_edit::TomlError| err.to_string())?;
    let mut entry = toml_edit::Table::new();
    entry.insert("command", toml_edit::value(command));
    let mut list = toml_edit::Array::new();
    for arg in args {
        list.push(arg.as_str());
    }
    entry.insert("args", toml_edit::value(list));
    if !env_vars.is_empty() {
        let names: toml_edit::Array = env_vars.iter().map(String::as_str).collect();
        entry.insert("env_vars", toml_edit::value(names));
    }
    let mut servers = toml_edit::Table::new();
    // `[mcp_servers.codemcp]` alone, as Codex writes it, not an empty `[mcp_servers]`.
    servers.set_implicit(true);
    servers.insert("codemcp", toml_edit::Item::Table(entry));
    doc.insert("mcp_servers", toml_edit::Item::Table(servers));
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_variables_become_references_and_literals_stay() {
        let text = "[mcp_servers.api]\nurl = \"https://x/mcp\"\nhttp_headers = { \"X-Team\" = \"core\" }\n\
                    env_http_headers = { \"X-Key\" = \"API_KEY\" }\nbearer_token_env_var = \"TOKEN\"\nenabled = false\n";
        let listing = read(text).expect("reads");
        let server = listing.entries[0].server.clone().expect("usable");
        assert!(server.disabled);
        let Transport::Http { headers, .. } = server.transport else {
            panic!("remote");
        };
        assert_eq!(headers["X-Team"], "core");
        assert_eq!(headers["X-Key"], "${API_KEY}");
        assert_eq!(headers["Authorization"], "Bearer ${TOKEN}");
        assert!(
            read("[mcp_servers.bad]\nargs = []\n")
                .expect("reads")
                .entries[0]
                .server
                .is_err()
        );
        assert!(read("not toml = = 1").is_err());
    }
}
