//! The MCP face of codemcp: one tool, `execute_python`, plus the SDK as a
//! resource, served by an rmcp `ServerHandler`.

use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetSkillRequestParams,
    GetSkillResult, Implementation, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::http_sessions::HttpSessions;
use crate::authority::guarded::{Asker, Authority, CallContext, GrantBook, GuardedTools};
use crate::authority::identity::Identity;
use crate::authority::pending::PausedRuns;

mod arguments;
mod detached;
use self::arguments::{input_schema, parse_request};
use super::render::render;
use crate::config::settings::OutputFormat;
use crate::helpers::{Assembly, Helpers, Snippet};
use crate::upstream::Catalog;
use codemcp_base::timing;
use codemcp_exec::{Execution, Executor, RunControl, RunRequest, ToolCallObserver, ToolHost};
use codemcp_store::Owner;

pub const TOOL_NAME: &str = "execute_python";
pub const SDK_URI: &str = "codemcp://sdk.pyi";

/// State shared by every MCP session of one gateway process.
pub struct GatewayState {
    pub catalog: Catalog,
    pub executor: Executor,
    /// Saved helpers, when the gateway keeps them (see [`GatewayState::assemble`]).
    pub helpers: Option<Arc<Helpers>>,
    pub description_budget: usize,
    /// `CODEMCP_OUTPUT`: the format of a result's text block.
    pub output: OutputFormat,
    /// Peers of sessions on the `initialize` lifecycle (protocol ≤ 2025-11-25),
    /// which get `notifications/tools/list_changed` pushed directly.
    legacy_peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Approvals and the audit log.
    authority: Arc<Authority>,
    /// 2026-07-28 runs waiting for their client's answer.
    paused: PausedRuns,
    /// Tools users allowed for the rest of a session.
    grants: GrantBook,
}

impl GatewayState {
    pub fn new(
        catalog: Catalog,
        engines: impl Into<crate::assemble::Assembled>,
        description_budget: usize,
        output: OutputFormat,
        authority: Authority,
    ) -> Arc<Self> {
        let crate::assemble::Assembled { executor, helpers } = engines.into();
        let shared = Arc::new(Self {
            catalog,
            executor,
            helpers,
            description_budget,
            output,
            legacy_peers: Mutex::new(Vec::new()),
            authority: Arc::new(authority),
            paused: PausedRuns::default(),
            grants: GrantBook::default(),
        });
        tokio::spawn(forward_tool_changes(Arc::downgrade(&shared)));
        tokio::spawn(expire_sessions(Arc::downgrade(&shared)));
        shared
    }

    /// What one run of `snippet` needs, run or resumed alike: the caller's
    /// tools behind its policy (`context`), its saved helpers around them,
    /// and those the snippet uses, defined first. The one entrance: the
    /// executor gets it whole and never calls back.
    pub(crate) async fn assemble(&self, context: CallContext, snippet: Snippet<'_>) -> Assembly {
        let owner = context.identity.owner;
        let tools: Arc<dyn ToolHost> = Arc::new(GuardedTools::new(
            self.catalog.clone(),
            self.authority.clone(),
            context,
        ));
        crate::helpers::assemble(self.helpers.as_ref(), owner, snippet, tools).await
    }

    fn legacy_peers(&self) -> parking_lot::MutexGuard<'_, Vec<Peer<RoleServer>>> {
        self.legacy_peers.lock()
    }
}

/// Tells our clients when the upstream catalog (and so our tool description) changed.
async fn forward_tool_changes(shared: std::sync::Weak<GatewayState>) {
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

async fn expire_sessions(shared: std::sync::Weak<GatewayState>) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.executor.expire_idle();
        if let Some(helpers) = shared.helpers.clone() {
            helpers.refresh_shared(); // the operator's directory changed
        }
        // A question nobody answered: its run takes the call as denied.
        shared
            .paused
            .expire(shared.authority.approval_timeout + Duration::from_secs(5));
        shared.grants.expire(shared.authority.session_idle);
    }
}

