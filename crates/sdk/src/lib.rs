//! The Python SDK over the upstream tools: names, typed signatures, the `execute_python`
//! description, the type stub, and the index behind `search_tools` / `describe_tool`.
//!
//! Everything here is a pure function of the set of tools: the same tools in any order give
//! byte-identical output. No input, however malformed, may panic: a schema that cannot be
//! typed gives a `(**kwargs: Any)` signature. Schemas arrive cut to a bounded depth
//! ([`crate::tooldef::MAX_SCHEMA_DEPTH`]), so walks over them may recurse; the walks that
//! produce text are bounded in work as well (see `types`).

mod bind;
mod description;
mod function;
pub mod helper_docs;
pub mod naming;
mod purpose;
pub mod resources;
mod search;
mod servers;
mod shared_types;
mod stub;
mod summary;
mod types;

pub mod policy;
pub mod tooldef;

use std::collections::BTreeMap;

use serde_json::Value;

pub use bind::BindError;
pub use description::HEAD_CHARS;
pub use function::{Param, SdkFunction};
pub use helper_docs::HelperDoc;
pub use resources::{ResourceArgError, ResourceCall};
pub use search::SearchHit;

use crate::tooldef::ToolDef;

/// Names the sandbox defines itself; no tool function is ever given one of them.
pub const RESERVED_NAMES: &[&str] = &[
    "search_tools",
    "describe_tool",
    "ToolError",
    resources::LIST_RESOURCES,
    resources::READ_RESOURCE,
    resources::LIST_PROMPTS,
    resources::GET_PROMPT,
    "save_helper",
    "list_helpers",
    "delete_helper",
];

/// The SDK for one catalog of tools.
#[derive(Debug, Clone)]
pub struct Sdk {
    /// Sorted by `py_name`. Shared, like the index: a caller's view with its
    /// saved helpers is a clone made on every run, which must stay cheap.
    functions: std::sync::Arc<Vec<SdkFunction>>,
    /// Built on the first search, not with the SDK: it is a third of the
    /// build, and a gateway answers `initialize` before anyone searches.
    index: std::sync::Arc<std::sync::OnceLock<search::Index>>,
    /// What each server is for, once: the instructions and the description
    /// both name it.
    purposes: std::sync::OnceLock<BTreeMap<String, purpose::Purpose>>,
    /// `<server>_`, the start of every tool function name of that server,
    /// sorted: the pre-flight check asks on every run.
    server_prefixes: Vec<String>,
    /// The last description rendered, with its budget: rmcp asks for the tool
    /// (description included) on every HTTP request, and the SDK never changes.
    description: std::sync::OnceLock<(usize, String)>,
    /// The `instructions` rendered, with their budget (asked at every `initialize`).
    instructions: std::sync::OnceLock<(usize, String)>,
    /// What each server says it is for (its `instructions` or `serverInfo.description`),
    /// by server name; servers that say nothing are described by their tools.
    about: BTreeMap<String, String>,
    /// Servers not serving yet: still connecting, or failing and retried.
    /// Errors read it and `search_tools` ends with one hit per server; the
    /// description and the instructions only name those whose tools are not
    /// known at all, never their state: they are the catalog's alone, byte
    /// for byte the same whenever and in whatever order servers join (a
    /// change there costs every client its prompt cache).
    connecting: Vec<Connecting>,
    /// The caller's saved helpers, when the gateway keeps helpers.
    helpers: Option<std::sync::Arc<Vec<HelperDoc>>>,
}

/// A configured server that has not joined yet (its first handshake is
/// under way, or failed and is retried), so its tools are not confirmed:
/// absent from the SDK, or there from the remembered catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connecting {
    pub server: String,
    pub since: std::time::Instant,
    /// Why its last attempt failed; `None` while the first is under way.
    pub reason: Option<String>,
    /// How many of its tools the SDK has from the remembered catalog.
    pub remembered: usize,
}

