//! Resource and prompt calls through the guard. Each server's part passes
//! that server's policy for the method (`resources/read`, …; allowed when
//! no rule matches), asks the user for `ask`, and is audited like a tool
//! call, under the method's name. A denied method reads as one the server
//! does not offer: an empty list, or the same error as for a server
//! without the capability.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::{Authority, Call, CallContext};
use crate::upstream::resources::{ResourceError, list_everywhere};
use crate::upstream::{Catalog, UpstreamError};
use codemcp_exec::ToolFailure;
use codemcp_sdk::ResourceCall;
use codemcp_sdk::policy::Decision;

/// Who a call goes through, shared by every server's part of it.
#[derive(Clone)]
pub struct Guard {
    pub catalog: Catalog,
    pub authority: Arc<Authority>,
    pub context: Arc<CallContext>,
    pub engine: &'static str,
}

/// `call`, for the server it names or, without one, every configured
/// server (those that fail are left out; see [`list_everywhere`]).
pub async fn run(guard: Guard, call: ResourceCall) -> Result<Value, ToolFailure> {
    if let Some(server) = call.server() {
        return one(guard.clone(), server.to_owned(), call.clone()).await;
    }
    let servers = guard.catalog.server_names();
    let listed = list_everywhere(servers, |server| {
        let part = call.to_server(&server);
        one(guard.clone(), server, part)
    });
    Ok(listed.await)
}

async fn one(guard: Guard, server: String, call: ResourceCall) -> Result<Value, ToolFailure> {
    let method = call.method();
    let policy = guard
        .context
        .identity
        .resource_policy(&guard.catalog, &server, method);
    let checked = Call {
        catalog: guard.catalog,
        authority: guard.authority,
        context: guard.context,
        engine: guard.engine,
        server,
        tool: method.to_owned(),
        args: call.shown_arguments(),
        helper: None,
    };
    let shown = crate::authority::audit::shown_arguments(&checked.args);
    let decision = match policy {
        None => {
            let unknown = UpstreamError::UnknownServer(checked.server.clone());
            return Err(checked.refuse("deny", unknown.to_string()));
        }
        Some(Decision::Deny) => {
            checked.record(&shown, "deny", "none", std::time::Duration::ZERO, 0);
            if call.is_list() {
                return Ok(Value::Array(Vec::new()));
            }
            let message = ResourceError::not_offered(&checked.server, &call).to_string();
            return Err(ToolFailure { message });
        }
        decided => checked.authorize(decided).await?,
    };
    let started = Instant::now();
    let request = checked.catalog.resource_value(&checked.server, &call);
    let trace = &checked.context.trace;
    let result = trace.upstream_call(&checked.server, method, request).await;
    let outcome = match &result {
        Ok(_) => "ok",
        Err(ResourceError::Timeout { .. }) => "timeout",
        Err(_) => "error",
    };
    let bytes = result.as_ref().map_or(0, crate::authority::audit::json_len);
    checked.record(&shown, decision, outcome, started.elapsed(), bytes);
    result.map_err(|e| ToolFailure {
        message: e.to_string(),
    })
}