/// One MCP session's own state: the session handle runs use when they name
/// none (stdio, `Mcp-Session-Id`), and what stops its runs when it ends.
struct SessionGuard {
    shared: std::sync::Weak<GatewayState>,
    /// The handle of the Python session that calls naming none run in. Its
    /// state outlives the MCP session (in the session store, until it expires).
    implicit: Mutex<Option<String>>,
    /// Cancelled when the client is gone: every run of the session stops.
    closing: CancellationToken,
    _counted: codemcp_base::metrics::Held,
}

impl SessionGuard {
    /// The implicit session's handle, minted on first use so that calls
    /// made at once share it (and wait for each other) instead of each
    /// starting a session of its own.
    fn implicit(&self, executor: &Executor, owner: Owner) -> String {
        self.implicit
            .lock()
            .get_or_insert_with(|| executor.new_session(owner))
            .clone()
    }

    /// The client left: the engine lets go of the implicit session (a pool
    /// worker, an interpreter); its state stays in the store for its handle.
    fn release(&self) {
        let handle = self.implicit.lock().clone();
        if let (Some(handle), Some(shared)) = (handle, self.shared.upgrade()) {
            shared.executor.release_session(&handle);
        }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.closing.cancel();
        self.release();
    }
}

/// The handler for one MCP session (stdio: the process; HTTP: one per session).
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<GatewayState>,
    session: Arc<SessionGuard>,
    /// Over HTTP: tells when the client's session ended.
    http_sessions: Option<Arc<HttpSessions>>,
}