impl Connecting {
    /// Whether `name` (`<server>_<tool>`, or `server.tool`) names one of its tools.
    fn owns(&self, name: &str) -> bool {
        let base = naming::normalize(&self.server);
        let py = name
            .strip_prefix(base.as_str())
            .is_some_and(|rest| rest.starts_with('_'));
        let qualified = name
            .strip_prefix(self.server.as_str())
            .is_some_and(|rest| rest.starts_with('.'));
        py || qualified
    }

    /// What a snippet that reached for one of its tools is told.
    pub fn message(&self) -> String {
        let ms = self.since.elapsed().as_millis();
        match &self.reason {
            None => format!(
                "server '{}' is still starting: connecting (started {ms} ms ago); try again shortly",
                self.server
            ),
            Some(reason) => format!(
                "server '{}' is still starting: its last attempt failed ({reason}); it is retried in the background, try again shortly",
                self.server
            ),
        }
    }

    /// Its state in a few words, for `search_tools`.
    pub fn state(&self) -> String {
        let mut state = match &self.reason {
            None => "connecting".to_owned(),
            Some(reason) => format!("failing, retried: {}", short(reason)),
        };
        if self.remembered > 0 {
            state.push_str(&format!(
                "; {} remembered functions not yet confirmed",
                self.remembered
            ));
        }
        state
    }
}

