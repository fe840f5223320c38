//! JSON Schema → Python type hints, and JSON values → Python literals.
//!
//! Schemas arrive bounded in depth, but `$ref`s can still loop or fan out: every walk here is
//! bounded in references followed, in nesting and in nodes visited, and degrades to `Any`.

use std::cell::Cell;

use serde_json::{Map, Value};

use super::naming::is_bindable_identifier;

/// How many `$ref`s one hint may follow in a chain.
const MAX_REF_DEPTH: u32 = 6;
/// How deeply hints may nest (`list[list[...]]`).
const MAX_NESTING: u32 = 16;
/// Schema nodes one hint may visit; guards against fan-out through shared `$defs`.
const VISIT_BUDGET: u32 = 2_000;
/// Longer hints are replaced by their base type (or `Any`): they would only drown the reader.
const MAX_HINT_CHARS: usize = 240;
/// Enums with more values are shown as their base type.
const MAX_ENUM_VALUES: usize = 30;
/// Object return types with more fields are shown as `dict[str, Any]` in signatures.
const MAX_COMPACT_FIELDS: usize = 6;
const MAX_COMPACT_CHARS: usize = 120;
/// Longer or deeper defaults are shown as `...`.
const MAX_LITERAL_CHARS: usize = 120;
const MAX_LITERAL_DEPTH: u32 = 8;

/// One member of a union.
#[derive(Debug, Clone, PartialEq)]
enum Member {
    /// A Python literal, merged with its siblings into one `Literal[...]`.
    Lit(String),
    Ty(String),
    NoneType,
}

/// A union of members, or `Any` (which absorbs everything).
#[derive(Debug, Clone, Default)]
struct Hint {
    any: bool,
    members: Vec<Member>,
}

impl Hint {
    fn any() -> Self {
        Hint {
            any: true,
            members: Vec::new(),
        }
    }

    fn ty(name: impl Into<String>) -> Self {
        Hint {
            any: false,
            members: vec![Member::Ty(name.into())],
        }
    }

    fn add(&mut self, other: Hint) {
        self.any |= other.any;
        for member in other.members {
            if !self.members.contains(&member) {
                self.members.push(member);
            }
        }
    }

    fn is_nullable(&self) -> bool {
        self.members.contains(&Member::NoneType)
    }

    fn render(&self) -> String {
        if self.any || self.members.is_empty() {
            return "Any".to_owned();
        }
        let literals: Vec<&str> = self
            .members
            .iter()
            .filter_map(|m| {
                if let Member::Lit(l) = m {
                    Some(l.as_str())
                } else {
                    None
                }
            })
            .collect();
        let mut parts: Vec<String> = Vec::new();
        let mut literal_done = false;
        for member in &self.members {
            match member {
                Member::Lit(_) if !literal_done => {
                    literal_done = true;
                    parts.push(format!("Literal[{}]", literals.join(", ")));
                }
                Member::Ty(t) => parts.push(t.clone()),
                Member::Lit(_) | Member::NoneType => {}
            }
        }
        if self.is_nullable() {
            parts.push("None".to_owned());
        }
        let rendered = parts.join(" | ");
        if rendered.chars().count() > MAX_HINT_CHARS {
            "Any".to_owned()
        } else {
            rendered
        }
    }
}

/// Turns schemas that live inside one root document (for `$ref`) into hints.
pub struct TypeCtx<'a> {
    root: &'a Value,
    budget: Cell<u32>,
}

impl<'a> TypeCtx<'a> {
    pub fn new(root: &'a Value) -> Self {
        TypeCtx {
            root,
            budget: Cell::new(VISIT_BUDGET),
        }
    }

    /// The Python hint for `schema`.
    pub fn hint(&self, schema: &Value) -> String {
        self.budget.set(VISIT_BUDGET);
        self.walk(schema, 0, 0).render()
    }

    /// The hint for a parameter; `optional_none` adds `| None` (unless the hint is `Any` or
    /// already nullable).
    pub fn param_hint(&self, schema: &Value, optional_none: bool) -> String {
        self.budget.set(VISIT_BUDGET);
        let mut hint = self.walk(schema, 0, 0);
        if optional_none && !hint.any && !hint.members.is_empty() {
            hint.add(Hint {
                any: false,
                members: vec![Member::NoneType],
            });
        }
        hint.render()
    }

    /// Follows `$ref` and single-member `allOf` at the top of `schema`.
    pub fn resolve_top(&self, schema: &'a Value) -> &'a Value {
        let mut current = schema;
        for _ in 0..MAX_REF_DEPTH {
            if let Some(reference) = current.get("$ref").and_then(Value::as_str) {
                match self.lookup(reference) {
                    Some(target) => current = target,
                    None => return current,
                }
            } else if let Some([only]) = current
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                current = only;
            } else {
                return current;
            }
        }
        current
    }

