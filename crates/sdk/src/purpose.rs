//! What each server is for, in a few words: the first sentence of what it says about itself
//! (its `instructions` or `serverInfo.description`), or else the terms its tools share.

use std::collections::{BTreeMap, BTreeSet};

use super::SdkFunction;
use super::naming::words;
use super::summary::{summary, truncate_words};

/// What one server is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// The server's own words, one sentence.
    Said(String),
    /// Terms its tools share, most telling first (`knowledge graph, entity, relation`).
    Terms(Vec<String>),
}

/// Terms a derived purpose names at most.
const MAX_TERMS: usize = 6;

impl Purpose {
    /// At most `max_chars` characters of it: a sentence cut at a word, terms at a term.
    pub fn fit(&self, max_chars: usize) -> String {
        match self {
            Purpose::Said(_) if max_chars < 8 => String::new(),
            Purpose::Said(text) => truncate_words(text, max_chars),
            Purpose::Terms(terms) => {
                let mut out = String::new();
                for term in terms {
                    let sep = if out.is_empty() { "" } else { ", " };
                    if out.chars().count() + sep.len() + term.chars().count() > max_chars {
                        break;
                    }
                    out.push_str(sep);
                    out.push_str(term);
                }
                out
            }
        }
    }

    /// Its length uncut.
    pub fn len(&self) -> usize {
        self.fit(usize::MAX).chars().count()
    }
}

/// Function words and the verbs and filler every catalog uses: they say nothing about
/// what one server is for.
const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "to",
    "of",
    "for",
    "and",
    "or",
    "in",
    "on",
    "at",
    "by",
    "with",
    "from",
    "into",
    "is",
    "are",
    "be",
    "it",
    "its",
    "this",
    "that",
    "as",
    "if",
    "not",
    "no",
    "all",
    "any",
    "one",
    "new",
    "each",
    "more",
    "multiple",
    "given",
    "specified",
    "specific",
    "provided",
    "using",
    "use",
    "based",
    "via",
    "also",
    "can",
    "may",
    "will",
    "your",
    "you",
    "their",
    "which",
    "when",
    "get",
    "gets",
    "list",
    "lists",
    "create",
    "creates",
    "update",
    "updates",
    "delete",
    "deletes",
    "remove",
    "add",
    "adds",
    "set",
    "sets",
    "search",
    "searches",
    "find",
    "read",
    "reads",
    "write",
    "fetch",
    "return",
    "returns",
    "retrieve",
    "retrieves",
    "show",
    "view",
    "run",
    "make",
    "tool",
    "tools",
    "server",
    "mcp",
    "api",
    "id",
    "ids",
    "name",
    "data",
    "result",
    "results",
    "json",
    "information",
    "details",
    "current",
    "optional",
    "field",
    "fields",
    "see",
    "doc",
    "docs",
    "matching",
    "query",
    "two",
    "other",
    "about",
    "over",
    "only",
    "than",
    "has",
    "have",
    "named",
    "case",
    "value",
    "values",
    "detailed",
    "complete",
    "entire",
    "simple",
    "simulated",
    "single",
    "various",
    "different",
    "whether",
    "including",
    "provide",
    "provides",
    "used",
    "like",
    "etc",
    "should",
    "must",
    "just",
    "up",
    "out",
    "off",
    "existing",
    "object",
    "item",
    "items",
    "type",
    "string",
    "number",
    "parameter",
    "parameters",
    "argument",
    "arguments",
    "input",
    "output",
    "archive",
    "archives",
    "export",
    "exports",
    "import",
    "demonstrates",
    "demonstrate",
    "example",
    "test",
    "testing",
    "every",
    "both",
    "such",
];

