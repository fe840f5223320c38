//! The `mcpServers` family: Claude Desktop, Claude Code, Cursor, Windsurf,
//! Gemini CLI and codemcp itself write `{"mcpServers": {"name": {...}}}`;
//! VS Code writes the same entries under `"servers"`. They differ in where a
//! remote URL goes (`url`, Windsurf's `serverUrl`, Gemini's `httpUrl`) and in
//! how references are spelt ([`refs::Style`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::refs::{self, Style};
use super::{Client, Entry, Listing, Server};
use crate::config::Transport;
use crate::config::file::fields;

const SSE: &str = "SSE transport is not supported by codemcp; only Streamable HTTP URLs are";

/// Reads a whole client file of this family.
///
/// # Errors
/// When the text is not JSON (comments allowed) or the list is not an object.
pub fn read_file(client: Client, text: &str) -> Result<Listing, String> {
    let root = parse_jsonc(text)?;
    let key = if client == Client::Vscode {
        "servers"
    } else {
        "mcpServers"
    };
    let mut listing = Listing {
        entries: read_section(root.get(key), Some(client))?,
        notes: Vec::new(),
    };
    if client == Client::ClaudeCode {
        listing.notes.extend(per_project_note(&root)?);
    }
    Ok(listing)
}

/// Parses JSON with comments and trailing commas into a `Value`; an empty
/// file is an empty object.
///
/// # Errors
/// The parser's message, with its position.
pub fn parse_jsonc(text: &str) -> Result<Value, String> {
    let options = jsonc_parser::ParseOptions::default();
    match jsonc_parser::parse_to_serde_value::<Option<Value>>(text, &options) {
        Ok(Some(value @ Value::Object(_))) => Ok(value),
        Ok(None) => Ok(Value::Object(Map::new())),
        Ok(Some(_)) => Err("the file is not a JSON object".to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

/// The entries of one `mcpServers`-style object; `client` `None` is
/// codemcp's own file.
///
/// # Errors
/// When the section is there but not an object.
pub fn read_section(section: Option<&Value>, client: Option<Client>) -> Result<Vec<Entry>, String> {
    let servers = match section {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err("the server list is not an object".to_owned()),
    };
    Ok(servers
        .iter()
        .map(|(name, value)| {
            let mut notes = Vec::new();
            let server = entry(value, client, &mut notes);
            Entry {
                name: name.clone(),
                server,
                notes,
            }
        })
        .collect())
}

fn style(client: Option<Client>) -> Style {
    match client {
        Some(Client::Vscode | Client::Cursor | Client::Windsurf) => Style::Editor,
        Some(Client::Gemini) => Style::Shell,
        _ => Style::Native,
    }
}

fn entry(value: &Value, client: Option<Client>, notes: &mut Vec<String>) -> Result<Server, String> {
    let Value::Object(fields) = value else {
        return Err("the entry is not an object".to_owned());
    };
    let kind = string(fields, "type")?.map(str::to_ascii_lowercase);
    if kind.as_deref() == Some("sse") {
        return Err(SSE.to_owned());
    }
    if fields.contains_key("envFile") {
        notes.push(
            "its \"envFile\" is not read: set those variables in codemcp's environment".into(),
        );
    }
    let style = style(client);
    let mut text = |s: &str| refs::translate(s, style, notes);
    let transport = if let Some(command) = string(fields, "command")? {
        Transport::Stdio {
            command: text(command),
            args: strings(fields, "args")?.iter().map(|a| text(a)).collect(),
            env: map(fields, "env")?
                .into_iter()
                .map(|(k, v)| (k, text(&v)))
                .collect(),
            cwd: string(fields, "cwd")?.map(|cwd| PathBuf::from(text(cwd))),
        }
    } else {
        let url = remote_url(fields, client, kind.as_deref())?;
        Transport::Http {
            url: text(&url),
            headers: map(fields, "headers")?
                .into_iter()
                .map(|(k, v)| (k, text(&v)))
                .collect(),
        }
    };
    Ok(Server {
        transport,
        disabled: fields.get("disabled") == Some(&Value::Bool(true)),
    })
}

/// The Streamable HTTP URL of a remote entry.
fn remote_url(
    fields: &Map<String, Value>,
    client: Option<Client>,
    kind: Option<&str>,
) -> Result<String, String> {
    let url = match client {
        // Gemini: `httpUrl` is Streamable HTTP, `url` is SSE unless typed http.
        Some(Client::Gemini) => match (string(fields, "httpUrl")?, string(fields, "url")?) {
            (Some(url), _) => Some(url),
            (None, Some(url)) if kind == Some("http") => Some(url),
            (None, Some(_)) => return Err(SSE.to_owned()),
            (None, None) => None,
        },
        Some(Client::Windsurf) => string(fields, "serverUrl")?.or(string(fields, "url")?),
        _ => string(fields, "url")?,
    };
    url.map(str::to_owned)
        .ok_or_else(|| "has neither \"command\" nor a URL".to_owned())
}

/// Claude Code's per-project servers (`projects.<dir>.mcpServers`) belong
/// to one project each; they are named, not imported.
fn per_project_note(root: &Value) -> Result<Option<String>, String> {
    let Some(Value::Object(projects)) = root.get("projects") else {
        return Ok(None);
    };
    let listed: Vec<String> = projects
        .iter()
        .filter_map(|(dir, project)| {
            let names: Vec<&str> = project
                .get("mcpServers")?
                .as_object()?
                .keys()
                .map(String::as_str)
                .collect();
            (!names.is_empty()).then(|| format!("{dir} ({})", names.join(", ")))
        })
        .collect();
    Ok((!listed.is_empty()).then(|| {
        format!(
            "per-project servers are left out (each belongs to one project; copy one by hand if you want it everywhere): {}",
            listed.join("; ")
        )
    }))
}

// An entry's fields are read as codemcp's own loader reads them, with the
// same messages; only absence means empty here.
pub(super) use crate::config::file::fields::str_field as string;

pub(super) fn strings(fields: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    Ok(fields::str_list_field(fields, key)?.unwrap_or_default())
}

pub(super) fn map(
    fields: &Map<String, Value>,
    key: &str,
) -> Result<BTreeMap<String, String>, String> {
    Ok(fields::str_map_field(fields, key)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_of(client: Client, entry: &str) -> Result<String, String> {
        let text = format!("{{\"mcpServers\": {{\"s\": {entry}}}}}");
        let listing = read_file(client, &text).expect("reads");
        match listing.entries[0].server.clone()?.transport {
            Transport::Http { url, .. } => Ok(url),
            Transport::Stdio { .. } => Err("stdio".to_owned()),
        }
    }

    #[test]
    fn each_client_puts_its_remote_url_where_it_documents_it() {
        let url = |c, e| url_of(c, e).expect("a Streamable HTTP URL");
        assert_eq!(
            url(Client::Gemini, r#"{"httpUrl": "https://a/mcp"}"#),
            "https://a/mcp"
        );
        assert_eq!(
            url(
                Client::Gemini,
                r#"{"url": "https://a/mcp", "type": "http"}"#
            ),
            "https://a/mcp"
        );
        assert!(
            url_of(Client::Gemini, r#"{"url": "https://a/sse"}"#).is_err_and(|e| e.contains("SSE"))
        );
        assert_eq!(
            url(Client::Windsurf, r#"{"serverUrl": "https://w/mcp"}"#),
            "https://w/mcp"
        );
        assert_eq!(
            url(Client::Cursor, r#"{"url": "https://c/mcp"}"#),
            "https://c/mcp"
        );
        assert!(
            url_of(
                Client::ClaudeCode,
                r#"{"type": "sse", "url": "https://c/sse"}"#
            )
            .is_err()
        );
        assert!(url_of(Client::Cursor, r#"{"args": []}"#).is_err_and(|e| e.contains("neither")));
    }

    #[test]
    fn a_file_that_is_not_an_object_is_refused_with_its_position() {
        assert!(read_file(Client::Cursor, "[]").is_err());
        let err = read_file(Client::Cursor, "{\"mcpServers\": {").expect_err("unterminated");
        assert!(err.contains("line 1"), "{err}");
        assert!(
            read_file(Client::Cursor, "")
                .expect("empty is no servers")
                .entries
                .is_empty()
        );
    }
}
