//! The `execute_python` description and the gateway's `instructions`, laid out for clients
//! that cut them (Claude Code keeps the first 2,048 characters of each): that head holds the
//! calling contract, the `session` rule, every server with its tool count and purpose, and
//! where the rest is; signatures follow, most useful first, as far as the budget goes.

use std::collections::BTreeMap;

use super::SdkFunction;
use super::naming::words;
use super::purpose::{Purpose, purposes};
use super::servers::{Entry, Form, block, names_cut};
use super::shared_types::SharedTypes;

/// What the strictest widely used client keeps of a tool description or of `instructions`.
pub const HEAD_CHARS: usize = 2_048;

/// Longer defaults are `...` in the description's one-line signatures (the stub and
/// `describe_tool` show them in full).
const LINE_DEFAULT_CHARS: usize = 24;

const CONTRACT: &str = "\
Run Python (a sandboxed subset). Each upstream MCP tool is a function `server_tool(...)` taking keyword or positional arguments; \
it returns the tool's structured result as a dict if it has one, else its text as a str, and a failed call raises ToolError (str(e) is the upstream's message). \
Calls are synchronous; `await asyncio.gather(f(...), g(...))` runs them concurrently. \
You see only what you print plus the last expression (or a variable `result`): filter and aggregate in Python.";

const CONTRACT_SHORT: &str = "\
Run Python (a sandboxed subset). Each MCP tool is a function `server_tool(...)` returning its structured result as a dict, else its text as a str; \
failures raise ToolError. Calls are synchronous (`asyncio.gather` runs them concurrently). You see only prints and the last expression: filter in Python.";

const SESSION: &str = "\
To keep variables between calls, pass `session`: the ID in the previous result's last line [session: ID] \
(clients that open a new MCP session per call need it).";

const POINTER: &str = "\
search_tools(query, limit=10) finds tools; describe_tool(name) gives a tool's docs and schemas; the resource codemcp://sdk.pyi has every signature. \
Resources and prompts: list_resources(server=None), read_resource(server, uri) (str; binary: {mimeType, base64}), list_prompts(server=None), get_prompt(server, name, **arguments).";

const POINTER_SHORT: &str = "\
search_tools(query), describe_tool(name) and the resource codemcp://sdk.pyi give signatures; \
also list_resources, read_resource(server, uri), list_prompts, get_prompt.";

const LEAD: &str = "\
codemcp: the execute_python tool runs Python in which every tool of the servers below is a function `server_tool(...)`; its description has the calling contract.";

const NO_TOOLS: &str = "\
Run Python code. No upstream tools are connected right now; plain Python still runs.
The snippet's result is its last expression, or a variable named `result`, plus anything printed.";

/// The catalog as the head describes it.
pub struct Servers<'a> {
    by_server: BTreeMap<&'a str, Vec<&'a SdkFunction>>,
    purposes: &'a BTreeMap<String, Purpose>,
    /// Configured servers whose tools are not known yet (never listed, none
    /// remembered): named, so that every server is, however late it lists.
    unlisted: Vec<&'a str>,
    total: usize,
}

/// The functions of each server, by server name.
fn by_server(functions: &[SdkFunction]) -> BTreeMap<&str, Vec<&SdkFunction>> {
    let mut by_server: BTreeMap<&str, Vec<&SdkFunction>> = BTreeMap::new();
    for f in functions {
        by_server.entry(f.server.as_str()).or_default().push(f);
    }
    by_server
}

/// What each server is for (see [`purposes`]): computed once per SDK, as the
/// instructions and the description both need it.
pub fn purposes_of(
    functions: &[SdkFunction],
    about: &BTreeMap<String, String>,
) -> BTreeMap<String, Purpose> {
    purposes(&by_server(functions), about)
        .into_iter()
        .map(|(server, purpose)| (server.to_owned(), purpose))
        .collect()
}

impl<'a> Servers<'a> {
    pub fn new(
        functions: &'a [SdkFunction],
        purposes: &'a BTreeMap<String, Purpose>,
        unlisted: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let by_server = by_server(functions);
        let mut unlisted: Vec<&str> = unlisted
            .into_iter()
            .filter(|s| !by_server.contains_key(s))
            .collect();
        unlisted.sort_unstable();
        unlisted.dedup();
        Servers {
            by_server,
            purposes,
            unlisted,
            total: functions.len(),
        }
    }

    /// Every server by name, whoever connected first: those with tools, and
    /// those whose tools are not known (the same words however they fare).
    fn entries(&self) -> Vec<Entry<'_>> {
        let mut entries: Vec<Entry> = self
            .by_server
            .iter()
            .map(|(name, fs)| Entry {
                name,
                tools: fs.len(),
                purpose: self.purposes.get(*name),
            })
            .collect();
        entries.extend(self.unlisted.iter().map(|name| Entry {
            name,
            tools: 0,
            purpose: None,
        }));
        entries.sort_by(|a, b| a.name.cmp(b.name));
        entries
    }
}

