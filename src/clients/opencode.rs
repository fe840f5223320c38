//! opencode: `{"mcp": {"name": {"type": "local", "command": ["cmd", "arg"],
//! "environment": {...}, "enabled": true}}}` or `{"type": "remote", "url":
//! ..., "headers": {...}}` in `~/.config/opencode/opencode.json[c]`. Its
//! `{env:VAR}` references are codemcp's too; `{file:path}` is not.

use serde_json::Value;

use super::mcp_servers::{map, parse_jsonc, string, strings};
use super::{Entry, Listing, Server};
use crate::config::Transport;

/// Reads opencode's config file.
///
/// # Errors
/// When the text is not JSON (comments allowed) or `mcp` is not an object.
pub fn read_file(text: &str) -> Result<Listing, String> {
    let root = parse_jsonc(text)?;
    Ok(Listing {
        entries: read_section(root.get("mcp"))?,
        notes: Vec::new(),
    })
}

/// The entries of an `mcp` object (opencode's, or codemcp's own in that layout).
///
/// # Errors
/// When the section is there but not an object.
pub fn read_section(section: Option<&Value>) -> Result<Vec<Entry>, String> {
    let servers = match section {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err("\"mcp\" is not an object".to_owned()),
    };
    Ok(servers
        .iter()
        .map(|(name, value)| {
            let server = entry(value);
            let notes = match &server {
                Ok(server) if mentions_file(server) => vec![
                    "a {file:...} reference is not expanded by codemcp; kept as written".to_owned(),
                ],
                _ => Vec::new(),
            };
            Entry {
                name: name.clone(),
                server,
                notes,
            }
        })
        .collect())
}

fn entry(value: &Value) -> Result<Server, String> {
    let Value::Object(fields) = value else {
        return Err("the entry is not an object".to_owned());
    };
    let remote = match string(fields, "type")? {
        Some("remote") => true,
        Some("local") => false,
        Some(other) => return Err(format!("unknown \"type\" \"{other}\"")),
        None => fields.contains_key("url"),
    };
    let transport = if remote {
        Transport::Http {
            url: string(fields, "url")?
                .ok_or("a remote entry without \"url\"")?
                .to_owned(),
            headers: map(fields, "headers")?,
        }
    } else {
        let argv = match fields.get("command") {
            Some(Value::String(command)) => vec![command.clone()],
            _ => strings(fields, "command")?,
        };
        let Some((command, args)) = argv.split_first() else {
            return Err("a local entry without \"command\"".to_owned());
        };
        Transport::Stdio {
            command: command.clone(),
            args: args.to_vec(),
            env: map(fields, "environment")?,
            cwd: string(fields, "cwd")?.map(Into::into),
        }
    };
    Ok(Server {
        transport,
        disabled: fields.get("enabled") == Some(&Value::Bool(false)),
    })
}

fn mentions_file(server: &Server) -> bool {
    let values: Vec<&String> = match &server.transport {
        Transport::Stdio {
            command, args, env, ..
        } => std::iter::once(command)
            .chain(args)
            .chain(env.values())
            .collect(),
        Transport::Http { url, headers } => std::iter::once(url).chain(headers.values()).collect(),
    };
    values.iter().any(|v| v.contains("{file:"))
}
