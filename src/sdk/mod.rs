//! The Python SDK over the upstream tools: names, typed signatures, the `execute_python`
//! description, the type stub, and the index behind `search_tools` / `describe_tool`.
//!
//! Everything here is a pure function of the set of tools: the same tools in any order give
//! byte-identical output. No input, however malformed, may panic: walks over schemas are
//! bounded, and a schema that cannot be typed gives a `(**kwargs: Any)` signature.

mod bind;
pub mod naming;
mod render;
mod search;
mod shared_types;
mod types;

use std::collections::HashSet;

use serde_json::{Map, Value};

pub use bind::BindError;
pub use search::SearchHit;

use crate::tooldef::ToolDef;
use types::TypeCtx;

/// Names the sandbox defines itself; no tool function is ever given one of them.
pub const RESERVED_NAMES: &[&str] = &["search_tools", "describe_tool", "ToolError"];

/// The SDK for one catalog of tools.
#[derive(Debug, Clone)]
pub struct Sdk {
    /// Sorted by `py_name`.
    functions: Vec<SdkFunction>,
    index: search::Index,
    /// The last description rendered, with its budget: rmcp asks for the tool
    /// (description included) on every HTTP request, and the SDK never changes.
    description: std::sync::OnceLock<(usize, String)>,
}

/// One upstream tool as a Python function.
#[derive(Debug, PartialEq)]
pub struct SdkFunction {
    pub py_name: String,
    pub server: String,
    pub tool: String,
    /// Signature order: required parameters first, each group in schema order.
    pub params: Vec<Param>,
    /// The schema could not be typed: the signature is `(**kwargs: Any)`.
    pub variadic_kwargs: bool,
    /// From the output schema; `None` when there is none (the call then returns the text).
    pub return_hint: Option<String>,
    /// The output schema is FastMCP's `{"result": T}` wrapper around a plain
    /// value: calls return the inner value and the signature shows `T`.
    pub unwrap_result: bool,
    /// First sentence of the description, one line.
    pub summary: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub read_only: bool,
}

/// One parameter of an [`SdkFunction`].
#[derive(Debug, PartialEq)]
pub struct Param {
    pub py_name: String,
    /// The upstream's own name for it.
    pub wire_name: String,
    pub type_hint: String,
    pub required: bool,
    pub default: Option<Value>,
    /// The property's `description`, whitespace collapsed; may be empty.
    pub description: String,
}

impl Sdk {
    /// Builds the SDK. Deterministic: any order of the same tools gives an identical `Sdk`.
    pub fn build(tools: &[ToolDef]) -> Sdk {
        let mut order: Vec<(&ToolDef, SortKey)> =
            tools.iter().map(|t| (t, SortKey::of(t))).collect();
        order.sort_by(|a, b| a.1.cmp(&b.1));
        let bases: Vec<String> = order
            .iter()
            .map(|(t, _)| naming::function_base_name(&t.server, &t.name))
            .collect();
        let names = naming::assign_unique(&bases);
        let mut functions: Vec<SdkFunction> = order
            .iter()
            .zip(names)
            .map(|((tool, _), py_name)| SdkFunction::new(tool, py_name))
            .collect();
        functions.sort_by(|a, b| a.py_name.cmp(&b.py_name));
        let index = search::Index::new(&functions);
        Sdk {
            functions,
            index,
            description: std::sync::OnceLock::new(),
        }
    }

    pub fn functions(&self) -> &[SdkFunction] {
        &self.functions
    }

    pub fn get(&self, py_name: &str) -> Option<&SdkFunction> {
        let i = self
            .functions
            .binary_search_by(|f| f.py_name.as_str().cmp(py_name))
            .ok()?;
        self.functions.get(i)
    }

    /// The `execute_python` tool description, at most about `budget_chars` characters (the
    /// calling contract is always included, even when it alone exceeds the budget).
    pub fn description(&self, budget_chars: usize) -> String {
        let (budget, text) = self.description.get_or_init(|| {
            (
                budget_chars,
                render::description(&self.functions, budget_chars),
            )
        });
        if *budget == budget_chars {
            text.clone()
        } else {
            render::description(&self.functions, budget_chars)
        }
    }

    /// The full type stub (`codemcp://sdk.pyi`); always parses as Python.
    pub fn stub(&self) -> String {
        render::stub(&self.functions)
    }

    /// Up to `limit` tools ranked by relevance to `query`; the first `limit` by name when the
    /// query is empty.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.index
            .search(query, limit)
            .into_iter()
            .filter_map(|i| self.functions.get(i))
            .map(|f| SearchHit {
                name: f.py_name.clone(),
                signature: f.signature(),
                summary: f.summary.clone(),
            })
            .collect()
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

    /// Everything about one tool, for `describe_tool(name)`.
    pub fn describe(&self, name: &str) -> Option<Value> {
        self.lookup(name).map(SdkFunction::describe)
    }
}

