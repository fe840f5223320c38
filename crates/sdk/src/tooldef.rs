//! What the gateway knows about one upstream tool, whichever transport listed it, and
//! independent of Python.

use crate::policy::Decision;
use std::ops::Deref;
use std::sync::Arc;

use serde_json::{Map, Value};

/// How many levels of arrays and objects a tool's schema keeps; every non-empty array or
/// object below them is replaced by `{}` (a schema that accepts anything).
///
/// Why 64: upstream schemas arrive through a JSON reader that stops at 128 levels for the
/// whole message, so they are never deeper than that anyway, and real ones are a handful of
/// levels deep. The SDK looks far less deep (type hints stop 16 schema levels down, defaults
/// at 8), so the cut changes no signature, description, stub or search result, only the raw
/// schema `describe_tool` shows. What it buys: every walk over a schema, the SDK's as well as
/// `Clone`, `Drop`, `==` and serialization, may simply recurse.
pub const MAX_SCHEMA_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub server: String,      // config name of the upstream, e.g. "everything"
    pub name: String,        // the tool's own name, e.g. "get-sum"
    pub description: String, // may be empty, multi-line, very long
    pub input_schema: Schema,
    pub output_schema: Option<Schema>,
    pub read_only: bool, // annotations.readOnlyHint == true
    /// `annotations.destructiveHint == true`, said explicitly (not the spec's default).
    pub destructive: bool,
    /// What agent code may do with it; set by the catalog from the server's policy.
    pub policy: Decision,
}

impl ToolDef {
    /// A tool with only a name and an input schema: no description, output
    /// schema or annotations, allowed (tests, fuzz targets and benches build
    /// catalogs this way).
    pub fn with_schema(server: &str, name: &str, input_schema: Value) -> ToolDef {
        ToolDef {
            server: server.into(),
            name: name.into(),
            description: String::new(),
            input_schema: input_schema.into(),
            output_schema: None,
            read_only: false,
            destructive: false,
            policy: Decision::Allow,
        }
    }

    /// A tool as an upstream listed it. Here its schemas enter the gateway, so here they are
    /// cut to [`MAX_SCHEMA_DEPTH`], with a warning naming the tool when that cut anything.
    pub fn from_mcp(server: &str, tool: rmcp::model::Tool) -> ToolDef {
        let name = tool.name.into_owned();
        let mut cut = false;
        let mut schema = |object: Arc<Map<String, Value>>| {
            let (schema, cut_here) = Schema::capped(Value::Object(Arc::unwrap_or_clone(object)));
            cut |= cut_here;
            schema
        };
        let input_schema = schema(tool.input_schema);
        let output_schema = tool.output_schema.map(schema);
        if cut {
            tracing::warn!(
                target: "codemcp::upstream",
                %server,
                tool = %name,
                "a schema nests deeper than {MAX_SCHEMA_DEPTH} levels; below them it accepts any value"
            );
        }
        ToolDef {
            server: server.to_owned(),
            name,
            description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
            input_schema,
            output_schema,
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            destructive: tool
                .annotations
                .and_then(|a| a.destructive_hint)
                .unwrap_or(false),
            policy: Decision::Allow,
        }
    }
}

/// A tool's JSON Schema: usually an object schema, but it may be anything, even garbage. It
/// is never deeper than [`MAX_SCHEMA_DEPTH`] levels, and it is shared: a clone costs a
/// reference count.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema(Arc<Value>);

impl Schema {
    /// `value` cut to [`MAX_SCHEMA_DEPTH`] levels, and whether that cut anything.
    pub fn capped(mut value: Value) -> (Schema, bool) {
        let mut cut = Vec::new();
        cut_below(&mut value, MAX_SCHEMA_DEPTH, &mut cut);
        let cut_any = !cut.is_empty();
        drop_flat(cut);
        (Schema(Arc::new(value)), cut_any)
    }
}

