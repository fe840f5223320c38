//! One upstream tool as a Python function: its parameters typed from the input schema, its
//! return type from the output schema, and what `describe_tool` says about it.

use crate::policy::Decision;
use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::naming;
use super::summary::{one_line, summary};
use super::types::{self, TypeCtx};
use crate::tooldef::{Schema, ToolDef};

/// One upstream tool as a Python function.
#[derive(Debug, Clone, PartialEq)]
pub struct SdkFunction {
    pub py_name: String,
    pub server: String,
    pub tool: String,
    /// Signature order: required parameters first, each group in schema order.
    pub params: Vec<Param>,
    /// The schema could not be typed: the signature is `(**kwargs: Any)`.
    pub variadic_kwargs: bool,
    /// Why the input schema could not be read, when it could not: the
    /// function still takes `**kwargs`, and `describe_tool` says so.
    pub untyped: Option<&'static str>,
    /// From the output schema; `None` when there is none (the call then returns the text).
    pub return_hint: Option<String>,
    /// The output schema is FastMCP's `{"result": T}` wrapper around a plain
    /// value: calls return the inner value and the signature shows `T`.
    pub unwrap_result: bool,
    /// First sentence of the description, one line.
    pub summary: String,
    pub description: String,
    pub input_schema: Schema,
    pub output_schema: Option<Schema>,
    pub read_only: bool,
    /// `allow` or `ask` (denied tools are not in the SDK).
    pub policy: Decision,
    /// The plain name this function would have, had another server's tool
    /// not mapped to it too (see [`naming::function_names`]).
    pub renamed_from: Option<String>,
}

/// One parameter of an [`SdkFunction`].
#[derive(Debug, Clone, PartialEq)]
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

impl SdkFunction {
    pub(super) fn new(tool: &ToolDef, py_name: String) -> SdkFunction {
        let typed = typed_params(&tool.input_schema);
        let untyped = typed.as_ref().err().copied();
        let (params, variadic_kwargs) = match typed {
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
            untyped,
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
            summary: summary(&tool.description),
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
            output_schema: tool.output_schema.clone(),
            read_only: tool.read_only,
            policy: tool.policy,
            renamed_from: None,
        }
    }

    /// `name(a: float, b: float = 1) -> str`, as shown to the agent.
    pub fn signature(&self) -> String {
        self.signature_returning(self.return_hint.as_deref().unwrap_or("str"))
    }

    pub(super) fn signature_returning(&self, returns: &str) -> String {
        format!("{} -> {returns}", self.call_signature(usize::MAX))
    }

    /// `name(a: float, b: float = 1)`, without the return annotation; defaults longer than
    /// `max_default` characters are shown as `...`.
    pub(super) fn call_signature(&self, max_default: usize) -> String {
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

    /// Everything about the function, for `describe_tool`.
    pub(super) fn describe(&self) -> Value {
        let parameters: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                json!({
                    "name": p.py_name,
                    "type": p.type_hint,
                    "required": p.required,
                    "default": p.default,
                    "description": p.description,
                })
            })
            .collect();
        let mut described = json!({
            "name": self.py_name,
            "server": self.server,
            "tool": self.tool,
            "signature": self.signature(),
            "description": self.description,
            "parameters": parameters,
            "input_schema": *self.input_schema,
            "output_schema": self.output_schema.as_deref(),
            "read_only": self.read_only,
        });
        if let Some(plain) = &self.renamed_from {
            described["renamed"] = json!(format!(
                "renamed from {plain}: tools of more than one server map to that name, so none has \
                 it; this function calls the tool '{}' of server '{}'",
                self.tool, self.server
            ));
        }
        if let (Some(reason), Some(map)) = (self.untyped, described.as_object_mut()) {
            map.insert(
                "note".to_owned(),
                json!(format!(
                    "the gateway cannot read this input schema ({reason}), so the function takes \
                     keyword arguments unchecked: pass what input_schema asks for, by its names"
                )),
            );
        }
        described
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
    let mut required: HashSet<String> = types::required_names(top)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let merged = if props.is_empty() {
        all_of_properties(&ctx, obj, &mut required)
    } else {
        Map::new()
    };
    let props = if merged.is_empty() { props } else { &merged };
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

/// The properties of an object composed with `allOf` (as OpenAPI writes inheritance), each
/// member resolved through `$ref`; their `required` names go into `required`. Empty when a
/// member is no plain object schema: such a composition is not read.
fn all_of_properties(
    ctx: &TypeCtx<'_>,
    obj: &Map<String, Value>,
    required: &mut HashSet<String>,
) -> Map<String, Value> {
    let mut merged = Map::new();
    let Some(members) = obj.get("allOf").and_then(Value::as_array) else {
        return merged;
    };
    if ["anyOf", "oneOf", "not", "if"]
        .iter()
        .any(|k| obj.contains_key(*k))
    {
        return merged;
    }
    for member in members {
        let member = ctx.resolve_top(member);
        let props = match member.get("properties") {
            Some(Value::Object(props)) => props,
            None if member.is_object()
                && !["$ref", "anyOf", "oneOf", "allOf", "not", "if"]
                    .iter()
                    .any(|k| member.get(*k).is_some()) =>
            {
                continue;
            }
            _ => return Map::new(),
        };
        for (name, prop) in props {
            merged.entry(name.clone()).or_insert_with(|| prop.clone());
        }
        required.extend(types::required_names(member).into_iter().map(str::to_owned));
    }
    merged
}

fn param(ctx: &TypeCtx<'_>, wire: &str, prop: &Value, py_name: String, required: bool) -> Param {
    let resolved = ctx.resolve_top(prop);
    let field = |key: &str| prop.get(key).or_else(|| resolved.get(key));
    let default = if required {
        None
    } else {
        field("default").cloned()
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
            .map(one_line)
            .unwrap_or_default(),
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