impl SdkFunction {
    fn new(tool: &ToolDef, py_name: String) -> SdkFunction {
        let (params, variadic_kwargs) = match typed_params(&tool.input_schema) {
            Ok(Some(params)) => (params, false),
            Ok(None) => (Vec::new(), true),
            Err(reason) => {
                tracing::warn!(
                    target: "codemcp::sdk",
                    server = %tool.server,
                    tool = %tool.name,
                    reason,
                    "input schema cannot be typed; the function takes (**kwargs: Any)"
                );
                (Vec::new(), true)
            }
        };
        SdkFunction {
            py_name,
            server: tool.server.clone(),
            tool: tool.name.clone(),
            params,
            variadic_kwargs,
            return_hint: tool
                .output_schema
                .as_ref()
                .map(|o| match wrapped_result(o) {
                    Some(inner) => TypeCtx::new(o).hint(inner),
                    None => TypeCtx::new(o).return_hint(o),
                }),
            unwrap_result: tool
                .output_schema
                .as_ref()
                .is_some_and(|o| wrapped_result(o).is_some()),
            summary: render::summary(&tool.description),
            description: tool.description.clone(),
            input_schema: deep_clone(&tool.input_schema),
            output_schema: tool.output_schema.as_ref().map(deep_clone),
            read_only: tool.read_only,
        }
    }

    /// `name(a: float, b: float = 1) -> str`, as shown to the agent.
    pub fn signature(&self) -> String {
        self.signature_returning(self.return_hint.as_deref().unwrap_or("str"))
    }

    fn signature_returning(&self, returns: &str) -> String {
        format!("{} -> {returns}", self.call_signature(usize::MAX))
    }

    /// `name(a: float, b: float = 1)`, without the return annotation; defaults longer than
    /// `max_default` characters are shown as `...`.
    fn call_signature(&self, max_default: usize) -> String {
        let params = if self.variadic_kwargs {
            "**kwargs: Any".to_owned()
        } else {
            self.params
                .iter()
                .map(|p| p.render(max_default))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!("{}({params})", self.py_name)
    }

    /// Built field by field: `json!` would serialize the schemas, recursing without bound.
    fn describe(&self) -> Value {
        let parameters: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                let mut param = Map::new();
                param.insert("name".into(), Value::from(p.py_name.as_str()));
                param.insert("type".into(), Value::from(p.type_hint.as_str()));
                param.insert("required".into(), Value::Bool(p.required));
                param.insert(
                    "default".into(),
                    p.default.as_ref().map(deep_clone).unwrap_or_default(),
                );
                param.insert("description".into(), Value::from(p.description.as_str()));
                Value::Object(param)
            })
            .collect();
        let mut out = Map::new();
        out.insert("name".into(), Value::from(self.py_name.as_str()));
        out.insert("server".into(), Value::from(self.server.as_str()));
        out.insert("tool".into(), Value::from(self.tool.as_str()));
        out.insert("signature".into(), Value::from(self.signature()));
        out.insert("description".into(), Value::from(self.description.as_str()));
        out.insert("parameters".into(), Value::Array(parameters));
        out.insert("input_schema".into(), deep_clone(&self.input_schema));
        out.insert(
            "output_schema".into(),
            self.output_schema
                .as_ref()
                .map(deep_clone)
                .unwrap_or_default(),
        );
        out.insert("read_only".into(), Value::Bool(self.read_only));
        Value::Object(out)
    }
}

impl Param {
    /// `name: hint` or `name: hint = default`; optional parameters without a default show `= None`.
    fn render(&self, max_default: usize) -> String {
        if self.required {
            return format!("{}: {}", self.py_name, self.type_hint);
        }
        let default = match &self.default {
            Some(value) => types::py_literal(value)
                .filter(|l| l.chars().count() <= max_default)
                .unwrap_or_else(|| "...".to_owned()),
            None => "None".to_owned(),
        };
        format!("{}: {} = {default}", self.py_name, self.type_hint)
    }
}