/// Cut to [`MAX_SCHEMA_DEPTH`] levels without a word; upstream tools go through
/// [`ToolDef::from_mcp`], which tells.
impl From<Value> for Schema {
    fn from(value: Value) -> Schema {
        Schema::capped(value).0
    }
}

impl Deref for Schema {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

/// Keeps `levels` levels of arrays and objects, counting `value`'s own, and moves every
/// non-empty one below them into `cut`, leaving `{}`. Recurses at most `levels` deep.
fn cut_below(value: &mut Value, levels: usize, cut: &mut Vec<Value>) {
    let holds_something = match value {
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
        _ => false,
    };
    if !holds_something {
        return;
    }
    let Some(below) = levels.checked_sub(1) else {
        cut.push(std::mem::replace(value, Value::Object(Map::new())));
        return;
    };
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| cut_below(v, below, cut)),
        Value::Object(map) => map.values_mut().for_each(|v| cut_below(v, below, cut)),
        _ => {}
    }
}

/// Frees what [`cut_below`] cut off, however deep, without recursing: `Value`'s own drop
/// recurses once per level, and only values built in-process (never read from JSON) can be
/// deep enough for that to matter.
fn drop_flat(mut pending: Vec<Value>) {
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_values()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Levels of arrays and objects in `value`, its own included.
    fn depth(value: &Value) -> usize {
        let below = match value {
            Value::Array(items) => items.iter().map(depth).max(),
            Value::Object(map) => map.values().map(depth).max(),
            _ => return 0,
        };
        1 + below.unwrap_or(0)
    }

    /// Arrays and objects in turn, `levels` deep. Built by hand: `json!` serializes what it
    /// is given, recursing.
    fn nested(levels: usize) -> Value {
        let mut value = json!("leaf");
        for i in 0..levels {
            value = if i % 2 == 0 {
                Value::Array(vec![value])
            } else {
                Value::Object(Map::from_iter([("k".to_owned(), value)]))
            };
        }
        value
    }

    #[test]
    fn schemas_within_the_depth_are_kept_as_they_are() {
        for levels in [0, 1, 63, MAX_SCHEMA_DEPTH] {
            let value = nested(levels);
            let (schema, cut) = Schema::capped(value.clone());
            assert!(!cut, "{levels}");
            assert_eq!(*schema, value);
        }
        let (_, cut) = Schema::capped(json!({"a": nested(MAX_SCHEMA_DEPTH - 1), "b": {}}));
        assert!(!cut);
    }

    #[test]
    fn deeper_parts_become_any_value() {
        let (schema, cut) = Schema::capped(
            json!({"type": "object", "properties": {"x": nested(MAX_SCHEMA_DEPTH)}}),
        );
        assert!(cut);
        assert_eq!(depth(&schema), MAX_SCHEMA_DEPTH + 1);
        let mut bottom = &schema["properties"]["x"];
        while let Some(next) = bottom.get(0).or_else(|| bottom.get("k")) {
            bottom = next;
        }
        assert_eq!(*bottom, json!({}));
        // An empty array or object holds nothing deeper: it stays, however deep.
        let mut empty_at_the_bottom = json!([]);
        for _ in 0..MAX_SCHEMA_DEPTH {
            empty_at_the_bottom = Value::Array(vec![empty_at_the_bottom]);
        }
        let (schema, cut) = Schema::capped(empty_at_the_bottom.clone());
        assert!(!cut);
        assert_eq!(*schema, empty_at_the_bottom);
    }

    #[test]
    fn ten_thousand_levels_are_cut_and_freed_on_a_small_stack() {
        let small_stack = std::thread::Builder::new().stack_size(128 * 1024);
        let capped = small_stack.spawn(|| {
            let (schema, cut) = Schema::capped(nested(10_000));
            assert!(cut);
            depth(&schema)
        });
        assert_eq!(
            capped.expect("spawn").join().ok(),
            Some(MAX_SCHEMA_DEPTH + 1)
        );
    }
}
