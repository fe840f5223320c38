//! The arguments of `execute_python`: the input schema clients see, and a
//! call's arguments checked into a `RunRequest`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use codemcp_exec::{ErrorKind, RunError, RunRequest};

/// The arguments of `execute_python`; the input schema is derived from it.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct ExecuteArgs {
    /// Python code to run; tools are plain functions
    code: String,
    /// optional wall-time limit for this run
    #[schemars(range(min = 1))]
    timeout_ms: Option<u64>,
    /// the session handle a previous result gave: continue that session's variables
    session: Option<String>,
}

pub(super) fn input_schema() -> Arc<Map<String, Value>> {
    static SCHEMA: std::sync::OnceLock<Arc<Map<String, Value>>> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let schema = serde_json::to_value(schemars::schema_for!(ExecuteArgs));
            match schema {
                Ok(Value::Object(mut map)) => {
                    map.remove("$schema");
                    map.remove("title");
                    Arc::new(map)
                }
                _ => Arc::new(Map::new()),
            }
        })
        .clone()
}

pub(super) fn parse_request(
    arguments: Option<&Map<String, Value>>,
) -> Result<RunRequest, RunError> {
    let bad = |message: String| {
        RunError::new(ErrorKind::Input, "TypeError", message).with_hint(
            "call execute_python with {\"code\": \"<python>\"} and optionally \"timeout_ms\" and \"session\"",
        )
    };
    let arguments = arguments.ok_or_else(|| bad("missing arguments".into()))?;
    let args: ExecuteArgs = serde_json::from_value(Value::Object(arguments.clone()))
        .map_err(|e| bad(format!("bad arguments: {e}")))?;
    let timeout = match args.timeout_ms {
        Some(0) => return Err(bad("'timeout_ms' must be a positive integer".into())),
        other => other.map(Duration::from_millis),
    };
    Ok(RunRequest {
        code: args.code,
        timeout,
        session: args.session.filter(|s| !s.is_empty()),
    })
}
