//! Ranking tools for `search_tools(query)`: BM25 over four weighted fields (tool name, server,
//! description, parameters) with light stemming, a few synonyms and prefix matches, plus a
//! win for queries that spell a function's name.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::Serialize;

use super::SdkFunction;
use super::naming::words;

/// One search result, as `search_tools` returns it to the snippet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    pub name: String,
    pub signature: String,
    pub summary: String,
}

const NAME: usize = 0;
const SERVER: usize = 1;
const DESCRIPTION: usize = 2;
const PARAMS: usize = 3;
const FIELD_WEIGHTS: [f64; 4] = [3.0, 1.5, 1.0, 0.6];
/// Tokens kept per field: long descriptions say their point early.
const MAX_FIELD_TOKENS: usize = 400;
/// Query words beyond this are ignored: a query is a few words, not a document.
const MAX_QUERY_TERMS: usize = 24;
const K1: f64 = 1.2;
const B: f64 = 0.75;
const SYNONYM_WEIGHT: f64 = 0.6;
const PREFIX_WEIGHT: f64 = 0.4;
const EXACT_NAME_BONUS: f64 = 1e6;
const PREFIX_NAME_BONUS: f64 = 1e3;

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "to", "of", "for", "and", "or", "in", "on", "at", "by", "with", "from",
    "into", "is", "are", "be", "was", "it", "its", "this", "that", "these", "those", "me", "my",
    "i", "you", "your", "we", "our", "us", "what", "which", "who", "whom", "how", "do", "doe",
    "can", "could", "would", "should", "please", "want", "need", "some", "any", "s", "t", "about",
    "give", "tell", "as", "if", "so", "then", "there", "here", "than", "via",
];

/// Words that mean the same thing in tool catalogs; matched at a discount.
const SYNONYMS: &[&[&str]] = &[
    &[
        "get", "fetch", "retrieve", "read", "obtain", "load", "show", "view",
    ],
    &["list", "enumerate", "browse", "all"],
    &["search", "find", "query", "lookup", "look", "locate"],
    &["create", "add", "new", "make", "insert", "open", "schedule"],
    &[
        "delete", "remove", "drop", "destroy", "erase", "trash", "purge",
    ],
    &[
        "update", "edit", "modify", "change", "patch", "set", "rename",
    ],
    &["send", "post", "submit", "dispatch", "deliver"],
    &["message", "msg", "chat", "dm"],
    &["email", "mail", "inbox", "gmail"],
    &["repo", "repository", "project"],
    &["doc", "document", "docs", "page"],
    &["dir", "directory", "folder"],
    &["image", "img", "picture", "photo"],
    &["user", "account", "member", "person", "people", "profile"],
    &["issue", "ticket", "bug"],
    &["pr", "pull", "merge"],
    &["calendar", "event", "meeting", "schedule", "appointment"],
    &["weather", "forecast", "temperature", "rain", "snow", "wind"],
    &["run", "execute", "exec", "start", "launch", "trigger"],
    &["stop", "cancel", "kill", "terminate", "abort", "halt"],
    &["download", "export"],
    &["write", "save", "store"],
    &["upload", "import", "attach"],
    &["stats", "statistics", "metrics", "analytics", "usage"],
    &[
        "config",
        "configuration",
        "settings",
        "preferences",
        "options",
    ],
    &["log", "logs", "logging"],
    &["comment", "reply", "respond"],
    &["notify", "notification", "alert"],
    &["pay", "payment", "charge", "refund"],
    &["customer", "client", "buyer"],
    &["order", "purchase"],
    &["product", "item", "sku"],
    &["database", "db", "sql", "table"],
    &["booking", "book", "reserve", "reservation"],
    &["task", "todo"],
    &["note", "memo"],
    &["contact", "address"],
    &["route", "direction", "directions", "navigate"],
    &["translate", "translation"],
    &["summarize", "summary"],
    &["convert", "transform"],
    &["price", "cost", "quote"],
    &["song", "track", "music"],
    &["url", "link", "web", "website"],
    &["count", "total", "number", "many"],
    &["sum", "add", "total"],
    &["time", "clock"],
    &["file", "files"],
    &["stock", "ticker", "share"],
    &["currency", "exchange", "fx"],
    &["coupon", "discount", "promo", "voucher"],
    &["shipment", "package", "parcel", "delivery", "shipping"],
    &["track", "trace", "where"],
    &["employee", "staff", "hr", "personnel", "worker"],
    &["vacation", "holiday", "leave", "pto", "off"],
    &["mute", "silence", "snooze", "quiet"],
];