    /// Local JSON pointer refs only (`#`, `#/$defs/X`, `#/definitions/X/properties/y`).
    fn lookup(&self, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(pointer)
    }

    fn walk(&self, schema: &Value, nesting: u32, refs: u32) -> Hint {
        let left = self.budget.get();
        if left == 0 || nesting > MAX_NESTING {
            return Hint::any();
        }
        self.budget.set(left - 1);
        let Some(obj) = schema.as_object() else {
            return Hint::any();
        };
        let mut hint = self.walk_object(obj, nesting, refs);
        if obj.get("nullable").and_then(Value::as_bool) == Some(true) {
            hint.add(Hint {
                any: false,
                members: vec![Member::NoneType],
            });
        }
        hint
    }

    fn walk_object(&self, obj: &Map<String, Value>, nesting: u32, refs: u32) -> Hint {
        if let Some(reference) = obj.get("$ref") {
            return match reference.as_str().and_then(|r| self.lookup(r)) {
                Some(target) if refs < MAX_REF_DEPTH => self.walk(target, nesting + 1, refs + 1),
                _ => Hint::any(),
            };
        }
        if let Some(value) = obj.get("const") {
            return literal_member(value).map_or_else(
                || base_of_values(std::slice::from_ref(value)),
                |m| Hint {
                    any: false,
                    members: vec![m],
                },
            );
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            return self.enum_hint(obj, values, nesting, refs);
        }
        let alternatives: Vec<&Value> = ["anyOf", "oneOf"]
            .iter()
            .filter_map(|k| obj.get(*k).and_then(Value::as_array))
            .flatten()
            .collect();
        if !alternatives.is_empty() {
            let mut hint = Hint::default();
            for alt in alternatives {
                hint.add(self.walk(alt, nesting + 1, refs));
                if hint.any {
                    break;
                }
            }
            return hint;
        }
        if let Some(all) = obj.get("allOf").and_then(Value::as_array)
            && !obj.contains_key("type")
        {
            return self.all_of(all, nesting, refs);
        }
        self.typed(obj, nesting, refs)
    }

    fn enum_hint(
        &self,
        obj: &Map<String, Value>,
        values: &[Value],
        nesting: u32,
        refs: u32,
    ) -> Hint {
        if values.is_empty() {
            return Hint::any();
        }
        if values.len() <= MAX_ENUM_VALUES {
            let members: Option<Vec<Member>> = values.iter().map(literal_member).collect();
            if let Some(members) = members {
                let mut hint = Hint::default();
                hint.add(Hint {
                    any: false,
                    members,
                });
                if hint.render() != "Any" {
                    return hint;
                }
            }
        }
        if obj.contains_key("type") {
            self.typed(obj, nesting, refs)
        } else {
            base_of_values(values)
        }
    }

    fn all_of(&self, all: &[Value], nesting: u32, refs: u32) -> Hint {
        let mut distinct: Vec<String> = Vec::new();
        for member in all {
            let rendered = self.walk(member, nesting + 1, refs).render();
            if rendered != "Any" && !distinct.contains(&rendered) {
                distinct.push(rendered);
            }
        }
        match distinct.as_slice() {
            [only] => Hint::ty(only.clone()),
            _ => Hint::any(),
        }
    }

    fn typed(&self, obj: &Map<String, Value>, nesting: u32, refs: u32) -> Hint {
        match obj.get("type") {
            Some(Value::String(t)) => self.single_type(t, obj, nesting, refs),
            Some(Value::Array(types)) => {
                let mut hint = Hint::default();
                for t in types {
                    match t.as_str() {
                        Some(t) => hint.add(self.single_type(t, obj, nesting, refs)),
                        None => return Hint::any(),
                    }
                }
                hint
            }
            Some(_) => Hint::any(),
            None if obj.contains_key("properties") || obj.contains_key("additionalProperties") => {
                self.single_type("object", obj, nesting, refs)
            }
            None if obj.contains_key("items") || obj.contains_key("prefixItems") => {
                self.single_type("array", obj, nesting, refs)
            }
            None => Hint::any(),
        }
    }

