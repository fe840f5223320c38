//! Whether a JSON Schema surely rules out an argument's [`Shape`]: schemas as
//! people publish them (pydantic's `anyOf`/`$defs`, zod's `$ref`s into
//! `#/properties/…`, OpenAPI's `nullable` and `allOf`, type lists).
//!
//! It says "ruled out" only when every value of that shape fails, and under
//! the laxest common validator (pydantic turns `"5"` into 5 and `1` into
//! `True`). Keywords it does not read (`not`, `if`, `pattern`, bounds…) can
//! only narrow a schema, so leaving them out can only let a call through.
//! `$ref` cycles and fan-out are bounded: past the bounds, nothing is said.

use std::cell::Cell;
use std::fmt;

use serde_json::{Map, Value};

use super::shape::{Shape, py_repr_str};

/// `$ref`s followed in a row without going one level into the argument.
const MAX_REFS_IN_A_ROW: u32 = 8;
/// Schema nodes one argument's check may visit: unions of unions through
/// shared `$defs` fan out, and past this the argument is let through.
const VISIT_BUDGET: u32 = 4_000;
/// Values of an `enum` listed in a message; more are counted.
const LISTED_VALUES: usize = 8;

/// Where in an argument a fault is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// Why the schema rules an argument out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// `expected` lists Python type names or, when `by_value`, values.
    Type {
        expected: Vec<String>,
        given: String,
        by_value: bool,
    },
    MissingKey(String),
    UnexpectedKey {
        key: String,
        valid: Vec<String>,
    },
}

/// A fault at `path` inside the argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub path: Vec<Step>,
    pub why: Why,
}

impl Fault {
    fn at(why: Why) -> Fault {
        Fault {
            path: Vec::new(),
            why,
        }
    }

    fn under(mut self, step: Step) -> Fault {
        self.path.insert(0, step);
        self
    }

    /// A const or enum mismatch: in a union, the branch it came from is
    /// likely one the caller did not mean.
    fn by_value(&self) -> bool {
        matches!(self.why, Why::Type { by_value: true, .. })
    }
}

/// ` at ['a'][0] must be str, not int`, to follow `argument 'x'`.
impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            f.write_str(" at ")?;
            for step in &self.path {
                match step {
                    Step::Key(key) => write!(f, "[{}]", py_repr_str(key))?,
                    Step::Index(i) => write!(f, "[{i}]")?,
                }
            }
        }
        match &self.why {
            Why::Type {
                expected, given, ..
            } => write!(f, " must be {}, not {given}", or_list(expected)),
            Why::MissingKey(key) => write!(f, " is missing the required key {}", py_repr_str(key)),
            Why::UnexpectedKey { key, valid } => write!(
                f,
                " has an unexpected key {} (valid: {})",
                py_repr_str(key),
                valid.join(", ")
            ),
        }
    }
}

