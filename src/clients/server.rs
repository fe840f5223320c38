//! One server entry as read from a client's file, in codemcp's terms, and
//! the codemcp config entry written for it.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

pub use crate::config::Transport;

/// A server a client runs, with every environment reference kept as a
/// reference (in codemcp's syntax) and every literal value as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub transport: Transport,
    /// The client had it switched off; it is imported switched off.
    pub disabled: bool,
}

/// One named entry of a client's list; `server` is `Err` with the reason
/// when codemcp cannot run it (an SSE URL, a malformed entry, ...).
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub server: Result<Server, String>,
    /// What was changed on the way in (a VS Code input read from the
    /// environment instead, an ignored `envFile`, ...).
    pub notes: Vec<String>,
}

/// What a client's file holds.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub entries: Vec<Entry>,
    /// About the file as a whole (per-project servers left out, ...).
    pub notes: Vec<String>,
}

impl Server {
    /// The entry in the `mcpServers` layout that codemcp's loader reads.
    #[must_use]
    pub fn to_mcp_servers(&self) -> Value {
        let mut entry = Map::new();
        match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                entry.insert("command".into(), json!(command));
                insert_unless_empty(&mut entry, "args", args);
                insert_unless_empty(&mut entry, "env", env);
                if let Some(cwd) = cwd {
                    entry.insert("cwd".into(), json!(cwd.to_string_lossy()));
                }
            }
            Transport::Http { url, headers } => {
                entry.insert("type".into(), json!("http"));
                entry.insert("url".into(), json!(url));
                insert_unless_empty(&mut entry, "headers", headers);
            }
        }
        if self.disabled {
            entry.insert("disabled".into(), json!(true));
        }
        Value::Object(entry)
    }

    /// The entry in opencode's `mcp` layout, for a codemcp config that
    /// uses only that one.
    #[must_use]
    pub fn to_opencode(&self) -> Value {
        let mut entry = Map::new();
        match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                entry.insert("type".into(), json!("local"));
                let argv: Vec<&str> = std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect();
                entry.insert("command".into(), json!(argv));
                insert_unless_empty(&mut entry, "environment", env);
                if let Some(cwd) = cwd {
                    entry.insert("cwd".into(), json!(cwd.to_string_lossy()));
                }
            }
            Transport::Http { url, headers } => {
                entry.insert("type".into(), json!("remote"));
                entry.insert("url".into(), json!(url));
                insert_unless_empty(&mut entry, "headers", headers);
            }
        }
        if self.disabled {
            entry.insert("enabled".into(), json!(false));
        }
        Value::Object(entry)
    }

    /// Every environment variable its strings refer to.
    #[must_use]
    pub fn variables(&self) -> BTreeSet<String> {
        let texts: Vec<&String> = match &self.transport {
            Transport::Stdio {
                command, args, env, ..
            } => std::iter::once(command)
                .chain(args)
                .chain(env.values())
                .collect(),
            Transport::Http { url, headers } => {
                std::iter::once(url).chain(headers.values()).collect()
            }
        };
        texts
            .into_iter()
            .flat_map(|text| super::refs::variables(text))
            .collect()
    }

    /// One line for the user: the command or URL, then the names of its
    /// variables and headers. A value is shown only when it holds an
    /// environment reference; a literal one (often a secret) is not printed.
    #[must_use]
    pub fn summary(&self) -> String {
        let (what, values, label) = match &self.transport {
            Transport::Stdio {
                command, args, env, ..
            } => {
                let line = std::iter::once(command)
                    .chain(args)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(" ");
                (line, env, "env")
            }
            Transport::Http { url, headers } => (url.clone(), headers, "headers"),
        };
        let mut out = what;
        if !values.is_empty() {
            let shown: Vec<String> = values
                .iter()
                .map(|(name, value)| {
                    if super::refs::has_reference(value) {
                        format!("{name}={value}")
                    } else {
                        format!("{name}=<literal>")
                    }
                })
                .collect();
            out.push_str(&format!("  {label}: {}", shown.join(", ")));
        }
        if self.disabled {
            out.push_str("  (disabled)");
        }
        out
    }
}

/// Puts `value` under `key` unless it is an empty list or map: the client
/// formats leave empty `args`, `env` and `headers` out.
fn insert_unless_empty(entry: &mut Map<String, Value>, key: &str, value: impl serde::Serialize) {
    let value = json!(value);
    let empty = match &value {
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    };
    if !empty {
        entry.insert(key.into(), value);
    }
}
