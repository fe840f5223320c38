//! The `execute_python` description: the calling contract, then one line per tool, or a
//! compact index of the tools when that would not fit in the budget.

use std::collections::{BTreeMap, BTreeSet};

use super::SdkFunction;
use super::naming::words;
use super::shared_types::SharedTypes;
use super::summary::{one_line, truncate_words};

/// Longer defaults are `...` in the description's one-line signatures (the stub and
/// `describe_tool` show them in full).
const LINE_DEFAULT_CHARS: usize = 24;
const SERVER_LABEL_CHARS: usize = 60;

const INTRO: &str = "\
Run Python (a sandboxed subset). Each function below calls an upstream MCP tool (keyword or positional arguments) \
and returns its structured result as a dict if it has one, else its text as a str; a failed call raises ToolError (str(e) is the upstream's message).
Calls are synchronous; `await asyncio.gather(f(...), g(...))` runs them concurrently.
You see only what you print plus the last expression (or a variable `result`): filter and aggregate in Python.
State persists across calls: each result ends with [session: ID]; pass that ID back as the `session` argument to continue. search_tools(query, limit=10) finds tools; describe_tool(name) gives a tool's docs and schemas.
Resources and prompts: list_resources(server=None), read_resource(server, uri) (str; binary: {mimeType, base64}), list_prompts(server=None), get_prompt(server, name, **arguments).";

const INTRO_NO_TOOLS: &str = "\
Run Python code. No upstream tools are connected right now; plain Python still runs.
The snippet's result is its last expression, or a variable named `result`, plus anything printed.
Variables, functions and imports persist across calls: each result ends with [session: ID]; pass that ID back as the `session` argument to continue.";

const INDEX_TAIL: &str = "Signatures are omitted to save space: use search_tools(query) to find a tool and describe_tool(name) for its signature.";

/// `dict[str, Any]` → `dict` and `list[Any]` → `list` outside string literals: the same
/// types in fewer tokens, for the description (the stub keeps the long forms).
fn terse(hint: &str) -> String {
    const SHORTER: &[(&str, &str)] = &[("dict[str, Any]", "dict"), ("list[Any]", "list")];
    let mut out = String::with_capacity(hint.len());
    let mut quote: Option<char> = None;
    let mut rest = hint;
    while let Some(c) = rest.chars().next() {
        if quote.is_none()
            && let Some((long, short)) = SHORTER.iter().find(|(long, _)| rest.starts_with(long))
        {
            out.push_str(short);
            rest = &rest[long.len()..];
            continue;
        }
        let mut step = c.len_utf8();
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (Some(_), '\\') => step += rest[1..].chars().next().map_or(0, char::len_utf8),
            _ => {}
        }
        out.push_str(&rest[..step]);
        rest = &rest[step..];
    }
    out
}

/// One line per tool. `-> str` is left out: the intro says a call without a declared result
/// returns the text.
fn tool_line(f: &SdkFunction, shared: &SharedTypes) -> String {
    let call = f.call_signature(LINE_DEFAULT_CHARS);
    let signature = match &f.return_hint {
        Some(returns) => {
            let returns = shared.name_of(returns).unwrap_or(returns);
            terse(&format!("{call} -> {returns}"))
        }
        None => terse(&call),
    };
    if f.summary.is_empty() {
        signature
    } else {
        format!("{signature}  # {}", f.summary)
    }
}

/// The `execute_python` description: the calling contract, then one line per tool, or a
/// compact per-server index of names when that would not fit in `budget`.
pub fn description(functions: &[SdkFunction], budget: usize) -> String {
    if functions.is_empty() {
        return INTRO_NO_TOOLS.to_owned();
    }
    let shared = SharedTypes::find(functions);
    let lines: Vec<String> = functions.iter().map(|f| tool_line(f, &shared)).collect();
    let types = shared
        .definitions()
        .map(|d| format!("\n\nResult types (dicts): {}", terse(&d)))
        .unwrap_or_default();
    let full = format!(
        "{INTRO}{types}\n\nFunctions ({}):\n{}",
        functions.len(),
        lines.join("\n")
    );
    if full.chars().count() <= budget {
        return full;
    }
    compact_index(functions, budget)
}

/// Above the budget the index stays this small (after the intro) however many tools there are:
/// 1,000 tool names would cost more context than the signatures of a small catalog.
const INDEX_MAX_CHARS: usize = 2_400;

/// Words of tool names that say what a tool does, not what it is about.
const GENERIC_WORDS: &[&str] = &[
    "get", "list", "create", "update", "delete", "remove", "add", "set", "search", "find", "read",
    "write", "fetch", "archive", "restore", "export", "import", "count", "history", "by", "all",
    "of", "to", "for", "the", "and", "with", "from", "new", "in", "on", "a", "an", "is",
];

fn compact_index(functions: &[SdkFunction], budget: usize) -> String {
    let mut by_server: BTreeMap<&str, Vec<&SdkFunction>> = BTreeMap::new();
    for f in functions {
        by_server.entry(f.server.as_str()).or_default().push(f);
    }
    let budget = budget.min(INTRO.chars().count() + INDEX_MAX_CHARS);
    names_index(&by_server, functions.len(), budget)
        .unwrap_or_else(|| topics_index(&by_server, functions.len(), budget))
}

