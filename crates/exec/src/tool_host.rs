//! What engines need from the gateway: the SDK, and tool calls that go out
//! through [`ToolHost`] and fail as [`ToolFailure`].

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use codemcp_sdk::Sdk;

/// A tool call that failed: the upstream said `isError`, timed out or is gone.
/// Agent code sees it as `ToolError` (a `RuntimeError`) carrying `message`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    pub message: String,
}

/// `{"result": v}` → `v`, for tools whose output schema only wraps a plain
/// value (FastMCP); see `SdkFunction::unwrap_result`.
pub fn unwrap_result(value: Value) -> Value {
    match value {
        Value::Object(mut map) if map.len() == 1 && map.contains_key("result") => {
            map.remove("result").unwrap_or(Value::Null)
        }
        other => other,
    }
}

/// What engines need from the gateway: the current SDK and a way to call tools.
pub trait ToolHost: Send + Sync + 'static {
    fn sdk(&self) -> Arc<Sdk>;
    /// Calls upstream `tool` of `server` for a run on `engine` and returns its
    /// value per the calling contract (structured content, else joined text).
    fn call_tool(
        &self,
        engine: &'static str,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>>;
    /// Calls one of the resource and prompt functions for a run on
    /// `engine` and returns the value agent code gets (see
    /// `upstream::resources`). Hosts without upstreams have none to offer.
    fn resource_call(
        &self,
        engine: &'static str,
        call: codemcp_sdk::ResourceCall,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let _ = engine;
        let message = format!(
            "{}(): no upstream resources or prompts are reachable here",
            call.function()
        );
        Box::pin(async move { Err(ToolFailure { message }) })
    }
    /// Whether a call of `server`'s `tool` would wait for the user's answer,
    /// and the run should rather park there (see [`Parked`](crate::Parked)). Engines that
    /// can dump a run suspended at a plain call ask before calling.
    fn parks(&self, server: &str, tool: &str) -> bool {
        let _ = (server, tool);
        false
    }
    /// [`call_tool`](Self::call_tool) made by the code of saved helper
    /// `helper`, which the audit line names.
    fn call_tool_via(
        &self,
        engine: &'static str,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        helper: Option<&str>,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let _ = helper;
        self.call_tool(engine, server, tool, args)
    }
    /// A call of `save_helper`, `list_helpers` or `delete_helper` (see
    /// `crate::helpers`); hosts that keep no helpers refuse it.
    fn helper_call(
        &self,
        engine: &'static str,
        call: crate::helpers::HelperCall,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let _ = engine;
        let message = format!("{}(): saved helpers are not kept here", call.function);
        Box::pin(async move { Err(ToolFailure { message }) })
    }
    /// Whether the caller may keep helper `name` (policy `helpers/save`),
    /// after asking the user when it says `ask`.
    fn approve_helper_save(
        &self,
        engine: &'static str,
        name: &str,
        source: &str,
    ) -> BoxFuture<'static, Result<(), ToolFailure>> {
        let _ = (engine, name, source);
        Box::pin(async { Ok(()) })
    }
}