fn is_noise(word: &str) -> bool {
    word.len() <= 1
        || STOPWORDS.contains(&word)
        || word.chars().all(|c| c.is_ascii_digit())
        || word
            .strip_prefix('v')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The content words of `text` in order, `None` where a noise word stood (so that
/// phrases do not span it).
fn content(text: &str) -> Vec<Option<String>> {
    words(text)
        .into_iter()
        .map(|w| (!is_noise(&w)).then_some(w))
        .collect()
}

/// Single words and two-word phrases of one tool (its name and summary), each once, with
/// their weight: a term of the name says more than one of the summary.
fn terms_of(f: &SdkFunction, fold: &dyn Fn(&str) -> String) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (text, weight) in [(f.tool.as_str(), 2), (f.summary.as_str(), 1)] {
        let seq: Vec<Option<String>> = content(text)
            .into_iter()
            .map(|w| w.map(|w| fold(&w)))
            .collect();
        for (i, w) in seq.iter().enumerate() {
            let Some(w) = w else { continue };
            let mut note = |term: String| {
                let at = out.entry(term).or_insert(0);
                *at = (*at).max(weight);
            };
            note(w.clone());
            if let Some(Some(next)) = seq.get(i + 1)
                && next != w
            {
                note(format!("{w} {next}"));
            }
        }
    }
    out
}

/// Every server's purpose: what it says (`about`) when it says anything, else the terms its
/// tools share, weighed against the other servers' (a term every server uses tells nothing).
pub fn purposes<'a>(
    by_server: &BTreeMap<&'a str, Vec<&SdkFunction>>,
    about: &BTreeMap<String, String>,
) -> BTreeMap<&'a str, Purpose> {
    let vocabulary: BTreeSet<String> = by_server
        .values()
        .flatten()
        .flat_map(|f| words(&f.tool).into_iter().chain(words(&f.summary)))
        .collect();
    // `invoices` counts as `invoice` when both occur.
    let fold = |w: &str| -> String {
        let candidates = [
            w.strip_suffix("ies").map(|b| format!("{b}y")),
            w.strip_suffix("es").map(str::to_owned),
            w.strip_suffix('s').map(str::to_owned),
        ];
        candidates
            .into_iter()
            .flatten()
            .find(|c| c.len() > 1 && vocabulary.contains(c))
            .unwrap_or_else(|| w.to_owned())
    };
    let per_server: BTreeMap<&str, BTreeMap<String, Mentions>> = by_server
        .iter()
        .map(|(server, fs)| {
            let mut df: BTreeMap<String, Mentions> = BTreeMap::new();
            for f in fs {
                for (term, weight) in terms_of(f, &fold) {
                    let at = df.entry(term).or_default();
                    at.tools += 1;
                    at.weight += weight;
                }
            }
            (*server, df)
        })
        .collect();
    let mut servers_with: BTreeMap<&str, usize> = BTreeMap::new();
    for df in per_server.values() {
        for term in df.keys() {
            *servers_with.entry(term.as_str()).or_default() += 1;
        }
    }
    by_server
        .iter()
        .map(|(server, fs)| {
            let said = about.get(*server).and_then(|text| said(text));
            let purpose = match said {
                Some(s) => Purpose::Said(s),
                None => Purpose::Terms(derived(
                    server,
                    fs.len(),
                    &per_server[server],
                    &servers_with,
                    by_server.len(),
                )),
            };
            (*server, purpose)
        })
        .collect()
}

/// The first sentence of what a server says about itself, past Markdown headings; `None`
/// when it is about the text rather than the server ("These instructions are written for…").
fn said(text: &str) -> Option<String> {
    let prose: Vec<&str> = text
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !(l.starts_with('#') || l.starts_with("---") || l.starts_with("==="))
        })
        .collect();
    let sentence = summary(&prose.join("\n"));
    let sentence = sentence.trim_end_matches('.');
    let lower = sentence.to_lowercase();
    let meta = lower.contains("instruction") || lower.starts_with("audience");
    (!sentence.is_empty() && !meta).then(|| sentence.to_owned())
}

/// How one server's tools use a term: in how many, and how prominently in all.
#[derive(Debug, Default, Clone, Copy)]
struct Mentions {
    tools: usize,
    weight: usize,
}

/// The most telling terms of one server's tools: used by many of its tools, by few other
/// servers; phrases before their words.
fn derived(
    server: &str,
    tools: usize,
    df: &BTreeMap<String, Mentions>,
    servers_with: &BTreeMap<&str, usize>,
    servers: usize,
) -> Vec<String> {
    let own: BTreeSet<String> = words(server).into_iter().collect();
    let min_df = if tools >= 4 { 2 } else { 1 };
    let score = |term: &str, n: usize| -> f64 {
        let spread = servers_with.get(term).copied().unwrap_or(1) as f64;
        let idf = ((servers as f64 + 1.0) / (spread + 0.5)).ln() + 1.0;
        let phrase = if term.contains(' ') { 1.5 } else { 1.0 };
        n as f64 * idf * phrase
    };
    let mut ranked: Vec<(&String, f64)> = df
        .iter()
        .filter(|(term, _)| !term.split(' ').any(|w| own.contains(w)))
        .filter(|(_, m)| m.tools >= min_df)
        .map(|(term, m)| (term, score(term, m.weight)))
        .collect();
    if ranked.is_empty() && min_df > 1 {
        return derived(server, 1, df, servers_with, servers);
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut chosen: Vec<String> = Vec::new();
    for (term, _) in ranked {
        let parts: Vec<&str> = term.split(' ').collect();
        let covered = chosen.iter().any(|c| {
            let theirs: Vec<&str> = c.split(' ').collect();
            parts.iter().any(|p| theirs.contains(p))
        });
        if !covered {
            chosen.push(term.clone());
        }
        if chosen.len() == MAX_TERMS {
            break;
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_server_says_skips_headings_and_text_about_itself() {
        assert_eq!(
            said("# Postgres\n\nRead-only access to a database. Use query().").as_deref(),
            Some("Read-only access to a database")
        );
        assert_eq!(
            said(
                "# Everything Server – Server Instructions\n\nAudience: These instructions are written for an LLM."
            ),
            None
        );
        assert_eq!(said("  \n"), None);
    }

    #[test]
    fn terms_fit_whole_and_sentences_at_a_word() {
        let terms = Purpose::Terms(vec!["knowledge graph".into(), "entity".into()]);
        assert_eq!(terms.fit(100), "knowledge graph, entity");
        assert_eq!(terms.fit(20), "knowledge graph");
        assert_eq!(terms.fit(5), "");
        let said = Purpose::Said("Read-only access to a PostgreSQL database".into());
        assert_eq!(said.fit(22), "Read-only access to…");
        assert_eq!(said.fit(4), "");
    }
}