impl Gateway {
    pub fn new_session(shared: Arc<GatewayState>) -> Self {
        let session = Arc::new(SessionGuard {
            shared: Arc::downgrade(&shared),
            implicit: Mutex::new(None),
            closing: CancellationToken::new(),
            _counted: codemcp_base::metrics::session(),
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

    /// Waits for the upstreams' startup (bounded), unless the request is
    /// cancelled or the client leaves first: then nobody waits for it.
    async fn upstreams_ready(&self, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        // A client that asks for tools before any `initialized` (2026-07-28)
        // starts the servers now, if the grace has not.
        self.shared.catalog.launch();
        tokio::select! {
            () = self.shared.catalog.ready() => Ok(()),
            () = self.session.closing.cancelled() => Err(ErrorData::internal_error("the client went away", None)),
            () = context.ct.cancelled() => Err(ErrorData::internal_error("the request was cancelled", None)),
        }
    }

    /// The saved helpers the caller of `context` may call (none when the
    /// gateway keeps no helpers).
    async fn helper_docs(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Vec<codemcp_sdk::HelperDoc> {
        let Some(helpers) = self.shared.helpers.clone() else {
            return Vec::new();
        };
        let identity = Identity::of_request(context);
        helpers.visible(&identity.owner).await.docs
    }

    /// Cancelling this token stops every run of the session (its client left).
    pub fn closing(&self) -> CancellationToken {
        self.session.closing.clone()
    }

    /// `execute_python` as `identity` sees it: its description lists only
    /// the tools that caller may use.
    fn tool(&self, identity: &Identity) -> Tool {
        let description = identity
            .sdk(&self.shared.catalog)
            .description(self.shared.description_budget);
        Tool::new(TOOL_NAME, description, input_schema())
    }

    /// Runs one `execute_python` call for `caller` and shapes the MCP result.
    pub async fn execute(
        &self,
        arguments: Option<&Map<String, Value>>,
        caller: Caller,
        control: RunControl,
    ) -> CallToolResult {
        let execution = self.execution(arguments, caller, control).await;
        let started = timing::start();
        let result = tool_result(&execution, self.shared.output);
        timing::since("result rendered", started);
        result
    }

    /// Runs one `execute_python` call for `caller`.
    async fn execution(
        &self,
        arguments: Option<&Map<String, Value>>,
        caller: Caller,
        control: RunControl,
    ) -> Execution {
        let started = timing::start();
        let parsed = parse_request(arguments);
        timing::since("request parsed", started);
        match parsed {
            Ok(request) => self.run_request(request, caller, control).await,
            Err(error) => self.shared.executor.refused(error),
        }
    }

    /// Runs in the session the request names, else in this MCP session's own
    /// (or a new one), with the tools behind their policy.
    async fn run_request(
        &self,
        mut request: RunRequest,
        caller: Caller,
        control: RunControl,
    ) -> Execution {
        let executor = &self.shared.executor;
        let owner = caller.identity.owner;
        let implicit = caller.lasting && request.session.is_none();
        if implicit {
            request.session = Some(self.session.implicit(executor, owner));
        }
        // Named before the run, so the audit log can say which session called.
        let session = request
            .session
            .get_or_insert_with(|| executor.new_session(owner))
            .clone();
        let grants = self.shared.grants.of(&caller.identity.label, &session);
        let mut context = CallContext::new(caller.identity, Some(session), caller.asker, grants);
        context.park = caller.park;
        // One store budget for the helpers' read and the run's session.
        let execution = codemcp_store::one_call(async {
            let snippet = Snippet::New(&request.code);
            let assembly = self.shared.assemble(context, snippet).await;
            executor.run(owner, request, assembly, control).await
        })
        .await;
        if implicit {
            // An expired implicit session was replaced by a new one.
            if let Some(handle) = &execution.session {
                *self.session.implicit.lock() = Some(handle.clone());
            }
            if self.session.closing.is_cancelled() {
                self.session.release(); // the client left during the run
            }
        }
        execution
    }
}

impl Gateway {
    /// `tools/call`: runs `execute_python` (or resumes a run waiting for its
    /// user's answer).
    async fn call_execute(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.upstreams_ready(&context).await?;
        if request.name != TOOL_NAME {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool '{}'; the only tool is {TOOL_NAME}",
                    request.name
                ),
                None,
            ));
        }
        let identity = Identity::of_request(&context);
        if let Some(state) = request.request_state.as_deref() {
            let responses = request.input_responses.as_ref();
            return Ok(self.resume(state, responses, identity, &context).await);
        }
        let lasting = in_lasting_session(&context);
        match AskRoute::of(&context) {
            // A 2026-07-28 question is answered by the result of this very
            // request, so the run goes on in a task of its own (stdio too).
            AskRoute::InputRequired => Ok(self
                .run_detached(request, &context, identity, lasting)
                .await),
            route if lasting => Ok(self
                .run_attached(request, &context, identity, route)
                .await
                .into()),
            _ => Ok(self
                .run_detached(request, &context, identity, lasting)
                .await),
        }
    }

    /// A call of a lasting MCP session (stdio, `Mcp-Session-Id`): the run is
    /// this request's, and stops when the client cancels it or leaves.
    async fn run_attached(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        identity: Identity,
        route: AskRoute,
    ) -> CallToolResult {
        let cancel = self.session.closing.child_token();
        let http_ended = self
            .http_sessions
            .as_ref()
            .and_then(|sessions| sessions.closing_for(context))
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
            on_tool_call: progress_observer(context),
        };
        let asker = match route {
            AskRoute::Elicit => Asker::Client(context.peer.clone()),
            AskRoute::InputRequired | AskRoute::Nobody => Asker::Nobody,
        };
        let caller = Caller {
            identity,
            lasting: true,
            asker,
            park: false,
        };
        let result = self
            .execute(request.arguments.as_ref(), caller, control)
            .await;
        cancel.cancel(); // ends the link task
        result
    }
}

/// Who makes an `execute_python` call.
pub struct Caller {
    pub identity: Identity,
    /// The call belongs to an MCP session that outlives it (stdio,
    /// `Mcp-Session-Id`), whose own Python session runs calls naming none.
    pub lasting: bool,
    /// How to ask its user (for `ask` tools).
    pub asker: Asker,
    /// A run that asks parks in the session store (see `exec::parked`).
    pub park: bool,
}

/// How the user behind one request can be asked, decided per request: a
/// client declares its capabilities in `initialize` (2025) or in each
/// request's `_meta` (2026-07-28, on stdio too), and the era says how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AskRoute {
    /// `elicitation/create` to a 2025-era client that declared form elicitation.
    Elicit,
    /// An `input_required` result (2026-07-28 forbids server-to-client
    /// requests), answered by the client's retry.
    InputRequired,
    /// The client declared no form elicitation.
    Nobody,
}

