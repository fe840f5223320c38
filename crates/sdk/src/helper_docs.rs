//! Saved helpers as the SDK shows them (see `crate::helpers`): in
//! `search_tools`, `describe_tool`, the type stub and the description. Only
//! an SDK given helpers ([`super::Sdk::with_helpers`]) shows any of this.

use serde_json::{Value, json};

use super::search::SearchHit;

/// One helper a caller may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperDoc {
    pub name: String,
    /// `name(a: int) -> str`, as written.
    pub signature: String,
    /// The typed `def` line for the stub.
    pub stub: String,
    pub summary: String,
    pub doc: String,
    pub source: String,
    pub version: u32,
    /// The version it replaced, until the helper is deleted.
    pub previous: Option<(u32, String)>,
    /// Published by the operator to every principal (read-only to agents).
    pub shared: bool,
}

/// The gateway's functions for helpers, in the stub.
const STUB_FUNCTIONS: &str = r#"

# Saved helpers: functions kept across sessions (save_helper), callable by name.
def save_helper(fn: Any, description: str | None = None) -> dict[str, Any]:
    """Keep `fn` (a function this snippet defines, with the functions and imports it uses) for later sessions."""
    ...


def list_helpers() -> list[dict[str, Any]]:
    """Your saved helpers and the operator's shared ones: {name, signature, summary, version, shared}."""
    ...


def delete_helper(name: str) -> dict[str, Any]:
    """Delete one of your saved helpers (and its previous version)."""
    ...
"#;

/// The stub's part for helpers.
pub fn stub(helpers: &[HelperDoc]) -> String {
    let mut text = STUB_FUNCTIONS.to_owned();
    for helper in helpers {
        let doc = helper.summary.replace('\\', "\\\\").replace('"', "'");
        let stub = helper.stub.trim_end_matches("...").trim_end();
        text.push_str(&format!("\n\n{stub}\n    \"\"\"{doc}\"\"\"\n    ...\n"));
    }
    text
}

/// The hits for `query`: helpers whose name, summary or docstring hold one
/// of its words (every helper for an empty query).
pub fn search(helpers: &[HelperDoc], query: &str) -> Vec<SearchHit> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_lowercase)
        .collect();
    helpers
        .iter()
        .filter(|h| {
            let text = format!("{} {} {}", h.name, h.summary, h.doc).to_lowercase();
            words.is_empty() || words.iter().any(|w| text.contains(w.as_str()))
        })
        .map(|h| SearchHit {
            name: h.name.clone(),
            signature: h.signature.clone(),
            summary: format!("saved helper: {}", h.summary),
        })
        .collect()
}

/// `describe_tool(name)` of a helper.
pub fn describe(helper: &HelperDoc) -> Value {
    let mut described = json!({
        "name": helper.name,
        "helper": true,
        "shared": helper.shared,
        "signature": helper.signature,
        "description": helper.summary,
        "doc": helper.doc,
        "source": helper.source,
        "version": helper.version,
    });
    if let Some((version, source)) = &helper.previous {
        described["previous"] = json!({"version": version, "source": source});
    }
    described
}

/// The description's line on helpers, at most `room` characters (none
/// when not even the count fits).
pub fn line(helpers: &[HelperDoc], room: usize) -> Option<String> {
    if helpers.is_empty() {
        return None;
    }
    let head = format!(
        "\nSaved helpers ({}; call by name, list_helpers() lists them): ",
        helpers.len()
    );
    let mut text = head.clone();
    for (i, helper) in helpers.iter().enumerate() {
        let item = if i == 0 {
            helper.signature.clone()
        } else {
            format!(", {}", helper.signature)
        };
        if text.len() + item.len() + 2 > room {
            if i == 0 {
                text.push('…');
            } else {
                text.push_str(", …");
            }
            break;
        }
        text.push_str(&item);
    }
    text.push('.');
    (text.len() <= room).then_some(text)
}