/// `a`, `a or b`, `a, b or c`; long lists are cut.
fn or_list(items: &[String]) -> String {
    let mut shown: Vec<&str> = items
        .iter()
        .take(LISTED_VALUES)
        .map(String::as_str)
        .collect();
    let more = items.len().saturating_sub(LISTED_VALUES);
    let more_text = format!("one of {more} more");
    if more > 0 {
        shown.push(&more_text);
    }
    match shown.as_slice() {
        [] => "nothing".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Checks arguments against schemas inside one root document (for `$ref`).
pub struct Checker<'s> {
    root: &'s Value,
    budget: Cell<u32>,
}

impl<'s> Checker<'s> {
    pub fn new(root: &'s Value) -> Self {
        Checker {
            root,
            budget: Cell::new(VISIT_BUDGET),
        }
    }

    /// The fault of `shape` against `schema`, if the schema surely rules it out.
    pub fn fault(&self, schema: &Value, shape: &Shape<'_>) -> Option<Fault> {
        self.budget.set(VISIT_BUDGET);
        self.check(schema, shape, 0)
    }

    /// The schema of the root's property `name`: looked up through `$ref`s
    /// and `allOf` members (OpenAPI composes objects that way).
    pub fn property(&self, name: &str) -> Option<&'s Value> {
        self.find_property(self.root, name, 0)
    }

    fn find_property(&self, schema: &'s Value, name: &str, refs: u32) -> Option<&'s Value> {
        if refs > MAX_REFS_IN_A_ROW {
            return None;
        }
        let obj = schema.as_object()?;
        if let Some(found) = obj.get("properties").and_then(|p| p.get(name)) {
            return Some(found);
        }
        if let Some(target) = obj.get("$ref").and_then(|r| self.lookup(r))
            && let Some(found) = self.find_property(target, name, refs + 1)
        {
            return Some(found);
        }
        obj.get("allOf")
            .and_then(Value::as_array)?
            .iter()
            .find_map(|member| self.find_property(member, name, refs + 1))
    }

    /// A local JSON pointer (`#/$defs/X`, `#/properties/a/items`), with
    /// percent-escapes undone as URI fragments may carry them.
    fn lookup(&self, reference: &Value) -> Option<&'s Value> {
        let pointer = reference.as_str()?.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(pointer).or_else(|| {
            let decoded = percent_encoding::percent_decode_str(pointer)
                .decode_utf8()
                .ok()?;
            self.root.pointer(&decoded)
        })
    }

    fn check(&self, schema: &Value, shape: &Shape<'_>, refs: u32) -> Option<Fault> {
        if matches!(shape, Shape::Unknown) {
            return None;
        }
        let left = self.budget.get().checked_sub(1)?;
        self.budget.set(left);
        let obj = schema.as_object()?;
        // OpenAPI's `nullable` widens whatever sits next to it, `$ref` included.
        if matches!(shape, Shape::Null) && obj.get("nullable") == Some(&Value::Bool(true)) {
            return None;
        }
        if let Some(reference) = obj.get("$ref") {
            if refs >= MAX_REFS_IN_A_ROW {
                return None;
            }
            if let Some(fault) = self
                .lookup(reference)
                .and_then(|t| self.check(t, shape, refs + 1))
            {
                return Some(fault);
            }
        }
        if let Some(fault) = local(obj, shape) {
            return Some(fault);
        }
        if let Some(all) = obj.get("allOf").and_then(Value::as_array)
            && let Some(fault) = all.iter().find_map(|m| self.check(m, shape, refs + 1))
        {
            return Some(fault);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(alternatives) = obj.get(key).and_then(Value::as_array)
                && let Some(fault) = self.union(alternatives, shape, refs)
            {
                return Some(fault);
            }
        }
        match shape {
            Shape::Dict { entries, open } => self.object(obj, entries, *open),
            Shape::List {
                items: Some(items), ..
            } => self.array(obj, items),
            _ => None,
        }
    }

    /// The fault when no alternative admits `shape`: the one the caller most
    /// likely meant, or all of them merged when they fault at one place.
    fn union(&self, alternatives: &[Value], shape: &Shape<'_>, refs: u32) -> Option<Fault> {
        let mut faults = Vec::with_capacity(alternatives.len());
        for alternative in alternatives {
            faults.push(self.check(alternative, shape, refs + 1)?);
        }
        let first = faults.first()?.clone();
        let same_place = faults
            .iter()
            .all(|f| f.path == first.path && matches!(f.why, Why::Type { .. }));
        if same_place {
            let mut expected: Vec<String> = Vec::new();
            let mut all_by_value = true;
            for fault in &faults {
                if let Why::Type {
                    expected: e,
                    by_value,
                    ..
                } = &fault.why
                {
                    all_by_value &= *by_value;
                    for item in e {
                        if !expected.contains(item) {
                            expected.push(item.clone());
                        }
                    }
                }
            }
            // A value the schema lists is shown as a value, else by its type.
            let any_by_value = faults.iter().any(Fault::by_value);
            let given = shape_at(shape, &first.path).map_or_else(
                || "object".to_owned(),
                |s| {
                    s.repr()
                        .filter(|_| any_by_value)
                        .unwrap_or_else(|| s.python_name().to_owned())
                },
            );
            return Some(Fault {
                path: first.path,
                why: Why::Type {
                    expected,
                    given,
                    by_value: all_by_value,
                },
            });
        }
        let meant = faults.iter().filter(|f| !f.by_value());
        let deepest = |a: &&Fault, b: &&Fault| a.path.len().cmp(&b.path.len());
        meant
            .clone()
            .rev()
            .max_by(deepest)
            .or_else(|| faults.iter().rev().max_by(deepest))
            .cloned()
    }

    fn object(
        &self,
        obj: &Map<String, Value>,
        entries: &[(&str, Shape<'_>)],
        open: bool,
    ) -> Option<Fault> {
        let properties = obj.get("properties").and_then(Value::as_object);
        let additional = obj.get("additionalProperties");
        let patterns = obj.contains_key("patternProperties");
        for (key, value) in entries {
            let schema = match properties.and_then(|p| p.get(*key)) {
                Some(schema) => schema,
                None if patterns => continue,
                None if additional == Some(&Value::Bool(false)) => {
                    let valid = properties
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default();
                    return Some(Fault::at(Why::UnexpectedKey {
                        key: (*key).to_owned(),
                        valid,
                    }));
                }
                None => match additional {
                    Some(schema @ Value::Object(_)) => schema,
                    _ => continue,
                },
            };
            if let Some(fault) = self.check(schema, value, 0) {
                return Some(fault.under(Step::Key((*key).to_owned())));
            }
        }
        if open {
            return None;
        }
        let required = obj.get("required").and_then(Value::as_array)?;
        required
            .iter()
            .filter_map(Value::as_str)
            .find(|name| !entries.iter().any(|(k, _)| k == name))
            .map(|name| Fault::at(Why::MissingKey(name.to_owned())))
    }

    fn array(&self, obj: &Map<String, Value>, items: &[Shape<'_>]) -> Option<Fault> {
        let positional = obj
            .get("prefixItems")
            .or_else(|| obj.get("items").filter(|i| i.is_array()))
            .and_then(Value::as_array);
        let rest = obj.get("items").filter(|i| i.is_object());
        for (i, item) in items.iter().enumerate() {
            let schema = match positional {
                Some(schemas) if i < schemas.len() => schemas.get(i),
                Some(_) if obj.contains_key("prefixItems") => rest,
                Some(_) => None,
                None => rest,
            };
            if let Some(fault) = schema.and_then(|s| self.check(s, item, 0)) {
                return Some(fault.under(Step::Index(i)));
            }
        }
        None
    }
}

/// The part of `shape` at `path`.
fn shape_at<'a, 'b>(shape: &'b Shape<'a>, path: &[Step]) -> Option<&'b Shape<'a>> {
    let Some((step, rest)) = path.split_first() else {
        return Some(shape);
    };
    let inner = match (step, shape) {
        (Step::Key(key), Shape::Dict { entries, .. }) => {
            entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
        }
        (
            Step::Index(i),
            Shape::List {
                items: Some(items), ..
            },
        ) => items.get(*i),
        _ => None,
    }?;
    shape_at(inner, rest)
}

/// The faults of `type`, `const` and `enum` (and OpenAPI's `nullable`).
fn local(obj: &Map<String, Value>, shape: &Shape<'_>) -> Option<Fault> {
    let nullable = obj.get("nullable") == Some(&Value::Bool(true));
    if let Some(types) = obj.get("type") {
        let names: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let readable = !names.is_empty() && names.iter().all(|t| JSON_TYPES.contains(t));
        let admitted =
            nullable && matches!(shape, Shape::Null) || names.iter().any(|t| !mismatched(shape, t));
        if readable && !admitted {
            let mut expected: Vec<String> =
                names.iter().map(|t| python_type(t).to_owned()).collect();
            if nullable {
                expected.push("None".to_owned());
            }
            return Some(Fault::at(Why::Type {
                expected,
                given: shape.python_name().to_owned(),
                by_value: false,
            }));
        }
    }
    let values: Option<&[Value]> = match (obj.get("const"), obj.get("enum")) {
        (Some(value), _) => Some(std::slice::from_ref(value)),
        (None, Some(Value::Array(values))) if !values.is_empty() => Some(values),
        _ => None,
    };
    let values = values?;
    if values.iter().any(|v| admits(v, shape)) || nullable && matches!(shape, Shape::Null) {
        return None;
    }
    let given = shape
        .repr()
        .unwrap_or_else(|| shape.python_name().to_owned());
    let mut expected: Vec<String> = values.iter().map(json_repr).collect();
    if nullable {
        expected.push("None".to_owned());
    }
    Some(Fault::at(Why::Type {
        expected,
        given,
        by_value: true,
    }))
}

const JSON_TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "array", "object", "null",
];

/// Whether no validator accepts a value of `shape` for JSON type `expected`.
pub fn mismatched(shape: &Shape<'_>, expected: &str) -> bool {
    match (shape, expected) {
        (Shape::Unknown, _) | (_, "any") => false,
        (Shape::Null, t) => t != "null",
        (_, "null") => true,
        (Shape::Str(Some(text)), "integer" | "number") => text.trim().parse::<f64>().is_err(),
        (Shape::Str(Some(text)), "boolean") => !BOOLEAN_WORDS
            .iter()
            .any(|w| w.eq_ignore_ascii_case(text.trim())),
        (Shape::Str(_), "array" | "object")
        | (Shape::Int(_) | Shape::Float | Shape::Bool(_), "string" | "array" | "object")
        | (Shape::List { .. }, "string" | "integer" | "number" | "boolean" | "object")
        | (Shape::Dict { .. }, "string" | "integer" | "number" | "boolean" | "array") => true,
        _ => false,
    }
}

/// Strings lax validators read as booleans.
const BOOLEAN_WORDS: &[&str] = &[
    "true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n",
];

/// Whether a validator may accept `shape` where the schema says `value`:
/// equal when both are known and of one kind; else possible unless the types
/// cannot meet (a lax validator may turn `"1"` into `1`).
fn admits(value: &Value, shape: &Shape<'_>) -> bool {
    match (value, shape) {
        (Value::String(v), Shape::Str(Some(s))) => v == s,
        (Value::Bool(v), Shape::Bool(s)) => v == s,
        (Value::Null, Shape::Null) => true,
        (Value::Number(v), Shape::Int(Some(s))) => {
            v.as_i64() == Some(*s) || v.as_f64().is_some_and(|f| f == *s as f64)
        }
        _ => !mismatched(shape, json_type(value)),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A schema's value as Python writes it (short: containers are named by type).
fn json_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_repr_str(s),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "a dict".to_owned(),
    }
}

/// The Python name of JSON type `json`, as the signatures show it.
pub fn python_type(json: &str) -> &str {
    match json {
        "integer" => "int",
        "number" => "float",
        "string" => "str",
        "boolean" => "bool",
        "array" => "list",
        "object" => "dict",
        "null" => "None",
        other => other,
    }
}

#[cfg(test)]
mod tests;