impl AskRoute {
    fn of(context: &RequestContext<RoleServer>) -> Self {
        let form = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            // Neither mode named means form (the 2025-06-18 shape).
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        match context.protocol_version() {
            _ if !form => Self::Nobody,
            Some(version) if version.has_initialize() => Self::Elicit,
            Some(_) => Self::InputRequired,
            None => Self::Nobody,
        }
    }
}

/// Stdio, or HTTP with `Mcp-Session-Id`; not a 2026-07-28 request, which
/// stands alone (its state travels in the `session` argument).
fn in_lasting_session(context: &RequestContext<RoleServer>) -> bool {
    context
        .extensions
        .get::<http::request::Parts>()
        .is_none_or(|parts| parts.headers.contains_key("mcp-session-id"))
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
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_logging()
                .enable_skills()
                .build(),
        )
        .with_server_info(Implementation::new("codemcp", env!("CARGO_PKG_VERSION")))
        // Also `server/discover`'s (rmcp builds it from here). A pure function
        // of the configured catalog: `initialize` does not wait for servers.
        .with_instructions(
            self.shared
                .catalog
                .sdk()
                .instructions(self.shared.description_budget),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Bounded by CODEMCP_STARTUP_WAIT_MS; late upstreams join with list_changed.
        self.upstreams_ready(&context).await?;
        let identity = Identity::of_request(&context);
        let Some(helpers) = self.shared.helpers.clone() else {
            return Ok(ListToolsResult::with_all_items(vec![self.tool(&identity)]));
        };
        // The caller's saved helpers are named in its description.
        let sdk = identity.sdk(&self.shared.catalog);
        let sdk = crate::helpers::sdk_for(Some(&helpers), &identity.owner, sdk).await;
        let description = sdk.description(self.shared.description_budget);
        let tool = Tool::new(TOOL_NAME, description, input_schema());
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // No request here to say who asks; the schema is everyone's.
        (name == TOOL_NAME).then(|| self.tool(&Identity::of_token(None)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        timing::REQUEST_READ.log_since("request read");
        let started = timing::start();
        let meta = context.meta.0.clone();
        let response =
            crate::telemetry::traced_request(&meta, self.call_execute(request, context)).await;
        timing::since("handler done", started);
        timing::RESPONSE_READY.set();
        response
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resource = Resource::new(SDK_URI, "sdk.pyi")
            .with_description(
                "Type stub of every upstream tool as a Python function, with full docs",
            )
            .with_mime_type("text/x-python");
        let mut resources = vec![resource];
        // Each saved helper's SKILL.md, for clients without the skills extension.
        for doc in self.helper_docs(&context).await {
            let uri = crate::helpers::skills::uri(&doc);
            resources.push(
                Resource::new(uri, format!("{} (SKILL.md)", doc.name))
                    .with_description(doc.summary.clone())
                    .with_mime_type("text/markdown"),
            );
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let docs = self.helper_docs(&context).await;
        Ok(ListSkillsResult::with_all_items(
            crate::helpers::skills::skills(&docs),
        ))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let docs = self.helper_docs(&context).await;
        match crate::helpers::skills::find(&docs, &request.uri) {
            Some(doc) => Ok(GetSkillResult::new(crate::helpers::skills::skill(doc))),
            None => Err(ErrorData::invalid_params(
                format!("no skill at '{}'", request.uri),
                None,
            )),
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.upstreams_ready(&context).await?;
        if request.uri.starts_with("skill://") {
            let docs = self.helper_docs(&context).await;
            if let Some(doc) = crate::helpers::skills::find(&docs, &request.uri) {
                let text = crate::helpers::skills::skill_md(doc);
                let contents =
                    ResourceContents::text(text, request.uri).with_mime_type("text/markdown");
                return Ok(ReadResourceResult::new(vec![contents]).into());
            }
        }
        if request.uri != SDK_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource '{}'", request.uri),
                None,
            ));
        }
        let identity = Identity::of_request(&context);
        let sdk = identity.sdk(&self.shared.catalog);
        let helpers = self.shared.helpers.clone();
        let stub = crate::helpers::sdk_for(helpers.as_ref(), &identity.owner, sdk)
            .await
            .stub();
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
        // `initialize` is answered: the servers may take the CPU now.
        self.shared.catalog.launch();
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
