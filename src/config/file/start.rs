//! The entry's `"start"`: when its server is started.

use serde_json::{Map, Value};

/// When a server is started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    /// With the gateway (the default).
    #[default]
    Eager,
    /// On the first call of one of its tools, served until then from the
    /// remembered catalog; stopped again after `CODEMCP_LAZY_IDLE_MS` unused.
    /// Without a remembered catalog it starts once to list its tools.
    Lazy,
}

/// The entry's `"start"`: `"eager"` (default) or `"lazy"`.
pub(super) fn start_field(fields: &Map<String, Value>) -> Result<Start, String> {
    match fields.get("start") {
        None | Some(Value::Null) => Ok(Start::Eager),
        Some(Value::String(s)) if s == "eager" => Ok(Start::Eager),
        Some(Value::String(s)) if s == "lazy" => Ok(Start::Lazy),
        Some(other) => Err(format!(
            "\"start\" must be \"eager\" or \"lazy\", found {other}"
        )),
    }
}
