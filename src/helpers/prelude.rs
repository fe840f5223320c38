//! The helpers a snippet uses, defined before it runs: their sources go in
//! front of the snippet, and the lines the engine reports are moved back so
//! they point into the snippet as the agent wrote it.

use std::collections::{BTreeMap, BTreeSet};

use super::record::Helper;
use crate::exec::Execution;

/// The definitions put in front of one snippet.
#[derive(Debug, Clone)]
pub struct Prelude {
    pub text: String,
    /// How many lines it adds before the snippet's first.
    pub lines: usize,
    /// The helpers it defines.
    pub names: Vec<String>,
}

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

impl Prelude {
    /// `execution`'s error as if the snippet had run alone: `line N` counts
    /// from the snippet's first line; a line inside a helper is named so.
    pub fn fix_lines(&self, execution: &mut Execution) {
        let Some(error) = execution.error.as_mut() else {
            return;
        };
        error.message = self.fix(&error.message);
        error.traceback = error.traceback.as_deref().map(|t| self.fix(t));
    }

    fn fix(&self, text: &str) -> String {
        const WORD: &str = "line ";
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(WORD) {
            let after = &rest[at + WORD.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let word_start = at == 0 || !rest[..at].ends_with(|c: char| c.is_alphanumeric());
            out.push_str(&rest[..at]);
            match after[..digits].parse::<usize>() {
                Ok(n) if word_start => {
                    if n > self.lines {
                        out.push_str(&format!("line {}", n - self.lines));
                    } else {
                        out.push_str(&format!("helper line {n}"));
                    }
                }
                _ => out.push_str(&rest[at..at + WORD.len() + digits]),
            }
            rest = &after[digits..];
        }
        out.push_str(rest);
        out
    }
}
