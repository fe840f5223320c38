//! Result shapes that several tools share, named once: the description writes
//! `Content = {content: str}` a single time and `-> Content` on every tool that returns it,
//! and the stub declares one `TypedDict` for them all.

use std::collections::{BTreeMap, BTreeSet};

use super::SdkFunction;
use super::naming::{camel_case, words};
use super::types::TypeCtx;

/// At most this many field names go into a shared type's name.
const NAME_FIELDS: usize = 2;
/// Names the stub's header already uses.
const RESERVED: &[&str] = &["Any", "Literal", "TypedDict", "ToolError"];

/// The compact return hints (`{field: type, ...}`) worth naming, in first-use order.
#[derive(Debug, Default)]
pub struct SharedTypes {
    /// `(name, hint)`, in the order the tools first use them.
    defined: Vec<(String, String)>,
    by_hint: BTreeMap<String, String>,
}

impl SharedTypes {
    /// Names every compact return hint whose repetitions cost more characters than one
    /// definition and one name per use.
    pub fn find(functions: &[SdkFunction]) -> SharedTypes {
        let mut uses: BTreeMap<&str, (usize, &SdkFunction)> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        for f in functions {
            let Some(hint) = f.return_hint.as_deref().filter(|h| h.starts_with('{')) else {
                continue;
            };
            let entry = uses.entry(hint).or_insert_with(|| {
                order.push(hint);
                (0, f)
            });
            entry.0 += 1;
        }
        let mut shared = SharedTypes::default();
        let mut taken: BTreeSet<String> = RESERVED.iter().map(|s| (*s).to_owned()).collect();
        for hint in order {
            let (count, first) = uses[hint];
            let name = unique(base_name(first), &mut taken);
            let (hint_cost, name_cost) = (approx_tokens(hint), approx_tokens(&name));
            // `Name = {...}; ` once, then the name at every use.
            let named = count * name_cost + name_cost + hint_cost + 2;
            if count >= 2 && named < count * hint_cost {
                shared.by_hint.insert(hint.to_owned(), name.clone());
                shared.defined.push((name, hint.to_owned()));
            } else {
                taken.remove(&name);
            }
        }
        shared
    }

    /// The name standing for `hint`, when it is shared.
    pub fn name_of(&self, hint: &str) -> Option<&str> {
        self.by_hint.get(hint).map(String::as_str)
    }

    /// `Content = {content: str}; ...`, or `None` when nothing is shared.
    pub fn definitions(&self) -> Option<String> {
        (!self.defined.is_empty()).then(|| {
            self.defined
                .iter()
                .map(|(name, hint)| format!("{name} = {hint}"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// Every name in use, so that other generated classes avoid them.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.defined.iter().map(|(name, _)| name.as_str())
    }
}

/// `EntitiesRelations` for `{entities: ..., relations: ...}`: the first field names, in
/// CamelCase; `Shape` when they have no usable letters.
fn base_name(f: &SdkFunction) -> String {
    let fields = f
        .output_schema
        .as_ref()
        .and_then(|o| TypeCtx::new(o).object_fields(o, NAME_FIELDS))
        .unwrap_or_default();
    let snake: Vec<String> = fields
        .iter()
        .flat_map(|(field, _, _)| words(field))
        .collect();
    let name = camel_case(&snake.join("_"));
    match name.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => name,
        Some(_) => format!("T{name}"),
        None => "Shape".to_owned(),
    }
}

/// Roughly what a BPE tokenizer makes of a hint: one token per word (split at case
/// changes) and per punctuation character.
fn approx_tokens(text: &str) -> usize {
    let mut tokens = 0;
    let mut prev: Option<char> = None;
    for c in text.chars() {
        let starts_word = c.is_ascii_alphanumeric()
            && prev.is_none_or(|p| {
                !p.is_ascii_alphanumeric() || (p.is_ascii_lowercase() && c.is_ascii_uppercase())
            });
        if starts_word || !(c.is_ascii_alphanumeric() || c.is_whitespace()) {
            tokens += 1;
        }
        prev = Some(c);
    }
    tokens
}

/// `base`, or `base2`, `base3`, … when taken; the result is taken from then on.
pub fn unique(base: String, taken: &mut BTreeSet<String>) -> String {
    let mut name = base.clone();
    let mut n = 2u32;
    while !taken.insert(name.clone()) {
        name = format!("{base}{n}");
        n += 1;
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_estimate() {
        assert_eq!(approx_tokens("{success: bool, message: str}"), 9);
        assert_eq!(approx_tokens("SuccessMessage"), 2);
        assert_eq!(approx_tokens("list[dict]"), 4);
    }
}
