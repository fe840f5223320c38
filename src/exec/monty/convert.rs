//! Value conversion between JSON (what MCP speaks) and Monty objects.

use monty_types::{MontyObject, ObjectRef};
use serde_json::{Map, Number, Value};

/// Deeper values are refused rather than risking the native stack.
const MAX_DEPTH: usize = 256;

/// Why a Python value could not become JSON; the text is shown to the agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotJson(pub String);

/// JSON → Monty: objects become dicts, arrays lists, numbers int or float.
pub fn to_monty(value: &Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::none(),
        Value::Bool(b) => MontyObject::bool(*b),
        Value::Number(n) => number_to_monty(n),
        Value::String(s) => MontyObject::string(s.as_str()),
        Value::Array(items) => MontyObject::list(items.iter().map(to_monty)),
        Value::Object(map) => MontyObject::dict(
            map.iter()
                .map(|(k, v)| (MontyObject::string(k.as_str()), to_monty(v))),
        ),
    }
}

fn number_to_monty(n: &Number) -> MontyObject {
    if let Some(i) = n.as_i64() {
        MontyObject::int(i)
    } else if let Some(u) = n.as_u64() {
        MontyObject::bigint(u.into())
    } else {
        MontyObject::float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// Monty → JSON, as `json.dumps` would see it: tuples and sets become arrays,
/// dict keys that are numbers/bools/None become strings, dates and decimals
/// their `str()`, and simple class instances (dataclasses) objects of their fields.
pub fn to_json(value: &MontyObject) -> Result<Value, NotJson> {
    ref_to_json(value.as_ref(), 0)
}

/// [`to_json`] for a borrowed value, such as a call argument.
pub fn json_of(value: ObjectRef<'_>) -> Result<Value, NotJson> {
    ref_to_json(value, 0)
}

fn ref_to_json(v: ObjectRef<'_>, depth: usize) -> Result<Value, NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson(format!(
            "value is nested more than {MAX_DEPTH} levels deep"
        )));
    }
    let type_name = v.type_name();
    Ok(match type_name {
        "NoneType" => Value::Null,
        "bool" => Value::Bool(v.as_bool().unwrap_or(false)),
        "int" => match v.as_int() {
            Some(i) => Value::from(i),
            None => big_int(&v)?,
        },
        "float" => {
            let f = v.as_float().unwrap_or(f64::NAN);
            Value::Number(
                Number::from_f64(f)
                    .ok_or_else(|| NotJson(format!("float {f} (NaN/infinity) has no JSON form")))?,
            )
        }
        "str" => Value::String(v.as_str().unwrap_or_default().to_owned()),
        "list" | "tuple" | "set" | "frozenset" | "namedtuple" => {
            let items = v.items().unwrap_or_default();
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(ref_to_json(item, depth + 1)?);
            }
            Value::Array(out)
        }
        "dict" => pairs_to_object(&v, depth)?,
        "date" | "datetime" | "time" | "timedelta" | "timezone" | "Decimal" | "PosixPath" => {
            Value::String(v.to_owned().to_string())
        }
        "bytes"
        | "complex"
        | "function"
        | "builtin_function_or_method"
        | "module"
        | "type"
        | "cycle"
        | "repr"
        | "Exception"
        | "ellipsis"
        | "NotImplementedType" => {
            return Err(NotJson(format!(
                "a value of type '{type_name}' has no JSON form"
            )));
        }
        _ if v.pairs().is_some() => pairs_to_object(&v, depth)?,
        _ => {
            return Err(NotJson(format!(
                "a value of type '{type_name}' has no JSON form"
            )));
        }
    })
}

/// The same words as the CPython worker's (worker/bootstrap.py).
const BIG_INT: &str = "integer too large for JSON (JSON numbers hold 64 bits): return str() of it";

fn big_int(v: &ObjectRef<'_>) -> Result<Value, NotJson> {
    let text = v.to_owned().to_string();
    // Past 64 bits a JSON number is read back as a float on the way out, so
    // the value would silently change: refuse, as the CPython engine does.
    if let Ok(u) = text.parse::<u64>() {
        return Ok(Value::from(u));
    }
    Err(NotJson(BIG_INT.into()))
}

fn pairs_to_object(v: &ObjectRef<'_>, depth: usize) -> Result<Value, NotJson> {
    let mut map = Map::new();
    for (key, value) in v.pairs().unwrap_or_default() {
        let key = match key.type_name() {
            "str" => key.as_str().unwrap_or_default().to_owned(),
            "int" | "float" | "bool" | "NoneType" => match ref_to_json(key, depth + 1)? {
                Value::Null => "null".to_owned(),
                other => other.to_string(),
            },
            other => {
                return Err(NotJson(format!(
                    "dict keys must be str, int, float, bool or None, not '{other}'"
                )));
            }
        };
        map.insert(key, ref_to_json(value, depth + 1)?);
    }
    Ok(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_monty() {
        let v =
            json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}, "big": 18446744073709551615u64});
        let back = to_json(&to_monty(&v)).expect("converts");
        assert_eq!(back["a"], json!([1, 2.5, "x", null, true]));
        assert_eq!(back["b"], json!({"c": -3}));
        assert_eq!(back["big"].as_u64(), Some(u64::MAX));
    }

    #[test]
    fn tuples_and_sets_become_arrays_and_keys_become_strings() {
        let t = MontyObject::tuple([MontyObject::int(1), MontyObject::string("a")]);
        assert_eq!(to_json(&t), Ok(json!([1, "a"])));
        let d = MontyObject::dict([(MontyObject::int(7), MontyObject::bool(true))]);
        assert_eq!(to_json(&d), Ok(json!({"7": true})));
    }

    #[test]
    fn values_without_json_form_are_named() {
        let err = to_json(&MontyObject::bytes(b"x".to_vec())).expect_err("bytes");
        assert!(err.0.contains("'bytes'"), "{err}");
        let err = to_json(&MontyObject::float(f64::NAN)).expect_err("nan");
        assert!(err.0.contains("NaN"), "{err}");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let mut v = MontyObject::none();
        for _ in 0..(MAX_DEPTH + 10) {
            v = MontyObject::list([v]);
        }
        assert!(to_json(&v).is_err());
    }
}
