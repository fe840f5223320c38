//! The pre-flight's schema check at run time: a tool call whose argument
//! values the published schema rules out raises the `TypeError` the
//! pre-flight check would have reported, before anything reaches the
//! server. The check reports a literal only where no handler catches it;
//! this raises it where one does (or where the value came from a variable),
//! so the handler runs as it would in CPython against the same catalog.

use serde_json::{Map, Value};

use super::Problem;
use super::schema::Checker;
use super::shape::Shape;
use codemcp_sdk::SdkFunction;

/// Values nested deeper than this are not looked into (as literals are not).
const MAX_DEPTH: usize = 32;

/// The `TypeError` message of a call of `function` with the bound JSON
/// arguments `args` (by wire name), when its schema rules one out.
pub fn argument_problem(function: &SdkFunction, args: &Map<String, Value>) -> Option<String> {
    let checker = Checker::new(&function.input_schema);
    for param in &function.params {
        let Some(value) = args.get(&param.wire_name) else {
            continue;
        };
        let shape = shape_of(value, 0);
        if !param.required && shape == Shape::Null {
            continue;
        }
        let Some(schema) = checker.property(&param.wire_name) else {
            continue;
        };
        if let Some(fault) = checker.fault(schema, &shape) {
            let problem = Problem::Schema {
                function: function.py_name.clone(),
                argument: param.py_name.clone(),
                fault,
            };
            return Some(problem.to_string());
        }
    }
    None
}

/// A JSON value as the shape of a literal with that value.
fn shape_of(value: &Value, depth: usize) -> Shape<'_> {
    if depth > MAX_DEPTH {
        return Shape::Unknown;
    }
    match value {
        Value::Null => Shape::Null,
        Value::Bool(b) => Shape::Bool(*b),
        Value::Number(n) if n.is_f64() => Shape::Float,
        Value::Number(n) => Shape::Int(n.as_i64()),
        Value::String(text) => Shape::Str(Some(text)),
        Value::Array(items) => Shape::List {
            items: Some(items.iter().map(|v| shape_of(v, depth + 1)).collect()),
            tuple: false,
        },
        Value::Object(entries) => Shape::Dict {
            entries: entries
                .iter()
                .map(|(k, v)| (k.as_str(), shape_of(v, depth + 1)))
                .collect(),
            open: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemcp_sdk::Sdk;
    use codemcp_sdk::tooldef::ToolDef;
    use serde_json::json;

    #[test]
    fn values_the_schema_rules_out_read_as_the_pre_flight_reports_them() {
        let sdk = Sdk::build(&[ToolDef::with_schema(
            "odd",
            "tune",
            json!({"type": "object", "properties": {
                "mode": {"enum": ["fast", "slow"]},
                "value": {"type": "integer"},
                "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}},
                "required": ["mode"]}),
        )]);
        let tune = sdk.get("odd_tune").expect("a tool");
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(
            argument_problem(tune, &args(json!({"mode": "medium"}))).as_deref(),
            Some("odd_tune() argument 'mode' must be 'fast' or 'slow', not 'medium'")
        );
        assert_eq!(
            argument_problem(tune, &args(json!({"mode": "fast", "tags": [1]}))).as_deref(),
            Some("odd_tune() argument 'tags' at [0] must be str, not int")
        );
        for fine in [
            json!({"mode": "slow", "value": 3}),
            json!({"mode": "slow", "value": "3"}),
            json!({"mode": "slow", "value": 3.0, "tags": null}),
        ] {
            assert_eq!(argument_problem(tune, &args(fine.clone())), None, "{fine}");
        }
    }
}
