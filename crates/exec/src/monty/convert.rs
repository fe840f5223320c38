//! Value conversion between JSON (what MCP speaks) and Monty objects.

use monty_types::unstable::{self, MontyNode};
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
/// their `str()`, and dataclass instances objects of their fields. Any other
/// value (an instance, a class, a function, a cycle) has no JSON form.
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
    if let MontyNode::ClassInstance { .. } = unstable::node(v) {
        // Before the type's name: a class may be named `dict` or `str`.
        return if is_dataclass_instance(v) {
            pairs_to_object(&v, depth)
        } else {
            Err(no_json_form(v))
        };
    }
    Ok(match v.type_name() {
        "NoneType" => Value::Null,
        "bool" => Value::Bool(v.as_bool().unwrap_or(false)),
        "int" => match v.as_int() {
            Some(i) => Value::from(i),
            None => big_int(&v)?,
        },
        "float" => {
            let f = v.as_float().unwrap_or(f64::NAN);
            Value::Number(Number::from_f64(f).ok_or_else(|| {
                NotJson(format!(
                    "float {} (NaN/infinity) has no JSON form",
                    py_float(f)
                ))
            })?)
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
        _ => return Err(no_json_form(v)),
    })
}

/// Whether `v` is an instance of a dataclass: the one kind of instance that
/// has a JSON form (its fields), as in the CPython engine. Monty's public
/// accessors do not say; its node does (`monty-types` is pinned exactly).
fn is_dataclass_instance(v: ObjectRef<'_>) -> bool {
    match unstable::node(v) {
        MontyNode::ClassInstance { class_type, .. } => matches!(
            unstable::node(unstable::child(v, *class_type)),
            MontyNode::ClassType(class) if class.is_dataclass
        ),
        _ => false,
    }
}

/// Why `v` has no JSON form, naming its Python type as CPython would, in the
/// same words as the CPython worker (`worker/bootstrap.py`).
fn no_json_form(v: ObjectRef<'_>) -> NotJson {
    let what = match unstable::node(v) {
        MontyNode::Cycle(_) => return NotJson(CYCLE.into()),
        MontyNode::Repr(text) if text == "<deeply nested>" => {
            return NotJson(format!("value is nested more than {MAX_DEPTH} levels deep"));
        }
        MontyNode::Repr(text) if text.starts_with("<class '") => {
            let name = text.trim_start_matches("<class '").trim_end_matches("'>");
            format!("the class '{}'", short_name(name))
        }
        MontyNode::Repr(text) => match type_of_repr(text) {
            Some(name) => format!("a value of type '{name}'"),
            None => format!("the value {text}"),
        },
        MontyNode::ClassInstance { .. } => format!("a '{}' instance", v.type_name()),
        MontyNode::Exception { exc_type, .. } => format!("a '{exc_type}' instance"),
        MontyNode::ClassType(class) => format!("the class '{}'", class.name),
        MontyNode::Type(ty) => format!("the class '{}'", short_name(ty.name())),
        _ => format!("a value of type '{}'", v.type_name()),
    };
    NotJson(format!("{what} has no JSON form"))
}

/// The same words as the CPython worker's (worker/bootstrap.py).
const CYCLE: &str = "the value contains itself (a reference cycle), which JSON cannot hold";

/// `datetime.date` → `date`, as `type(x).__name__` gives it.
fn short_name(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The type named by a value's repr where Monty exports only that:
/// `<list_iterator object>`, `<coroutine object f>`, `<module 'm'>`,
/// `<bound method …>`, `range(0, 3)`.
fn type_of_repr(text: &str) -> Option<&str> {
    if let Some(inner) = text.strip_prefix('<') {
        let word = inner.split([' ', '>']).next().unwrap_or_default();
        return match word {
            "" => None,
            "bound" => Some("method"),
            other => Some(other),
        };
    }
    let word = text.split('(').next().unwrap_or_default();
    (!word.is_empty() && word.len() < text.len() && word.chars().all(|c| c.is_ascii_lowercase()))
        .then_some(word)
}

/// The same words as the CPython worker's (worker/bootstrap.py).
const BIG_INT: &str = "integer too large for JSON (JSON numbers hold 64 bits): return str() of it";

/// A NaN or infinity as Python writes it (`nan`, `inf`, `-inf`).
fn py_float(f: f64) -> &'static str {
    if f.is_nan() {
        "nan"
    } else if f > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

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

    fn instance(class: &str, dataclass: bool) -> MontyObject {
        let attrs = [(MontyObject::string("x"), MontyObject::int(1))];
        let class = MontyObject::class_type(
            class,
            monty_types::MontyUuid::from_u128(1),
            false,
            dataclass,
            [],
        );
        MontyObject::class_instance(class, monty_types::MontyUuid::from_u128(2), attrs)
    }

    #[test]
    fn only_dataclass_instances_become_objects_as_in_cpython() {
        assert_eq!(to_json(&instance("Point", true)), Ok(json!({"x": 1})));
        let err = to_json(&instance("Foo", false)).expect_err("a plain instance");
        assert_eq!(err.0, "a 'Foo' instance has no JSON form");
        // A class named like a builtin is still an instance.
        let err = to_json(&instance("dict", false)).expect_err("a plain instance");
        assert_eq!(err.0, "a 'dict' instance has no JSON form");
    }

    #[test]
    fn values_without_json_form_are_named_by_their_python_type() {
        let cycle = MontyObject::list([MontyObject::cycle("[...]")]);
        assert_eq!(to_json(&cycle).expect_err("cycle").0, CYCLE);
        let said = |repr: &str| to_json(&MontyObject::repr(repr)).expect_err("repr").0;
        assert_eq!(
            said("<list_iterator object>"),
            "a value of type 'list_iterator' has no JSON form"
        );
        assert_eq!(
            said("<coroutine object main>"),
            "a value of type 'coroutine' has no JSON form"
        );
        assert_eq!(
            said("range(0, 3)"),
            "a value of type 'range' has no JSON form"
        );
        assert_eq!(said("<class 'Foo'>"), "the class 'Foo' has no JSON form");
        assert!(!said("<deeply nested>").contains("repr"));
        let err = to_json(&MontyObject::function("f", None)).expect_err("function");
        assert_eq!(err.0, "a value of type 'function' has no JSON form");
        let err = to_json(&MontyObject::float(f64::INFINITY)).expect_err("inf");
        assert_eq!(err.0, "float inf (NaN/infinity) has no JSON form");
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