#[derive(Debug, Clone)]
struct Doc {
    fields: [Vec<String>; 4],
    py_name: String,
    tool_name: String,
}

/// The search index over one catalog, built once per `Sdk`.
#[derive(Debug, Clone)]
pub struct Index {
    docs: Vec<Doc>,
    doc_freq: HashMap<String, u32>,
    avg_len: [f64; 4],
}

/// One query word and the tokens that count as matching it.
struct Term {
    token: String,
    variants: Vec<(String, f64)>,
}

impl Index {
    pub fn new(functions: &[SdkFunction]) -> Index {
        let docs: Vec<Doc> = functions.iter().map(Doc::new).collect();
        let mut doc_freq: HashMap<String, u32> = HashMap::new();
        let mut sums = [0f64; 4];
        for doc in &docs {
            let distinct: HashSet<&String> = doc.fields.iter().flatten().collect();
            for token in distinct {
                *doc_freq.entry(token.clone()).or_default() += 1;
            }
            for (sum, field) in sums.iter_mut().zip(&doc.fields) {
                *sum += field.len() as f64;
            }
        }
        let n = docs.len().max(1) as f64;
        let avg_len = sums.map(|s| (s / n).max(1.0));
        Index {
            docs,
            doc_freq,
            avg_len,
        }
    }

    /// Indices into the functions, best first; ties broken by name (the functions' order).
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        if query.trim().is_empty() {
            return (0..self.docs.len().min(limit)).collect();
        }
        let terms = query_terms(query);
        let whole = words(query).join("_");
        let mut scored: Vec<(f64, usize)> = self
            .docs
            .iter()
            .enumerate()
            .map(|(i, doc)| (self.score(doc, &terms, &whole), i))
            .filter(|(score, _)| *score > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(limit).map(|(_, i)| i).collect()
    }