/// The parameters of an input schema: `Ok(None)` for a schema that accepts any arguments and
/// declares none, `Err` for one that cannot be typed.
fn typed_params(schema: &Value) -> Result<Option<Vec<Param>>, &'static str> {
    let ctx = TypeCtx::new(schema);
    let top = ctx.resolve_top(schema);
    let obj = top
        .as_object()
        .ok_or("the input schema is not a JSON object")?;
    let is_object = match obj.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some("object")),
        Some(_) => false,
    };
    if !is_object {
        return Err("the input schema is not an object schema");
    }
    let empty = Map::new();
    let props = match obj.get("properties") {
        None => &empty,
        Some(Value::Object(props)) => props,
        Some(_) => return Err("`properties` is not an object"),
    };
    if props.is_empty() {
        if ["anyOf", "oneOf", "allOf", "not", "if", "$ref"]
            .iter()
            .any(|k| obj.contains_key(*k))
        {
            return Err("the input schema combines subschemas without declaring properties");
        }
        if matches!(
            obj.get("additionalProperties"),
            Some(Value::Bool(true) | Value::Object(_))
        ) {
            return Ok(None);
        }
    }
    let required: HashSet<&str> = types::required_names(top).into_iter().collect();
    let wire_names: Vec<&str> = props.keys().map(String::as_str).collect();
    let py_names = naming::param_names(&wire_names);
    let mut params: Vec<Param> = props
        .iter()
        .zip(py_names)
        .map(|((wire, prop), py_name)| {
            param(&ctx, wire, prop, py_name, required.contains(wire.as_str()))
        })
        .collect();
    params.sort_by_key(|p| !p.required);
    Ok(Some(params))
}