/// A reason cut to one short line.
fn short(reason: &str) -> String {
    const MAX: usize = 120;
    let line = reason.lines().next().unwrap_or_default();
    match line.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

impl Sdk {
    /// Builds the SDK. Deterministic: any order of the same tools gives an identical `Sdk`.
    pub fn build(tools: &[ToolDef]) -> Sdk {
        let mut order: Vec<(&ToolDef, SortKey)> =
            tools.iter().map(|t| (t, SortKey::of(t))).collect();
        order.sort_by(|a, b| a.1.cmp(&b.1));
        let parts: Vec<(&str, &str)> = order
            .iter()
            .map(|(t, _)| (t.server.as_str(), t.name.as_str()))
            .collect();
        let names = naming::function_names(&parts);
        warn_contested(&names, &parts);
        let mut functions: Vec<SdkFunction> = order
            .iter()
            .zip(names)
            .map(|((tool, _), (py_name, lost))| {
                let mut function = SdkFunction::new(tool, py_name);
                function.renamed_from = lost;
                function
            })
            .collect();
        functions.sort_by(|a, b| a.py_name.cmp(&b.py_name));
        let mut server_prefixes: Vec<String> = functions
            .iter()
            .map(|f| format!("{}_", naming::normalize(&f.server)))
            .collect();
        server_prefixes.sort_unstable();
        server_prefixes.dedup();
        Sdk {
            functions: std::sync::Arc::new(functions),
            index: std::sync::Arc::default(),
            purposes: std::sync::OnceLock::new(),
            server_prefixes,
            description: std::sync::OnceLock::new(),
            instructions: std::sync::OnceLock::new(),
            about: BTreeMap::new(),
            connecting: Vec::new(),
            helpers: None,
        }
    }

    /// The same SDK, knowing what each server says it is for (see [`Sdk::description`]).
    pub fn with_about(mut self, about: BTreeMap<String, String>) -> Sdk {
        self.about = about;
        self.purposes = std::sync::OnceLock::new();
        self.description = std::sync::OnceLock::new();
        self.instructions = std::sync::OnceLock::new();
        self
    }

    /// The same SDK, knowing which servers are still connecting.
    pub fn with_connecting(mut self, connecting: Vec<Connecting>) -> Sdk {
        self.connecting = connecting;
        self
    }

    /// The same SDK with one caller's saved helpers (see `crate::helpers`).
    pub fn with_helpers(mut self, helpers: Vec<HelperDoc>) -> Sdk {
        // No helpers describe as none do: a description rendered already
        // stays (each `tools/list` of a caller without helpers comes here).
        if !(helpers.is_empty() && self.helpers().is_empty()) {
            self.description = std::sync::OnceLock::new();
        }
        self.helpers = Some(std::sync::Arc::new(helpers));
        self
    }

    /// The caller's helpers (none when the gateway keeps none).
    pub fn helpers(&self) -> &[HelperDoc] {
        self.helpers.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The servers that have not joined yet.
    pub fn starting(&self) -> &[Connecting] {
        &self.connecting
    }

    /// The catalog's servers as the description and instructions name them:
    /// with their tools, and those whose tools are not known yet.
    fn servers(&self) -> description::Servers<'_> {
        let unlisted = self
            .connecting
            .iter()
            .filter(|c| c.remembered == 0)
            .map(|c| c.server.as_str());
        description::Servers::new(&self.functions, self.purposes(), unlisted)
    }

    /// The still-connecting server whose tool `name` would be, when no
    /// connected tool has that name.
    pub fn connecting_for(&self, name: &str) -> Option<&Connecting> {
        if self.lookup(name).is_some() {
            return None;
        }
        self.connecting.iter().find(|c| c.owns(name))
    }

    pub fn functions(&self) -> &[SdkFunction] {
        &self.functions
    }

    /// `<server>_` for every server with tools, sorted.
    pub fn server_prefixes(&self) -> &[String] {
        &self.server_prefixes
    }

    pub fn get(&self, py_name: &str) -> Option<&SdkFunction> {
        let i = self
            .functions
            .binary_search_by(|f| f.py_name.as_str().cmp(py_name))
            .ok()?;
        self.functions.get(i)
    }

    /// The `execute_python` tool description, at most about `budget_chars` characters (the
    /// calling contract is always included, even when it alone exceeds the budget). Its
    /// first [`HEAD_CHARS`] characters name every server, what it is for, and where the
    /// signatures are; signatures fill the rest of the budget, most useful first.
    pub fn description(&self, budget_chars: usize) -> String {
        let render = || {
            let servers = self.servers();
            let helpers = self.helpers();
            let reserve = if helpers.is_empty() {
                0
            } else {
                budget_chars / 5
            };
            let budget = budget_chars - reserve;
            let mut text = description::description(&self.functions, &servers, budget);
            let room = budget_chars.saturating_sub(text.len());
            text.extend(helper_docs::line(helpers, room));
            text
        };
        let (budget, text) = self.description.get_or_init(|| (budget_chars, render()));
        if *budget == budget_chars {
            text.clone()
        } else {
            render()
        }
    }

    /// The gateway's `instructions` (for `initialize` and `server/discover`): every server
    /// with its tools, within `budget_chars` and [`HEAD_CHARS`].
    pub fn instructions(&self, budget_chars: usize) -> String {
        let render = || description::instructions(&self.servers(), budget_chars);
        let (budget, text) = self.instructions.get_or_init(|| (budget_chars, render()));
        if *budget == budget_chars {
            text.clone()
        } else {
            render()
        }
    }

    /// The full type stub (`codemcp://sdk.pyi`); always parses as Python.
    pub fn stub(&self) -> String {
        let mut text = stub::stub(&self.functions);
        if self.helpers.is_some() {
            text.push_str(&helper_docs::stub(self.helpers()));
        }
        text
    }

    fn index(&self) -> &search::Index {
        self.index
            .get_or_init(|| search::Index::new(&self.functions))
    }

    fn purposes(&self) -> &BTreeMap<String, purpose::Purpose> {
        self.purposes
            .get_or_init(|| description::purposes_of(&self.functions, &self.about))
    }

    /// Up to `limit` tools ranked by relevance to `query`; the first `limit` by name when the
    /// query is empty.
    /// Servers not joined yet follow, one hit each, named `<server>_*`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        let mut hits: Vec<SearchHit> = self
            .index()
            .search(query, limit)
            .into_iter()
            .filter_map(|i| self.functions.get(i))
            .map(|f| SearchHit {
                name: f.py_name.clone(),
                signature: f.signature(),
                summary: f.summary.clone(),
            })
            .collect();
        if !self.helpers().is_empty() {
            let mut found = helper_docs::search(self.helpers(), query);
            found.extend(hits);
            found.truncate(limit);
            hits = found;
        }
        hits.extend(self.connecting.iter().map(|c| SearchHit {
            name: format!("{}_*", naming::normalize(&c.server)),
            signature: String::new(),
            summary: format!("server '{}' is still starting: {}", c.server, c.state()),
        }));
        hits
    }

    /// Looks a tool up by `py_name`, by `server.tool`, or by its raw tool name when unique.
    pub fn lookup(&self, name: &str) -> Option<&SdkFunction> {
        if let Some(f) = self.get(name) {
            return Some(f);
        }
        let qualified = self.functions.iter().find(|f| {
            name.strip_prefix(f.server.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                == Some(f.tool.as_str())
        });
        if qualified.is_some() {
            return qualified;
        }
        let mut by_tool = self.functions.iter().filter(|f| f.tool == name);
        match (by_tool.next(), by_tool.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// A call of one of the resource and prompt functions, its arguments
    /// bound; `None` when `name` is not one of them. They are the same in
    /// every SDK: what a server offers is only known when it is asked.
    pub fn resource_call(
        &self,
        name: &str,
        positional: Vec<Value>,
        keywords: Vec<(String, Value)>,
    ) -> Option<Result<ResourceCall, ResourceArgError>> {
        ResourceCall::bind(name, positional, keywords)
    }

    /// Everything about one tool, for `describe_tool(name)`.
    pub fn describe(&self, name: &str) -> Option<Value> {
        if let Some(helper) = self.helpers().iter().find(|h| h.name == name) {
            return Some(helper_docs::describe(helper));
        }
        self.lookup(name).map(SdkFunction::describe)
    }
}

/// One warning per plain function name that several servers' tools map to.
fn warn_contested(names: &[(String, Option<String>)], parts: &[(&str, &str)]) {
    let mut contested: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for ((name, lost), (server, tool)) in names.iter().zip(parts) {
        if let Some(lost) = lost {
            let shown = codemcp_base::for_humans::escape(&format!("{server}.{tool} as {name}"));
            contested.entry(lost.as_str()).or_default().push(shown);
        }
    }
    for (lost, tools) in contested {
        tracing::warn!(
            target: "codemcp::sdk",
            name = lost,
            tools = %tools.join(", "),
            "tools of several servers map to one function name; none has it, each is named server__tool"
        );
    }
}

/// Orders tools deterministically; ties beyond `(server, name)` only decide which duplicate
/// gets a suffix.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    server: String,
    name: String,
    description: String,
    read_only: bool,
    input: String,
    output: String,
}

impl SortKey {
    fn of(tool: &ToolDef) -> SortKey {
        let mut input = String::new();
        fingerprint(&tool.input_schema, &mut input, 0);
        let mut output = String::new();
        if let Some(o) = &tool.output_schema {
            fingerprint(o, &mut output, 0);
        }
        SortKey {
            server: tool.server.clone(),
            name: tool.name.clone(),
            description: tool.description.clone(),
            read_only: tool.read_only,
            input,
            output,
        }
    }
}

/// A text form of `value` for ordering, bounded so that a huge schema costs little.
fn fingerprint(value: &Value, out: &mut String, depth: u32) {
    const MAX_DEPTH: u32 = 32;
    const MAX_CHARS: usize = 8_192;
    if depth > MAX_DEPTH || out.len() > MAX_CHARS {
        return;
    }
    match value {
        Value::Array(items) => {
            out.push('[');
            for item in items {
                fingerprint(item, out, depth + 1);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (key, item) in map {
                out.push_str(key);
                out.push(':');
                fingerprint(item, out, depth + 1);
                out.push(',');
            }
            out.push('}');
        }
        leaf => out.push_str(&leaf.to_string()),
    }
}

#[cfg(test)]
mod tests;
