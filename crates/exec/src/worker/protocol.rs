//! The control-channel messages between the gateway and a CPython worker
//! (`worker/bootstrap.py`); `worker/PROTOCOL.md` is the reference and
//! `worker/golden/` holds one example of each message.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const JSONRPC: &str = "2.0";

/// JSON-RPC error code for a failed tool (the snippet sees `ToolError`).
pub const TOOL_FAILED: i64 = -32000;
/// JSON-RPC error code for arguments that do not fit the tool (`TypeError`).
pub const BAD_ARGUMENTS: i64 = -32602;
pub const METHOD_NOT_FOUND: i64 = -32601;

/// `run`: execute a snippet in a session's namespace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunParams {
    pub session: String,
    pub code: String,
    pub timeout_ms: u64,
    pub max_output_bytes: usize,
    /// Sent when the tool catalog changed since the worker last saw it.
    pub catalog: Option<WorkerCatalog>,
    /// Variables to seed before running (a session moving over from Monty,
    /// or restored from the session store).
    pub globals: Option<Map<String, Value>>,
    /// Asks for the session's JSON variables after the run, up to this many
    /// bytes (for the session store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_globals: Option<usize>,
    /// The calls in `code` whose value goes to the event loop (awaited,
    /// gathered, scheduled), as `[line, column]`; every other call of a
    /// tool function is synchronous (see `exec::call_sites`). Absent: not
    /// analysed, and every call in async code is an awaitable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub future_calls: Option<Vec<(u32, u32)>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkerCatalog {
    pub version: u64,
    pub functions: Vec<FunctionInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionInfo {
    pub name: String,
    pub doc: String,
}

/// The answer to `run`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    pub stdout: String,
    /// What the run wrote to `sys.stderr`, apart from `stdout` (a worker
    /// older than this field sends both in `stdout`).
    #[serde(default)]
    pub stderr: String,
    pub result: Option<Value>,
    /// Why the snippet's value is not in `result` (it has no JSON form), in
    /// the Monty engine's words; the run itself succeeded.
    #[serde(default)]
    pub result_unavailable: Option<String>,
    pub error: Option<PythonError>,
    pub truncated: bool,
    pub tool_calls: u32,
    /// With `return_globals`: the variables JSON holds exactly, or `None`
    /// when they are over the limit…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub globals: Option<Map<String, Value>>,
    /// …and their size as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub globals_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PythonError {
    #[serde(rename = "type")]
    pub exc_type: String,
    pub message: String,
    #[serde(default)]
    pub traceback: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResetParams {
    pub session: String,
}

/// Worker → gateway `call_tool`: the gateway binds the arguments itself, with
/// the same rules as the Monty engine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CallToolParams {
    pub session: String,
    pub name: String,
    #[serde(default)]
    pub args: Vec<Value>,
    #[serde(default)]
    pub kwargs: Map<String, Value>,
}

/// Worker → gateway `list_resources`, `read_resource`, `list_prompts` and
/// `get_prompt` (the method is the function's name): the call's arguments
/// as the snippet gave them; the gateway binds them as the Monty engine does.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResourceCallParams {
    pub session: String,
    #[serde(default)]
    pub args: Vec<Value>,
    #[serde(default)]
    pub kwargs: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SearchToolsParams {
    pub query: String,
    #[serde(default = "default_limit")]
    pub limit: usize,
}

fn default_limit() -> usize {
    10
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DescribeToolParams {
    pub name: String,
}

/// Any frame on the channel, told apart by its fields.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Frame {
    pub jsonrpc: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl Frame {
    pub fn request(id: Value, method: &str, params: Value) -> Self {
        Self {
            jsonrpc: JSONRPC.into(),
            id: Some(id),
            method: Some(method.into()),
            params: Some(params),
            result: None,
            error: None,
        }
    }

    pub fn response(id: Value, result: Result<Value, RpcError>) -> Self {
        let (result, error) = match result {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        Self {
            jsonrpc: JSONRPC.into(),
            id: Some(id),
            method: None,
            params: None,
            result,
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn golden(name: &str) -> Option<Frame> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../worker/golden")
            .join(name);
        let text = std::fs::read_to_string(&path).ok()?;
        Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
    }

    /// The Rust types read every golden message and write it back unchanged.
    #[test]
    fn golden_messages_round_trip() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../worker/golden");
        let entries = std::fs::read_dir(&dir).expect("worker/golden exists");
        let mut checked = 0;
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).expect("read golden");
            let original: Value = serde_json::from_str(&text).expect("golden is JSON");
            let frame: Frame = serde_json::from_value(original.clone()).expect("golden is a frame");
            assert_eq!(
                serde_json::to_value(&frame).expect("serialize"),
                original,
                "{}",
                entry.path().display()
            );
            checked += 1;
        }
        assert!(checked >= 6, "only {checked} golden files");
    }

    #[test]
    fn golden_params_and_results_have_our_shapes() {
        if let Some(run) = golden("run_request.json") {
            let params: RunParams =
                serde_json::from_value(run.params.expect("params")).expect("RunParams");
            assert!(!params.code.is_empty());
        }
        if let Some(ok) = golden("run_result_ok.json") {
            let _: RunResult =
                serde_json::from_value(ok.result.expect("result")).expect("RunResult");
        }
        if let Some(call) = golden("call_tool_request.json") {
            let _: CallToolParams =
                serde_json::from_value(call.params.expect("params")).expect("CallToolParams");
        }
        let read = golden("read_resource_request.json").expect("read_resource_request.json");
        assert_eq!(read.method.as_deref(), Some("read_resource"));
        let params: ResourceCallParams =
            serde_json::from_value(read.params.expect("params")).expect("ResourceCallParams");
        assert_eq!(params.args.len(), 2);
    }
}