fn param(ctx: &TypeCtx<'_>, wire: &str, prop: &Value, py_name: String, required: bool) -> Param {
    let resolved = ctx.resolve_top(prop);
    let field = |key: &str| prop.get(key).or_else(|| resolved.get(key));
    let default = if required {
        None
    } else {
        field("default").map(deep_clone)
    };
    let optional_none = !required && default.as_ref().is_none_or(Value::is_null);
    Param {
        py_name,
        wire_name: wire.to_owned(),
        type_hint: ctx.param_hint(prop, optional_none),
        required,
        default,
        description: field("description")
            .and_then(Value::as_str)
            .map(render::one_line)
            .unwrap_or_default(),
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

/// A bounded text form of `value` for ordering (serializing could recurse without bound).
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

/// The inner schema when `output` is how FastMCP wraps a non-object return
/// value: an object whose only, required property is `result`, titled `…Output`
/// (or marked `x-fastmcp-wrap-result`).
fn wrapped_result(output: &Value) -> Option<&Value> {
    let props = output.get("properties")?.as_object()?;
    let inner = props.get("result").filter(|_| props.len() == 1)?;
    let required = output
        .get("required")?
        .as_array()?
        .iter()
        .any(|r| r == "result");
    let marked = output.get("x-fastmcp-wrap-result") == Some(&Value::Bool(true))
        || output
            .get("title")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("Output"));
    (required && marked).then_some(inner)
}

/// Cloned by hand: schemas may be nested arbitrarily deep, and `Value::clone` recurses.
impl Clone for SdkFunction {
    fn clone(&self) -> Self {
        SdkFunction {
            py_name: self.py_name.clone(),
            server: self.server.clone(),
            tool: self.tool.clone(),
            params: self.params.clone(),
            variadic_kwargs: self.variadic_kwargs,
            return_hint: self.return_hint.clone(),
            unwrap_result: self.unwrap_result,
            summary: self.summary.clone(),
            description: self.description.clone(),
            input_schema: deep_clone(&self.input_schema),
            output_schema: self.output_schema.as_ref().map(deep_clone),
            read_only: self.read_only,
        }
    }
}

impl Clone for Param {
    fn clone(&self) -> Self {
        Param {
            py_name: self.py_name.clone(),
            wire_name: self.wire_name.clone(),
            type_hint: self.type_hint.clone(),
            required: self.required,
            default: self.default.as_ref().map(deep_clone),
            description: self.description.clone(),
        }
    }
}

impl Drop for Sdk {
    /// Schemas may be nested arbitrarily deep; `Value`'s own drop would recurse.
    fn drop(&mut self) {
        for f in &mut self.functions {
            dismantle(std::mem::take(&mut f.input_schema));
            dismantle(f.output_schema.take().unwrap_or_default());
            for p in &mut f.params {
                dismantle(p.default.take().unwrap_or_default());
            }
        }
    }
}

/// Drops `value` without recursion.
pub(crate) fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// `Value::clone` without recursion, for schemas nested arbitrarily deep.
pub(crate) fn deep_clone(value: &Value) -> Value {
    enum Frame<'a> {
        Array(std::slice::Iter<'a, Value>, Vec<Value>),
        Object(serde_json::map::Iter<'a>, Map<String, Value>, String),
    }
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut next = Some(value);
    let mut finished: Option<Value> = None;
    loop {
        if let Some(current) = next.take() {
            match current {
                Value::Array(items) => {
                    stack.push(Frame::Array(items.iter(), Vec::with_capacity(items.len())))
                }
                Value::Object(map) => {
                    stack.push(Frame::Object(map.iter(), Map::new(), String::new()))
                }
                leaf => finished = Some(leaf.clone()),
            }
        }
        let Some(frame) = stack.last_mut() else {
            return finished.unwrap_or(Value::Null);
        };
        match frame {
            Frame::Array(iter, out) => {
                out.extend(finished.take());
                next = iter.next();
            }
            Frame::Object(iter, out, key) => {
                if let Some(value) = finished.take() {
                    out.insert(std::mem::take(key), value);
                }
                if let Some((k, v)) = iter.next() {
                    key.clone_from(k);
                    next = Some(v);
                }
            }
        }
        if next.is_none() {
            finished = match stack.pop() {
                Some(Frame::Array(_, out)) => Some(Value::Array(out)),
                Some(Frame::Object(_, out, _)) => Some(Value::Object(out)),
                None => None,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use serde_json::json;

    use super::*;

    fn tool(server: &str, name: &str, input_schema: Value) -> ToolDef {
        ToolDef {
            server: server.into(),
            name: name.into(),
            description: String::new(),
            input_schema,
            output_schema: None,
            read_only: false,
        }
    }

    fn names(sdk: &Sdk) -> Vec<&str> {
        sdk.functions().iter().map(|f| f.py_name.as_str()).collect()
    }

    fn search_issues() -> ToolDef {
        ToolDef {
            server: "github".into(),
            name: "searchIssues".into(),
            description: "Search issues and pull requests across repositories.\n\nUses GitHub's \"\"\"search\"\"\" syntax, e.g. `is:open label:bug`. Paths like C:\\temp are fine.".into(),
            input_schema: json!({
                "type": "object",
                "$defs": {"Order": {"type": "string", "enum": ["asc", "desc"], "description": "Sort order"}},
                "properties": {
                    "q": {"type": "string", "description": "Search query"},
                    "sort": {"enum": ["comments", "created", "updated"], "description": "Sort field"},
                    "order": {"$ref": "#/$defs/Order", "default": "desc"},
                    "per_page": {"type": "integer", "default": 30, "description": "Results per page\n(max 100)"},
                    "labels": {"type": ["array", "null"], "items": {"type": "string"}},
                    "from": {"type": "string", "format": "date"},
                    "repo-owner": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "filters": {"type": "object", "additionalProperties": {"type": "boolean"}, "default": {"archived": false}},
                    "owner": {"type": "string"}
                },
                "required": ["q", "owner"]
            }),
            output_schema: Some(json!({
                "type": "object",
                "properties": {"total_count": {"type": "integer"}, "items": {"type": "array", "items": {"type": "object"}}},
                "required": ["total_count"]
            })),
            read_only: true,
        }
    }

    #[test]
    fn design_naming_examples() {
        let sdk = Sdk::build(&[
            tool("everything", "get-sum", json!({})),
            tool("catalog", "fetchUserProfile", json!({})),
            tool("catalog", "v2.lookup", json!({})),
            tool("catalog", "Send_Email", json!({})),
        ]);
        assert_eq!(
            names(&sdk),
            [
                "catalog_fetch_user_profile",
                "catalog_send_email",
                "catalog_v2_lookup",
                "everything_get_sum"
            ]
        );
    }

    #[test]
    fn collisions_are_assigned_in_server_tool_order() {
        let tools = [
            tool("srv", "get_sum", json!({})),
            tool("srv", "get-sum", json!({})),
            tool("srv", "getSum", json!({})),
            tool("search", "tools", json!({})),
            tool("describe", "tool", json!({})),
        ];
        let sdk = Sdk::build(&tools);
        assert_eq!(
            names(&sdk),
            [
                "describe_tool_2",
                "search_tools_2",
                "srv_get_sum",
                "srv_get_sum_2",
                "srv_get_sum_3"
            ]
        );
        assert_eq!(
            sdk.get("srv_get_sum").map(|f| f.tool.as_str()),
            Some("get-sum")
        );
        assert_eq!(
            sdk.get("srv_get_sum_2").map(|f| f.tool.as_str()),
            Some("getSum")
        );
        assert_eq!(
            sdk.get("srv_get_sum_3").map(|f| f.tool.as_str()),
            Some("get_sum")
        );
        let mut reversed = tools.to_vec();
        reversed.reverse();
        assert_eq!(Sdk::build(&reversed).functions(), sdk.functions());
    }

    #[test]
    fn realistic_signature_snapshot() {
        let sdk = Sdk::build(&[search_issues()]);
        let f = sdk.get("github_search_issues").expect("function");
        assert_eq!(
            f.signature(),
            "github_search_issues(q: str, owner: str, sort: Literal['comments', 'created', 'updated'] | None = None, \
             order: Literal['asc', 'desc'] = 'desc', per_page: int = 30, labels: list[str] | None = None, \
             from_: str | None = None, repo_owner: str | None = None, \
             filters: dict[str, bool] = {'archived': False}) -> {total_count: int, items: list[dict[str, Any]]}"
        );
        assert_eq!(
            f.summary,
            "Search issues and pull requests across repositories."
        );
        let order = f
            .params
            .iter()
            .find(|p| p.py_name == "order")
            .expect("order");
        assert_eq!(order.description, "Sort order");
        let owner = f
            .params
            .iter()
            .find(|p| p.wire_name == "repo-owner")
            .expect("repo-owner");
        assert_eq!(owner.py_name, "repo_owner");
    }

    #[test]
    fn untypable_schemas_take_kwargs() {
        for schema in [
            json!("garbage"),
            json!(null),
            json!([1, 2]),
            json!({"type": "string"}),
            json!({"type": "object", "properties": [1]}),
            json!({"anyOf": [{"type": "object"}]}),
            json!({"type": "object", "additionalProperties": true}),
        ] {
            let sdk = Sdk::build(&[tool("s", "t", schema.clone())]);
            let f = sdk.get("s_t").expect("function");
            assert!(f.variadic_kwargs, "{schema}");
            assert_eq!(f.signature(), "s_t(**kwargs: Any) -> str");
        }
        let typed = Sdk::build(&[tool("s", "t", json!({"type": "object"}))]);
        assert_eq!(
            typed.get("s_t").map(SdkFunction::signature).as_deref(),
            Some("s_t() -> str")
        );
        let via_ref = json!({"$ref": "#/$defs/Args", "$defs": {"Args": {"properties": {"x": {"type": "integer"}}, "required": ["x"]}}});
        let sdk = Sdk::build(&[tool("s", "t", via_ref)]);
        assert_eq!(
            sdk.get("s_t").map(SdkFunction::signature).as_deref(),
            Some("s_t(x: int) -> str")
        );
    }

    #[test]
    fn describe_by_any_name() {
        let mut other = tool("gitlab", "searchIssues", json!({}));
        other.description = "GitLab".into();
        let sdk = Sdk::build(&[search_issues(), other, tool("fs", "read_file", json!({}))]);
        let d = sdk.describe("github_search_issues").expect("by py_name");
        assert_eq!(d["server"], "github");
        assert_eq!(d["tool"], "searchIssues");
        assert_eq!(d["read_only"], true);
        assert_eq!(
            d["parameters"][0],
            json!({"name": "q", "type": "str", "required": true, "default": null, "description": "Search query"})
        );
        assert_eq!(d["parameters"][3]["default"], json!("desc"));
        assert!(
            d["description"]
                .as_str()
                .is_some_and(|s| s.contains("C:\\temp"))
        );
        assert_eq!(d["output_schema"]["required"], json!(["total_count"]));
        assert_eq!(
            sdk.describe("gitlab.searchIssues")
                .map(|d| d["name"].clone()),
            Some(json!("gitlab_search_issues"))
        );
        assert_eq!(
            sdk.describe("read_file").map(|d| d["name"].clone()),
            Some(json!("fs_read_file"))
        );
        assert_eq!(
            sdk.describe("fs_read_file")
                .map(|d| d["output_schema"].clone()),
            Some(Value::Null)
        );
        assert!(sdk.describe("searchIssues").is_none(), "ambiguous raw name");
        assert!(sdk.describe("nope").is_none());
    }

    fn catalog(n: usize) -> Vec<ToolDef> {
        (0..n)
            .map(|i| {
                let mut t = tool(
                    &format!("server{}", i % 7),
                    &format!("doThing{i}"),
                    json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
                );
                t.description = format!("Does thing number {i}. More details here.");
                t
            })
            .collect()
    }

    #[test]
    fn description_is_identical_for_any_input_order() {
        let tools = catalog(40);
        let mut shuffled = tools.clone();
        shuffled.reverse();
        shuffled.rotate_left(13);
        let (a, b) = (Sdk::build(&tools), Sdk::build(&shuffled));
        for budget in [usize::MAX, 2_000, 900, 0] {
            assert_eq!(a.description(budget), b.description(budget));
        }
        assert_eq!(a.stub(), b.stub());
    }

    #[test]
    fn description_lists_signatures_when_they_fit() {
        let sdk = Sdk::build(&catalog(3));
        let text = sdk.description(100_000);
        assert!(text.contains("ToolError"), "{text}");
        assert!(text.contains("search_tools(query, limit=10)"), "{text}");
        assert!(
            text.contains("server0_do_thing0(x: int)  # Does thing number 0.\n"),
            "{text}"
        );
        assert!(text.lines().count() <= 16, "{text}");
    }

    #[test]
    fn description_switches_to_a_compact_index_over_budget() {
        let sdk = Sdk::build(&catalog(40));
        let full = sdk.description(usize::MAX);
        let compact = sdk.description(full.chars().count() - 1);
        assert!(
            compact.contains("server0 (6 tools): server0_do_thing0, server0_do_thing14,"),
            "{compact}"
        );
        assert!(!compact.contains("-> str"), "{compact}");
        assert!(compact.contains("describe_tool(name)"), "{compact}");
        assert!(!compact.contains("more tools not listed"), "{compact}");

        let tight = sdk.description(1_600);
        assert!(
            tight.chars().count() <= 1_600,
            "{} chars:\n{tight}",
            tight.chars().count()
        );
        assert!(
            tight.contains("40 tools on 7 servers, too many to list."),
            "{tight}"
        );
        assert!(
            tight.contains("\nserver0 (6 tools): do 6, thing0 1,"),
            "{tight}"
        );
        assert!(tight.ends_with("for its signature."), "{tight}");
    }

    #[test]
    fn the_index_stays_small_for_a_thousand_tools() {
        let tools: Vec<ToolDef> = (0..1_000)
            .map(|i| {
                let verb = ["get", "list", "refund", "archive"][i % 4];
                let entity = ["invoice", "invoices", "order", "shipment", "ticket"][i % 5];
                tool(
                    &format!("srv{}", i % 3),
                    &format!("{verb}_{entity}_{i}"),
                    json!({}),
                )
            })
            .collect();
        let text = Sdk::build(&tools).description(24_000);
        assert!(
            text.chars().count() <= 3_400,
            "{} chars:\n{text}",
            text.chars().count()
        );
        assert!(text.contains("1000 tools on 3 servers"), "{text}");
        // Plurals fold into the singular; generic verbs are not topics.
        assert!(
            text.contains(
                "srv0 (334 tools): invoice 134, refund 83, shipment 67, ticket 67, order 66"
            ),
            "{text}"
        );
        assert!(!text.contains(" get "), "{text}");
    }

    #[test]
    fn description_without_tools() {
        let text = Sdk::build(&[]).description(10_000);
        assert!(text.contains("No upstream tools are connected"), "{text}");
        assert!(Sdk::build(&[]).stub().contains("def describe_tool("));
    }

    #[test]
    fn stub_has_typed_dicts_and_docstrings() {
        let sdk = Sdk::build(&[search_issues()]);
        let stub = sdk.stub();
        assert!(
            stub.contains("from typing import Any, Literal, TypedDict\n"),
            "{stub}"
        );
        assert!(
            stub.contains("class GithubSearchIssuesResult(TypedDict):\n    total_count: int\n"),
            "{stub}"
        );
        assert!(stub.contains(") -> GithubSearchIssuesResult:\n"), "{stub}");
        assert!(
            stub.contains(r#"Uses GitHub's \"\""search\"\"" syntax"#),
            "{stub}"
        );
        assert!(stub.contains(r"C:\\temp"), "{stub}");
        assert!(stub.contains("        from_ (sent as 'from')\n"), "{stub}");
        assert!(
            stub.contains("        per_page: Results per page (max 100)\n"),
            "{stub}"
        );
    }

    #[test]
    fn shared_result_shapes_are_written_once() {
        let returning = |name: &str, output: Value| ToolDef {
            output_schema: Some(output),
            ..tool(
                "files",
                name,
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            )
        };
        let content = json!({"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]});
        let content_maybe =
            json!({"type": "object", "properties": {"content": {"type": "string"}}});
        let sdk = Sdk::build(&[
            returning("read", content.clone()),
            returning("stat", content.clone()),
            returning("write", content_maybe),
            returning(
                "weather",
                json!({"type": "object", "properties": {"t": {"type": "number"}}}),
            ),
        ]);
        let text = sdk.description(100_000);
        assert!(
            text.contains("Result types (dicts): Content = {content: str}\n"),
            "{text}"
        );
        assert_eq!(text.matches("{content: str}").count(), 1, "{text}");
        assert!(
            text.contains("files_read(path: str | None = None) -> Content"),
            "{text}"
        );
        assert!(
            text.contains("files_write(path: str | None = None) -> Content"),
            "{text}"
        );
        // Used once: named nowhere, written in place.
        assert!(text.contains("-> {t: float}"), "{text}");
        let stub = sdk.stub();
        assert_eq!(
            stub.matches("class Content(TypedDict):").count(),
            1,
            "{stub}"
        );
        // One tool may leave the field out, so the shared class says so.
        assert!(
            stub.contains("    content: str  # may be absent\n"),
            "{stub}"
        );
        assert!(
            stub.contains("def files_stat(path: str | None = None) -> Content:"),
            "{stub}"
        );
        assert!(
            stub.contains("class FilesWeatherResult(TypedDict):"),
            "{stub}"
        );
        if let Some(failures) = python_parse_failures(&[stub]) {
            assert!(failures.is_empty(), "{failures:?}");
        }
    }

    #[test]
    fn ten_thousand_levels_do_not_overflow() {
        fn object(pairs: Vec<(&str, Value)>) -> Value {
            Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        }
        let mut deep = json!({"type": "string"});
        for i in 0..10_000 {
            deep = if i % 2 == 0 {
                object(vec![("type", json!("array")), ("items", deep)])
            } else {
                let default = object(vec![("a", Value::Array(vec![json!(i)]))]);
                object(vec![
                    ("type", json!("object")),
                    ("properties", object(vec![("p", deep)])),
                    ("default", default),
                ])
            };
        }
        let deep_default = object(vec![("default", deep_clone(&deep))]);
        let properties = object(vec![("deep", deep), ("with_default", deep_default)]);
        let input = object(vec![("type", json!("object")), ("properties", properties)]);
        let mut t = tool("s", "t", input);
        t.output_schema = Some(deep_clone(&t.input_schema));
        let sdk = Sdk::build(std::slice::from_ref(&t));
        assert!(sdk.stub().contains("def s_t("));
        let described = sdk.describe("s_t").expect("described");
        assert!(!sdk.search("deep", 5).is_empty());
        dismantle(described);
        // Cloned and dropped without recursing: a small stack is enough.
        let small_stack = || std::thread::Builder::new().stack_size(256 * 1024);
        std::thread::scope(|scope| {
            let cloned = small_stack().spawn_scoped(scope, || drop(sdk.clone()));
            assert!(cloned.expect("spawn").join().is_ok());
        });
        let dropped = small_stack().spawn(move || drop(sdk));
        assert!(dropped.expect("spawn").join().is_ok());
        dismantle(t.input_schema);
        dismantle(t.output_schema.unwrap_or_default());
    }

    const NAME_POOL: &[&str] = &[
        "get-sum",
        "getSum",
        "get_sum",
        "search",
        "tools",
        "describe",
        "tool",
        "ToolError",
        "",
        "123",
        "class",
        "None",
        "from",
        "__debug__",
        "_",
        "é",
        "天气",
        "HTTPServer",
        "a b",
        "search_tools",
    ];

    fn arb_name() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(NAME_POOL).prop_map(String::from),
            any::<String>(),
            "[A-Za-z0-9_.-]{0,12}"
        ]
    }

    proptest! {
        #[test]
        fn function_names_are_unique_valid_identifiers(
            pairs in prop::collection::vec((arb_name(), arb_name()), 0..40),
            rotate in 0usize..40,
        ) {
            let tools: Vec<ToolDef> = pairs.iter().map(|(s, t)| tool(s, t, json!({}))).collect();
            let sdk = Sdk::build(&tools);
            let mut seen = std::collections::HashSet::new();
            for f in sdk.functions() {
                prop_assert!(naming::is_bindable_identifier(&f.py_name), "{}", f.py_name);
                prop_assert!(!RESERVED_NAMES.contains(&f.py_name.as_str()), "{}", f.py_name);
                prop_assert!(seen.insert(f.py_name.clone()), "duplicate {}", f.py_name);
            }
            let mut rotated = tools.clone();
            if !rotated.is_empty() {
                let len = rotated.len();
                rotated.rotate_left(rotate % len);
            }
            let other = Sdk::build(&rotated);
            prop_assert_eq!(other.functions(), sdk.functions());
            prop_assert_eq!(other.description(500), sdk.description(500));
        }

        #[test]
        fn parameter_names_are_unique_valid_identifiers(wires in prop::collection::vec(arb_name(), 0..20)) {
            let props: Map<String, Value> = wires.iter().map(|w| (w.clone(), json!({"type": "string"}))).collect();
            let sdk = Sdk::build(&[tool("s", "t", json!({"properties": props, "required": wires}))]);
            let f = sdk.get("s_t").expect("function");
            let mut seen = std::collections::HashSet::new();
            for p in &f.params {
                prop_assert!(naming::is_bindable_identifier(&p.py_name), "{}", p.py_name);
                prop_assert!(seen.insert(p.py_name.clone()), "duplicate {}", p.py_name);
                if naming::is_bindable_identifier(&p.wire_name) {
                    prop_assert_eq!(&p.py_name, &p.wire_name);
                }
            }
        }
    }

    const SCHEMA_WORDS: &[&str] = &[
        "type",
        "properties",
        "items",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
        "required",
        "default",
        "description",
        "additionalProperties",
        "prefixItems",
        "nullable",
        "$defs",
        "definitions",
        "x",
        "class",
        "a-b",
        "object",
        "string",
        "integer",
        "number",
        "boolean",
        "null",
        "array",
        "#",
        "#/$defs/x",
        "#/definitions/x",
        "#/properties/x",
        "#/$defs/x/items",
        "\"\"\"",
        "\\",
        "'",
        "\n",
        "\u{0}",
        "\u{2028}",
    ];

    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            prop::collection::vec(prop::sample::select(SCHEMA_WORDS), 0..12)
                .prop_map(|w| w.concat()),
        ]
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            arb_text().prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((arb_text(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Object schemas with arbitrary properties: the common shape, so most cases reach typing.
    fn arb_object_schema() -> impl Strategy<Value = Value> {
        (prop::collection::vec((arb_text(), arb_json()), 0..6), arb_json(), arb_json()).prop_map(|(props, required, defs)| {
            json!({"type": "object", "properties": Map::from_iter(props), "required": required, "$defs": {"x": defs}})
        })
    }

    fn arb_tool() -> impl Strategy<Value = ToolDef> {
        let schema = || prop_oneof![arb_json(), arb_object_schema()];
        (
            arb_name(),
            arb_name(),
            arb_text(),
            schema(),
            prop::option::of(schema()),
            any::<bool>(),
        )
            .prop_map(
                |(server, name, description, input_schema, output_schema, read_only)| ToolDef {
                    server,
                    name,
                    description,
                    input_schema,
                    output_schema,
                    read_only,
                },
            )
    }

    /// Parses every stub with Python's `ast.parse` in one interpreter; the failures, if any.
    fn python_parse_failures(stubs: &[String]) -> Option<Vec<String>> {
        let script = "import ast, json, sys\n\
            bad = []\n\
            for i, src in enumerate(json.load(sys.stdin)):\n\
            \x20   try:\n\
            \x20       ast.parse(src)\n\
            \x20   except SyntaxError as e:\n\
            \x20       bad.append(f'stub {i}: {e}: {src.splitlines()[e.lineno - 1] if e.lineno else \"\"}')\n\
            print(json.dumps(bad))\n";
        let mut child = match Command::new("python3")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                println!("python3 not available ({e}); skipping the ast.parse check");
                return None;
            }
        };
        let input = serde_json::to_vec(stubs).expect("serialize stubs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(&input)
            .expect("write stubs");
        let output = child.wait_with_output().expect("python3 runs");
        assert!(
            output.status.success(),
            "python3 failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Some(serde_json::from_slice(&output.stdout).expect("python3 prints a JSON list"))
    }

    #[test]
    fn arbitrary_tools_never_panic_and_stubs_always_parse() {
        let stubs = std::cell::RefCell::new(vec![
            Sdk::build(&[search_issues()]).stub(),
            Sdk::build(&catalog(5)).stub(),
        ]);
        let mut runner = TestRunner::new(Config {
            cases: 300,
            ..Config::default()
        });
        let strategy = prop::collection::vec(arb_tool(), 1..4);
        let result = runner.run(&strategy, |tools| {
            let sdk = Sdk::build(&tools);
            let _ = sdk.description(usize::MAX);
            let _ = sdk.description(300);
            for f in sdk.functions() {
                let _ = sdk.describe(&f.py_name);
                let _ = sdk.search(&f.description, 3);
                let _ = f.bind_args(vec![json!(1)], vec![("x".into(), json!(2))]);
            }
            stubs.borrow_mut().push(sdk.stub());
            Ok(())
        });
        assert!(result.is_ok(), "{result:?}");
        let mut stubs = stubs.into_inner();
        // A known-broken stub last proves the checker really parses.
        stubs.push("def broken(:\n    ...\n".to_owned());
        if let Some(failures) = python_parse_failures(&stubs) {
            let broken = format!("stub {}:", stubs.len() - 1);
            let unexpected: Vec<&String> = failures
                .iter()
                .filter(|f| !f.starts_with(&broken))
                .collect();
            assert!(
                unexpected.is_empty(),
                "{} of {} stubs do not parse:\n{unexpected:#?}",
                unexpected.len(),
                stubs.len()
            );
            assert_eq!(failures.len(), 1, "the broken stub was not reported");
        }
    }
}

#[cfg(test)]
mod wrapped_result_tests {
    use super::*;
    use serde_json::json;

    fn tool(output: Value) -> ToolDef {
        ToolDef {
            server: "odd".into(),
            name: "slow".into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {}}),
            output_schema: Some(output),
            read_only: true,
        }
    }

    #[test]
    fn fastmcp_result_wrappers_are_unwrapped() {
        let wrapped = json!({"type": "object", "title": "slowOutput", "properties": {"result": {"type": "string"}}, "required": ["result"]});
        let sdk = Sdk::build(&[tool(wrapped)]);
        let f = sdk.get("odd_slow").expect("function");
        assert!(f.unwrap_result);
        assert_eq!(f.signature(), "odd_slow() -> str");
        assert!(!sdk.stub().contains("OddSlowResult"));
    }

    #[test]
    fn a_real_result_field_is_kept() {
        let plain = json!({"type": "object", "title": "Report", "properties": {"result": {"type": "string"}}, "required": ["result"]});
        let sdk = Sdk::build(&[tool(plain)]);
        assert!(!sdk.get("odd_slow").expect("function").unwrap_result);
    }
}
