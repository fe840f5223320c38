//! MCP plumbing: start a server from an `mcp.json`-style entry, list its tools as a client
//! would put them in context, call tools, and count tokens.

use std::process::Stdio;
use std::sync::{Arc, OnceLock};

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tiktoken_rs::CoreBPE;

pub type Conn = RunningService<RoleClient, ()>;

/// cl100k_base token count (the vocabulary ships inside `tiktoken-rs`).
pub fn tokens(text: &str) -> usize {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().expect("cl100k_base is embedded"))
        .encode_with_special_tokens(text)
        .len()
}

/// Starts the server described by `spec` (`{"command", "args", "env"}`) over stdio.
pub async fn connect(spec: &Value) -> Conn {
    let command = spec["command"].as_str().expect("command");
    let args: Vec<String> = spec["args"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let env: Vec<(String, String)> = spec["env"]
        .as_object()
        .map(|e| {
            e.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let cmd = tokio::process::Command::new(command).configure(|c| {
        c.args(&args).envs(env);
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {command}: {e}"));
    ().serve(transport)
        .await
        .unwrap_or_else(|e| panic!("MCP handshake with {command} {args:?}: {e}"))
}

pub async fn list(conn: &Conn) -> Vec<Tool> {
    conn.list_all_tools().await.expect("tools/list")
}

/// A tool as a client puts it in the model's context: name, description, input schema
/// (the shape of the Anthropic and OpenAI tool APIs; output schemas and annotations are
/// left out, which favours direct MCP).
pub fn context_form(tool: &Tool) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description.as_deref().unwrap_or_default(),
        "input_schema": Value::Object(Arc::unwrap_or_clone(tool.input_schema.clone())),
    })
}

pub fn tools_tokens(tools: &[Tool]) -> usize {
    let all: Vec<Value> = tools.iter().map(context_form).collect();
    tokens(&Value::Array(all).to_string())
}

pub async fn call(conn: &Conn, tool: &str, args: Value) -> CallToolResult {
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    conn.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool}: {e}"))
}

/// What the model reads of a result: its text blocks (other blocks as JSON), joined.
pub fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .map(|c| match c.as_text() {
            Some(t) => t.text.clone(),
            None => serde_json::to_string(c).unwrap_or_default(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
