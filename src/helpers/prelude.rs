//! The helpers a snippet uses, defined before it runs: their sources go in
//! front of the snippet, and the lines the engine reports are moved back so
//! they point into the snippet as the agent wrote it.

use std::collections::{BTreeMap, BTreeSet};

use super::record::Helper;
pub use codemcp_exec::helpers::Prelude;

/// The prelude of `code`: every helper in `helpers` whose name the code
/// mentions, and the helpers those call; `None` when it mentions none.
pub fn prelude(code: &str, helpers: &BTreeMap<String, Helper>) -> Option<Prelude> {
    let mut wanted: Vec<&str> = helpers
        .keys()
        .filter(|name| mentions(code, name))
        .map(String::as_str)
        .collect();
    let mut chosen: BTreeSet<&str> = BTreeSet::new();
    while let Some(name) = wanted.pop() {
        let Some(helper) = helpers.get(name) else {
            continue;
        };
        if chosen.insert(name) {
            wanted.extend(helper.uses_helpers.iter().map(String::as_str));
        }
    }
    if chosen.is_empty() {
        return None;
    }
    let mut text = String::new();
    for name in &chosen {
        if let Some(helper) = helpers.get(*name) {
            text.push_str(&helper.source);
            if !helper.source.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    let lines = text.matches('\n').count();
    Some(Prelude {
        text,
        lines,
        names: chosen.iter().map(|n| (*n).to_owned()).collect(),
    })
}

/// Whether `name` occurs in `code` as a whole identifier.
pub fn mentions(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}
