//! What the gateway knows about one upstream tool, independent of MCP transport and of Python.
use serde_json::Value;
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub server: String,      // config name of the upstream, e.g. "everything"
    pub name: String,        // the tool's own name, e.g. "get-sum"
    pub description: String, // may be empty, multi-line, very long
    pub input_schema: Value, // JSON Schema (usually an object schema; may be anything, even garbage)
    pub output_schema: Option<Value>,
    pub read_only: bool, // annotations.readOnlyHint == true
}