fn server_label(server: &str) -> String {
    let label = truncate_words(&one_line(server), SERVER_LABEL_CHARS);
    if label.is_empty() {
        "(unnamed)".to_owned()
    } else {
        label
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Every tool name, grouped by server, when all of them fit in `budget`.
fn names_index(
    by_server: &BTreeMap<&str, Vec<&SdkFunction>>,
    total: usize,
    budget: usize,
) -> Option<String> {
    let mut out = format!("{INTRO}\n\nTools by server ({total} tools):");
    for (server, fs) in by_server {
        let names: Vec<&str> = fs.iter().map(|f| f.py_name.as_str()).collect();
        out.push_str(&format!(
            "\n{} ({}): {}",
            server_label(server),
            plural(names.len(), "tool", "tools"),
            names.join(", ")
        ));
    }
    out.push('\n');
    out.push_str(INDEX_TAIL);
    (out.chars().count() <= budget).then_some(out)
}

/// Per server, the words its tool names are about, most common first, with how many tools
/// mention each: a map for `search_tools` queries, of bounded size.
fn topics_index(
    by_server: &BTreeMap<&str, Vec<&SdkFunction>>,
    total: usize,
    budget: usize,
) -> String {
    let mut out = format!(
        "{INTRO}\n\n{} on {}, too many to list. Servers and the topics of their tools (tools per topic):",
        plural(total, "tool", "tools"),
        plural(by_server.len(), "server", "servers")
    );
    let mut used = out.chars().count();
    let reserve = INDEX_TAIL.chars().count()
        + format!(
            "\n… {} more servers ({total} tools) not listed.\n",
            by_server.len()
        )
        .len();
    let available = budget.saturating_sub(reserve);
    let mut omitted = (0usize, 0usize);
    for (i, (server, fs)) in by_server.iter().enumerate() {
        let header = format!(
            "\n{} ({})",
            server_label(server),
            plural(fs.len(), "tool", "tools")
        );
        if used + header.chars().count() > available {
            omitted = (
                by_server.len() - i,
                by_server.values().skip(i).map(Vec::len).sum(),
            );
            break;
        }
        // Later servers keep room for at least their headers.
        let later = (by_server.len() - i - 1) * 24;
        let room = available.saturating_sub(used + later);
        let mut line = header;
        for (n, (word, count)) in topics(server, fs).into_iter().enumerate() {
            let piece = format!("{}{word} {count}", if n == 0 { ": " } else { ", " });
            if line.chars().count() + piece.chars().count() + ", …".len() > room {
                line.push_str(if n == 0 { ": …" } else { ", …" });
                break;
            }
            line.push_str(&piece);
        }
        used += line.chars().count();
        out.push_str(&line);
    }
    if omitted.0 > 0 {
        out.push_str(&format!(
            "\n… {} ({}) not listed.",
            plural(omitted.0, "more server", "more servers"),
            plural(omitted.1, "tool", "tools")
        ));
    }
    out.push('\n');
    out.push_str(INDEX_TAIL);
    out
}

/// `(word, tools whose name has it)`, most common first, then alphabetical.
fn topics(server: &str, functions: &[&SdkFunction]) -> Vec<(String, usize)> {
    let own: BTreeSet<String> = words(server).into_iter().collect();
    let all: BTreeSet<String> = functions.iter().flat_map(|f| words(&f.tool)).collect();
    // `invoices` counts as `invoice` when both occur.
    let singular = |w: String| -> String {
        let candidates = [
            w.strip_suffix("ies").map(|b| format!("{b}y")),
            w.strip_suffix("es").map(str::to_owned),
            w.strip_suffix('s').map(str::to_owned),
        ];
        candidates
            .into_iter()
            .flatten()
            .find(|c| c.len() > 1 && all.contains(c))
            .unwrap_or(w)
    };
    // `v2`, `v10`: version markers say nothing about what a server does.
    let is_version_word = |w: &str| {
        w.strip_prefix('v')
            .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
    };
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for f in functions {
        let distinct: BTreeSet<String> = words(&f.tool)
            .into_iter()
            .map(singular)
            .filter(|w| {
                w.len() > 1
                    && !w.chars().all(|c| c.is_ascii_digit())
                    && !own.contains(w)
                    && !GENERIC_WORDS.contains(&w.as_str())
                    && !is_version_word(w)
            })
            .collect();
        for w in distinct {
            *counts.entry(w).or_default() += 1;
        }
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terse_hints_keep_string_literals() {
        assert_eq!(
            terse("f(a: list[dict[str, Any]], b: dict[str, list[Any]]) -> dict[str, Any]"),
            "f(a: list[dict], b: dict[str, list]) -> dict"
        );
        assert_eq!(
            terse(r"f(m: str = 'it\'s dict[str, Any]', n: list[Any] = [])"),
            r"f(m: str = 'it\'s dict[str, Any]', n: list = [])"
        );
        assert_eq!(
            terse("g(s: Literal[\"list[Any]\"])"),
            "g(s: Literal[\"list[Any]\"])"
        );
    }
}