/// `first`, the session rule, the servers and the pointer, in at most `room` characters
/// when that can be done: the texts and the servers' part shrink in turn until it fits.
fn head(first: Option<&str>, servers: &Servers, room: usize) -> String {
    let entries = servers.entries();
    // Below 12 characters a purpose says too little to be worth its line.
    let ladder: [(&str, &str, Form); 5] = [
        (CONTRACT, POINTER, Form::Purposes(40)),
        (CONTRACT_SHORT, POINTER_SHORT, Form::Purposes(20)),
        (CONTRACT_SHORT, POINTER_SHORT, Form::Purposes(12)),
        (CONTRACT_SHORT, POINTER_SHORT, Form::Counts),
        (CONTRACT_SHORT, POINTER_SHORT, Form::Names),
    ];
    let assemble = |contract: &str, pointer: &str, block: &str| {
        format!(
            "{}\n{SESSION}\n\n{block}\n\n{pointer}",
            first.unwrap_or(contract)
        )
    };
    for (contract, pointer, form) in ladder {
        let fixed = assemble(contract, pointer, "").chars().count();
        if let Some(text) = room
            .checked_sub(fixed)
            .and_then(|left| block(&entries, servers.total, form, left))
        {
            return assemble(contract, pointer, &text);
        }
    }
    let fixed = assemble(CONTRACT_SHORT, POINTER_SHORT, "").chars().count();
    let text = names_cut(&entries, servers.total, room.saturating_sub(fixed));
    assemble(CONTRACT_SHORT, POINTER_SHORT, &text)
}

/// The gateway's `instructions`: the head, led by what codemcp is. Like the description, it
/// says what the catalog knows of each server (live or remembered), never whether it is
/// connecting, failing or up.
pub fn instructions(servers: &Servers, budget: usize) -> String {
    head(Some(LEAD), servers, budget.min(HEAD_CHARS))
}

/// The `execute_python` description: the head, then as many signatures as fit in `budget`,
/// most useful first (all of them, with their shared result types, when they all fit).
pub fn description(functions: &[SdkFunction], servers: &Servers, budget: usize) -> String {
    if functions.is_empty() && servers.unlisted.is_empty() {
        return format!("{NO_TOOLS}\n{SESSION}");
    }
    let head = head(None, servers, budget.min(HEAD_CHARS));
    if functions.is_empty() {
        // Servers configured, none listed yet: they are named all the same.
        return head;
    }
    let used = head.chars().count();
    let shared = SharedTypes::find(functions);
    let lines: Vec<String> = functions.iter().map(|f| tool_line(f, &shared)).collect();
    let types = shared
        .definitions()
        .map(|d| format!("\n\nResult types (dicts): {}", terse(&d)))
        .unwrap_or_default();
    let all = format!(
        "{types}\n\nFunctions ({}):\n{}",
        functions.len(),
        lines.join("\n")
    );
    if used + all.chars().count() <= budget {
        return head + &all;
    }
    head + &some_signatures(functions, budget.saturating_sub(used))
}

/// As many signatures as fit in `room`, most useful first; result types written in place.
fn some_signatures(functions: &[SdkFunction], room: usize) -> String {
    let none = SharedTypes::find(&[]);
    let title = |shown: usize| {
        format!(
            "\n\nSignatures ({shown} of {}, most useful first):",
            functions.len()
        )
    };
    let mut body = String::new();
    let mut shown = 0;
    let mut used = title(functions.len()).chars().count();
    for f in useful_order(functions) {
        let line = format!("\n{}", tool_line(f, &none));
        let n = line.chars().count();
        if used + n <= room {
            used += n;
            body.push_str(&line);
            shown += 1;
        }
    }
    if shown == 0 {
        return String::new();
    }
    title(shown) + &body
}

/// Per server, the tools that find and read things first (the usual first step), allowed
/// before asked, then by name; the servers taking turns, so that every one is shown.
fn useful_order(functions: &[SdkFunction]) -> Vec<&SdkFunction> {
    const FIRST_STEPS: &[&str] = &[
        "search", "list", "get", "read", "find", "query", "fetch", "lookup", "describe",
    ];
    let mut by_server: BTreeMap<&str, Vec<&SdkFunction>> = BTreeMap::new();
    for f in functions {
        by_server.entry(f.server.as_str()).or_default().push(f);
    }
    for fs in by_server.values_mut() {
        fs.sort_by_key(|f| {
            let verb = words(&f.tool).into_iter().next().unwrap_or_default();
            (
                !FIRST_STEPS.contains(&verb.as_str()),
                !f.read_only,
                f.policy != crate::policy::Decision::Allow,
                f.py_name.clone(),
            )
        });
    }
    let mut out = Vec::with_capacity(functions.len());
    for turn in 0.. {
        let before = out.len();
        out.extend(by_server.values().filter_map(|fs| fs.get(turn).copied()));
        if out.len() == before {
            break;
        }
    }
    out
}

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

/// One line per tool. `-> str` is left out: the contract says a call without a declared
/// result returns the text.
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