    fn single_type(&self, t: &str, obj: &Map<String, Value>, nesting: u32, refs: u32) -> Hint {
        match t {
            "string" => Hint::ty("str"),
            "integer" => Hint::ty("int"),
            "number" => Hint::ty("float"),
            "boolean" => Hint::ty("bool"),
            "null" => Hint {
                any: false,
                members: vec![Member::NoneType],
            },
            "array" => {
                let item = match obj.get("items") {
                    Some(items @ (Value::Object(_) | Value::Bool(_)))
                        if !obj.contains_key("prefixItems") =>
                    {
                        self.walk(items, nesting + 1, refs).render()
                    }
                    _ => "Any".to_owned(),
                };
                Hint::ty(format!("list[{item}]"))
            }
            "object" => {
                let value = match obj.get("additionalProperties") {
                    Some(ap @ Value::Object(m)) if !m.is_empty() => {
                        self.walk(ap, nesting + 1, refs).render()
                    }
                    _ => "Any".to_owned(),
                };
                Hint::ty(format!("dict[str, {value}]"))
            }
            _ => Hint::any(),
        }
    }

    /// The return annotation for an output schema, as shown in signatures: a compact
    /// `{field: type, ...}` for small object schemas, else the schema's hint.
    pub fn return_hint(&self, output: &'a Value) -> String {
        match self.object_fields(output, MAX_COMPACT_FIELDS + 1) {
            Some(fields) if !fields.is_empty() => {
                compact_fields(&fields).unwrap_or_else(|| "dict[str, Any]".to_owned())
            }
            _ => self.hint(output),
        }
    }

    /// `(name, hint, required)` for an object schema with non-empty `properties`, else `None`.
    /// Only the first `max_fields` fields are typed: more means the caller will not list them.
    pub fn object_fields(
        &self,
        schema: &'a Value,
        max_fields: usize,
    ) -> Option<Vec<(String, String, bool)>> {
        let top = self.resolve_top(schema);
        let props = top.get("properties")?.as_object()?;
        if props.is_empty() {
            return None;
        }
        let required = required_names(top);
        Some(
            props
                .iter()
                .take(max_fields)
                .map(|(name, prop)| {
                    (
                        name.clone(),
                        self.hint(prop),
                        required.contains(&name.as_str()),
                    )
                })
                .collect(),
        )
    }
}

fn compact_fields(fields: &[(String, String, bool)]) -> Option<String> {
    if fields.len() > MAX_COMPACT_FIELDS {
        return None;
    }
    let inner: Vec<String> = fields
        .iter()
        .map(|(name, hint, _)| {
            let key = if is_bindable_identifier(name) {
                name.clone()
            } else {
                py_str(name)
            };
            format!("{key}: {hint}")
        })
        .collect();
    let rendered = format!("{{{}}}", inner.join(", "));
    (rendered.chars().count() <= MAX_COMPACT_CHARS).then_some(rendered)
}

/// The `required` names of an object schema (strings only).
pub fn required_names(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn literal_member(value: &Value) -> Option<Member> {
    match value {
        Value::Null => Some(Member::NoneType),
        Value::Bool(_) | Value::String(_) => Some(Member::Lit(py_literal(value)?)),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(Member::Lit(n.to_string())),
        _ => None,
    }
}

/// The union of the JSON types of `values`.
fn base_of_values(values: &[Value]) -> Hint {
    let mut hint = Hint::default();
    for value in values {
        hint.add(match value {
            Value::Null => Hint {
                any: false,
                members: vec![Member::NoneType],
            },
            Value::Bool(_) => Hint::ty("bool"),
            Value::Number(n) if n.is_f64() => Hint::ty("float"),
            Value::Number(_) => Hint::ty("int"),
            Value::String(_) => Hint::ty("str"),
            Value::Array(_) => Hint::ty("list[Any]"),
            Value::Object(_) => Hint::ty("dict[str, Any]"),
        });
    }
    hint
}

/// A Python string literal in single quotes. Control and unusual whitespace characters are
/// escaped so the literal always stays on one line and parses.
pub fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 && (c.is_control() || (c.is_whitespace() && c != ' ')) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || (c.is_whitespace() && c != ' ') || c == '\u{feff}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `value` as a Python literal, or `None` when it is too large or too deep to show.
pub fn py_literal(value: &Value) -> Option<String> {
    let mut out = String::new();
    write_literal(value, &mut out, 0).then_some(out)
}

fn write_literal(value: &Value, out: &mut String, depth: u32) -> bool {
    if depth > MAX_LITERAL_DEPTH || out.chars().count() > MAX_LITERAL_CHARS {
        return false;
    }
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&py_str(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if !write_literal(item, out, depth + 1) {
                    return false;
                }
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&py_str(key));
                out.push_str(": ");
                if !write_literal(item, out, depth + 1) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    out.chars().count() <= MAX_LITERAL_CHARS
}

#[cfg(test)]
mod tests;
