//! Typed fields of one server entry, with errors that name the field.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub(crate) fn str_field<'a>(
    fields: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "\"{key}\" must be a string, found {}",
            kind_of(other)
        )),
    }
}

pub(crate) fn bool_field(fields: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(format!(
            "\"{key}\" must be true or false, found {}",
            kind_of(other)
        )),
    }
}

pub(crate) fn str_list_field(
    fields: &Map<String, Value>,
    key: &str,
) -> Result<Option<Vec<String>>, String> {
    let items = match fields.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(format!(
                "\"{key}\" must be a list of strings, found {}",
                kind_of(other)
            ));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!(
                "\"{key}\"[{i}] must be a string, found {}",
                kind_of(other)
            )),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

pub(crate) fn str_map_field(
    fields: &Map<String, Value>,
    key: &str,
) -> Result<Option<BTreeMap<String, String>>, String> {
    let entries = match fields.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(entries)) => entries,
        Some(other) => {
            return Err(format!(
                "\"{key}\" must be an object of strings, found {}",
                kind_of(other)
            ));
        }
    };
    entries
        .iter()
        .map(|(name, value)| match value {
            Value::String(s) => Ok((name.clone(), s.clone())),
            other => Err(format!(
                "\"{key}\".\"{name}\" must be a string, found {}",
                kind_of(other)
            )),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
