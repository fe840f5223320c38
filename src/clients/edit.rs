//! Changing JSON-with-comments files in place: the concrete syntax tree of
//! `jsonc-parser` is edited, so every comment, blank line and indent the
//! user wrote stays where it was (nothing is re-serialized). The backup and
//! the atomic replace around it are `config::write`'s.

use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use super::ClientError;

/// Which layout a codemcp config file uses for its servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    McpServers,
    OpenCode,
}

fn parse(text: &str) -> Result<(CstRootNode, CstObject), String> {
    let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|err| err.to_string())?;
    if root
        .value()
        .is_some_and(|value| value.as_object().is_none())
    {
        return Err("the file is not a JSON object".to_owned());
    }
    let object = root.object_value_or_set();
    Ok((root, object))
}

/// The layout new entries go into: `mcpServers` when the file has it, else
/// opencode's `mcp` when it has that, else a new `mcpServers`.
///
/// # Errors
/// When the text is not JSON with comments.
pub fn layout(text: &str) -> Result<Layout, String> {
    let (_, object) = parse(text)?;
    Ok(
        if object.get("mcpServers").is_none() && object.get("mcp").is_some() {
            Layout::OpenCode
        } else {
            Layout::McpServers
        },
    )
}

/// `text` with `entries` appended to its server list (in [`layout`]).
///
/// # Errors
/// When the text is not JSON with comments.
pub fn append_servers(text: &str, entries: &[(String, Value)]) -> Result<String, String> {
    let key = match layout(text)? {
        Layout::McpServers => "mcpServers",
        Layout::OpenCode => "mcp",
    };
    if entries.is_empty() {
        return Ok(text.to_owned());
    }
    let (root, object) = parse(text)?;
    let section = object.object_value_or_set(key);
    // One placeholder goes in through the syntax tree (which places it and
    // its commas as the file's style wants), then the entries replace its
    // text. Appending each entry to the tree costs the section's size every
    // time: 40,000 entries took minutes.
    let marker = format!(
        "codemcp-import-{:016x}",
        u64::from_le_bytes(codemcp_store::random_bytes::<8>())
    );
    section.append(&marker, CstInputValue::Null);
    let out = root.to_string();
    let placeholder = format!("\"{marker}\": null");
    let Some(at) = out.find(&placeholder) else {
        return Err("the server list could not be edited".to_owned());
    };
    let line_start = out[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &out[line_start..at];
    let text = if indent.chars().all(char::is_whitespace) {
        entries_text(entries, indent, true)
    } else {
        entries_text(entries, "", false)
    };
    Ok(format!(
        "{}{text}{}",
        &out[..at],
        &out[at + placeholder.len()..]
    ))
}

/// `"name": value` for each entry, separated by commas: one per line at
/// `indent` (values pretty-printed under it), or on one line.
fn entries_text(entries: &[(String, Value)], indent: &str, multiline: bool) -> String {
    let separator = if multiline {
        format!(",\n{indent}")
    } else {
        ", ".to_owned()
    };
    let value_text = |value: &Value| {
        if multiline {
            let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
            pretty.replace('\n', &format!("\n{indent}"))
        } else {
            value.to_string()
        }
    };
    entries
        .iter()
        .map(|(name, value)| format!("{}: {}", Value::from(name.as_str()), value_text(value)))
        .collect::<Vec<_>>()
        .join(&separator)
}

/// `text` with the object at `key` replaced by `{name: value}`.
///
/// # Errors
/// When the text is not JSON with comments.
pub fn replace_servers(text: &str, key: &str, name: &str, value: &Value) -> Result<String, String> {
    let (root, object) = parse(text)?;
    let list = CstInputValue::Object(vec![(name.to_owned(), input(value))]);
    match object.get(key) {
        Some(prop) => prop.set_value(list),
        None => {
            object.append(key, list);
        }
    }
    Ok(root.to_string())
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(fields) => {
            CstInputValue::Object(fields.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

pub use crate::config::write::backup_path;

/// Copies `path` to its backup, byte for byte (see [`crate::config::write`]).
///
/// # Errors
/// When the copy fails.
pub fn back_up(path: &Path) -> Result<PathBuf, ClientError> {
    crate::config::write::back_up(path)
        .map_err(|(path, source)| ClientError::Write { path, source })
}

/// Replaces `path` with `text` at once (see [`crate::config::write`]).
///
/// # Errors
/// When the directory cannot be created or written.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), ClientError> {
    crate::config::write::replace_atomically(path, text).map_err(|source| ClientError::Write {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn appending_keeps_comments_and_layout() {
        let text = "{\n  // my servers\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}, // first\n  },\n}\n";
        let out = append_servers(text, &[("b".into(), json!({"command": "y"}))]).expect("edits");
        assert!(out.starts_with("{\n  // my servers\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}, // first\n"), "{out}");
        assert!(out.contains("\"b\": {"), "{out}");
        let back = crate::clients::mcp_servers::parse_jsonc(&out).expect("still JSONC");
        assert_eq!(back["mcpServers"]["b"]["command"], "y");
    }

    #[test]
    fn an_opencode_layout_file_gets_opencode_entries_and_an_empty_one_mcp_servers() {
        assert_eq!(layout("{\"mcp\": {}}"), Ok(Layout::OpenCode));
        assert_eq!(layout("{}"), Ok(Layout::McpServers));
        assert_eq!(layout(""), Ok(Layout::McpServers));
        assert!(layout("[1]").is_err());
    }

    #[test]
    fn replacing_the_list_keeps_the_rest() {
        let text = "{\n  \"theme\": \"dark\", // mine\n  \"mcpServers\": {\"a\": {\"command\": \"x\"}}\n}\n";
        let out = replace_servers(
            text,
            "mcpServers",
            "codemcp",
            &json!({"command": "/bin/codemcp"}),
        )
        .expect("edits");
        assert!(out.contains("\"theme\": \"dark\", // mine"), "{out}");
        let back = crate::clients::mcp_servers::parse_jsonc(&out).expect("still JSONC");
        assert_eq!(
            back["mcpServers"],
            json!({"codemcp": {"command": "/bin/codemcp"}})
        );
    }
}
