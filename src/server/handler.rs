//! The MCP face of codemcp: one tool, `execute_python`, plus the SDK as a
//! resource, served by an rmcp `ServerHandler`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscriptionFilter,
    Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::render::render;
use super::sessions::HttpSessions;
use crate::config::settings::OutputFormat;
use crate::exec::{
    ErrorKind, Execution, Executor, RunControl, RunError, RunRequest, SessionId, ToolCallObserver,
    ToolHost,
};
use crate::upstream::Catalog;

pub const TOOL_NAME: &str = "execute_python";
pub const SDK_URI: &str = "codemcp://sdk.pyi";

/// State shared by every MCP session of one gateway process.
pub struct Shared {
    pub catalog: Catalog,
    pub executor: Executor,
    pub description_budget: usize,
    /// `CODEMCP_OUTPUT`: the format of a result's text block.
    pub output: OutputFormat,
    /// Peers of sessions on the `initialize` lifecycle (protocol ≤ 2025-11-25),
    /// which get `notifications/tools/list_changed` pushed directly.
    legacy_peers: Mutex<Vec<Peer<RoleServer>>>,
}

impl Shared {
    pub fn new(
        catalog: Catalog,
        executor: Executor,
        description_budget: usize,
        output: OutputFormat,
    ) -> Arc<Self> {
        let shared = Arc::new(Self {
            catalog,
            executor,
            description_budget,
            output,
            legacy_peers: Mutex::new(Vec::new()),
        });
        tokio::spawn(forward_tool_changes(Arc::downgrade(&shared)));
        tokio::spawn(expire_sessions(Arc::downgrade(&shared)));
        shared
    }

    fn legacy_peers(&self) -> std::sync::MutexGuard<'_, Vec<Peer<RoleServer>>> {
        self.legacy_peers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Tells our clients when the upstream catalog (and so our tool description) changed.
async fn forward_tool_changes(shared: std::sync::Weak<Shared>) {
    let Some(mut changes) = shared.upgrade().map(|s| s.catalog.subscribe_changes()) else {
        return;
    };
    loop {
        match changes.recv().await {
            Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let peers: Vec<Peer<RoleServer>> = shared.legacy_peers().clone();
        let mut alive = Vec::new();
        for peer in peers {
            if peer.notify_tool_list_changed().await.is_ok() {
                alive.push(peer);
            }
        }
        *shared.legacy_peers() = alive;
    }
}

async fn expire_sessions(shared: std::sync::Weak<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.executor.expire_idle();
    }
}

/// Ends the engine session when the MCP session's handler goes away.
struct SessionGuard {
    id: SessionId,
    shared: Arc<Shared>,
    /// Cancelled when the client is gone: every run of the session stops.
    closing: CancellationToken,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.closing.cancel();
        self.shared.executor.end_session(self.id);
    }
}

/// The handler for one MCP session (stdio: the process; HTTP: one per session).
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
    session: Arc<SessionGuard>,
    /// Over HTTP: tells when the client's session ended.
    http_sessions: Option<Arc<HttpSessions>>,
}

impl Gateway {
    pub fn new_session(shared: Arc<Shared>) -> Self {
        let session = Arc::new(SessionGuard {
            id: SessionId::next(),
            shared: shared.clone(),
            closing: CancellationToken::new(),
        });
        Self {
            shared,
            session,
            http_sessions: None,
        }
    }

    pub(super) fn with_http_sessions(mut self, sessions: Arc<HttpSessions>) -> Self {
        self.http_sessions = Some(sessions);
        self
    }

    /// Cancelling this token stops every run of the session (its client left).
    pub fn closing(&self) -> CancellationToken {
        self.session.closing.clone()
    }