    fn idf(&self, token: &str) -> f64 {
        let n = self.docs.len() as f64;
        let df = f64::from(self.doc_freq.get(token).copied().unwrap_or(0));
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    fn score(&self, doc: &Doc, terms: &[Term], whole: &str) -> f64 {
        let mut total = 0.0;
        let mut matched = 0.0;
        let mut possible = 0.0;
        for term in terms {
            let weight = self.idf(&term.token);
            possible += weight;
            let mut best = term
                .variants
                .iter()
                .map(|(token, w)| w * self.idf(token) * self.fields_bm25(doc, |t| t == token))
                .fold(0.0, f64::max);
            if best == 0.0 && term.token.len() >= 3 {
                let related = |t: &str| {
                    t.starts_with(&term.token) || (t.len() >= 3 && term.token.starts_with(t))
                };
                best = PREFIX_WEIGHT * weight * self.fields_bm25(doc, related);
            }
            if best > 0.0 {
                matched += weight;
                total += best;
            }
        }
        let coverage = if possible > 0.0 {
            matched / possible
        } else {
            0.0
        };
        total * (0.3 + 0.7 * coverage * coverage) + name_bonus(doc, whole)
    }

    /// Σ over fields of weight × BM25 term-frequency part for tokens matching `is_match`.
    fn fields_bm25(&self, doc: &Doc, is_match: impl Fn(&str) -> bool) -> f64 {
        doc.fields
            .iter()
            .zip(FIELD_WEIGHTS)
            .zip(self.avg_len)
            .map(|((field, weight), avg)| {
                let tf = field.iter().filter(|t| is_match(t)).count() as f64;
                if tf == 0.0 {
                    return 0.0;
                }
                let norm = K1 * (1.0 - B + B * field.len() as f64 / avg);
                weight * tf * (K1 + 1.0) / (tf + norm)
            })
            .sum()
    }
}

fn name_bonus(doc: &Doc, whole: &str) -> f64 {
    if whole.is_empty() {
        0.0
    } else if doc.py_name == whole || doc.tool_name == whole {
        EXACT_NAME_BONUS
    } else if whole.len() >= 3 && whole.contains('_') && doc.py_name.starts_with(whole) {
        PREFIX_NAME_BONUS
    } else {
        0.0
    }
}

impl Doc {
    fn new(f: &SdkFunction) -> Doc {
        let mut fields: [Vec<String>; 4] = Default::default();
        fields[NAME] = tokens(&f.tool, false);
        fields[SERVER] = tokens(&f.server, false);
        fields[DESCRIPTION] = tokens(&f.description, true);
        let params: Vec<String> = f
            .params
            .iter()
            .flat_map(|p| {
                tokens(&p.wire_name, false)
                    .into_iter()
                    .chain(tokens(&p.description, true))
                    // Enum values (`Literal['active', 'expired']`) name states a query may ask for.
                    .chain(tokens(&p.type_hint, true))
            })
            .take(MAX_FIELD_TOKENS)
            .collect();
        fields[PARAMS] = params;
        Doc {
            fields,
            py_name: f.py_name.clone(),
            tool_name: words(&f.tool).join("_"),
        }
    }
}

/// Lower-case stemmed words of `text` (camelCase split), at most `MAX_FIELD_TOKENS`.
fn tokens(text: &str, drop_stopwords: bool) -> Vec<String> {
    let head: String = text.chars().take(MAX_FIELD_TOKENS * 12).collect();
    words(&head)
        .iter()
        .map(|w| stem(w))
        .filter(|w| !drop_stopwords || !STOPWORDS.contains(&w.as_str()))
        .take(MAX_FIELD_TOKENS)
        .collect()
}

fn query_terms(query: &str) -> Vec<Term> {
    let all = tokens(query, false);
    let mut content: Vec<String> = all
        .iter()
        .filter(|t| !STOPWORDS.contains(&t.as_str()))
        .cloned()
        .collect();
    if content.is_empty() {
        content = all;
    }
    let mut seen = HashSet::new();
    content.retain(|t| seen.insert(t.clone()));
    content.truncate(MAX_QUERY_TERMS);
    content
        .into_iter()
        .map(|token| {
            let mut variants = vec![(token.clone(), 1.0)];
            if let Some(synonyms) = synonyms().get(&token) {
                variants.extend(synonyms.iter().map(|s| (s.clone(), SYNONYM_WEIGHT)));
            }
            Term { token, variants }
        })
        .collect()
}

fn synonyms() -> &'static HashMap<String, Vec<String>> {
    static MAP: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for group in SYNONYMS {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            for word in &stems {
                let entry = map.entry(word.clone()).or_default();
                for other in &stems {
                    if other != word && !entry.contains(other) {
                        entry.push(other.clone());
                    }
                }
            }
        }
        map
    })
}

/// Light suffix stripping so `files`/`file`, `created`/`creating`/`create` meet.
fn stem(word: &str) -> String {
    let mut w = word.to_owned();
    if w.len() <= 3 || !w.is_ascii() {
        return w;
    }
    if let Some(base) = w.strip_suffix("ies").filter(|b| b.len() >= 2) {
        w = format!("{base}y");
    } else if w.ends_with("sses")
        || ["xes", "ches", "shes", "zes"]
            .iter()
            .any(|s| w.ends_with(s))
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !["ss", "us", "is"].iter().any(|s| w.ends_with(s)) {
        w.truncate(w.len() - 1);
    }
    if let Some(base) = w.strip_suffix("ing").filter(|b| b.len() >= 4) {
        w = undouble(base);
    } else if let Some(base) = w.strip_suffix("ed").filter(|b| b.len() >= 3) {
        w = undouble(base);
    }
    if w.len() >= 4 && w.ends_with('e') {
        w.truncate(w.len() - 1);
    }
    w
}

/// `runn` → `run`, `stopp` → `stop`; but `fill`, `pass` keep theirs.
fn undouble(base: &str) -> String {
    let bytes = base.as_bytes();
    match bytes {
        [.., a, b] if a == b && !b"lsz".contains(b) => base[..base.len() - 1].to_owned(),
        _ => base.to_owned(),
    }
}

#[cfg(test)]
mod tests;