    fn tool(&self) -> Tool {
        let description = self
            .shared
            .catalog
            .sdk()
            .description(self.shared.description_budget);
        let schema = json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Python code to run; tools are plain functions"},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "optional wall-time limit for this run"}
            },
            "required": ["code"]
        });
        let schema = match schema {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Tool::new(TOOL_NAME, description, Arc::new(schema))
    }

    /// Runs one `execute_python` call and shapes the MCP result.
    pub async fn execute(
        &self,
        arguments: Option<&Map<String, Value>>,
        control: RunControl,
    ) -> CallToolResult {
        let execution = match parse_request(arguments) {
            Ok(request) => {
                let host: Arc<dyn ToolHost> = Arc::new(self.shared.catalog.clone());
                self.shared
                    .executor
                    .run(self.session.id, request, host, control)
                    .await
            }
            Err(error) => self.shared.executor.refused(error),
        };
        tool_result(&execution, self.shared.output)
    }
}

fn parse_request(arguments: Option<&Map<String, Value>>) -> Result<RunRequest, RunError> {
    let bad = |message: &str| {
        RunError::new(ErrorKind::Input, "TypeError", message).with_hint(
            "call execute_python with {\"code\": \"<python>\"} and optionally \"timeout_ms\"",
        )
    };
    let arguments = arguments.ok_or_else(|| bad("missing arguments"))?;
    let code = match arguments.get("code") {
        Some(Value::String(code)) => code.clone(),
        Some(_) => return Err(bad("'code' must be a string")),
        None => return Err(bad("missing required argument 'code'")),
    };
    let timeout = match arguments.get("timeout_ms") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(ms) if ms > 0 => Some(Duration::from_millis(ms)),
            _ => return Err(bad("'timeout_ms' must be a positive integer")),
        },
    };
    Ok(RunRequest { code, timeout })
}

fn tool_result(execution: &Execution, output: OutputFormat) -> CallToolResult {
    let text = render(execution, output);
    let structured = serde_json::to_value(execution).unwrap_or(Value::Null);
    let mut result = if execution.error.is_some() {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(structured);
    result
}

fn progress_observer(context: &RequestContext<RoleServer>) -> Option<ToolCallObserver> {
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    let runtime = tokio::runtime::Handle::current();
    Some(Arc::new(move |done: u32| {
        let peer = peer.clone();
        let param = ProgressNotificationParam::new(token.clone(), f64::from(done))
            .with_message(format!("{done} tool call(s) completed"));
        runtime.spawn(async move {
            let _ = peer.notify_progress(param).await;
        });
    }))
}

impl ServerHandler for Gateway {
    #[allow(deprecated)] // logging: see set_level
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_resources().enable_logging().build(),
        )
        .with_server_info(Implementation::new("codemcp", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "codemcp runs Python snippets that call the connected MCP tools as functions. Use execute_python; \
             its description lists the functions.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_NAME).then(|| self.tool())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL_NAME {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool '{}'; the only tool is {TOOL_NAME}",
                    request.name
                ),
                None,
            ));
        }
        // The run stops when the client cancels this request or leaves.
        let cancel = self.session.closing.child_token();
        let http_ended = self
            .http_sessions
            .as_ref()
            .and_then(|sessions| sessions.closing_for(&context))
            .unwrap_or_default();
        let (request_ct, link) = (context.ct.clone(), cancel.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = request_ct.cancelled() => link.cancel(),
                () = http_ended.cancelled() => link.cancel(),
                () = link.cancelled() => {}
            }
        });
        let control = RunControl {
            cancel: cancel.clone(),
            on_tool_call: progress_observer(&context),
        };
        let result = self.execute(request.arguments.as_ref(), control).await;
        cancel.cancel(); // ends the link task
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resource = Resource::new(SDK_URI, "sdk.pyi")
            .with_description(
                "Type stub of every upstream tool as a Python function, with full docs",
            )
            .with_mime_type("text/x-python");
        Ok(ListResourcesResult::with_all_items(vec![resource]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != SDK_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource '{}'", request.uri),
                None,
            ));
        }
        let stub = self.shared.catalog.sdk().stub();
        let contents = ResourceContents::text(stub, SDK_URI).with_mime_type("text/x-python");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577, still used by 2025-era clients
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tracing::debug!(target: "codemcp::server", level = ?request.level, "client set log level");
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.shared.legacy_peers().push(context.peer.clone());
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.catalog.subscribe_changes();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if context.accepted().tools_list_changed == Some(true) {
                            let _ = context.sink().notify_tool_list_changed().await;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}
