//! The MCP face of codemcp: one tool, `execute_python`, plus the SDK as a
//! resource, served by an rmcp `ServerHandler`.
//!
//! This file runs one `execute_python` call; the state every session
//! shares, one session's own, and the MCP methods live in rooms beside it.

use parking_lot::Mutex;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    ProgressNotificationParam, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::http_sessions::HttpSessions;
use crate::authority::guarded::{Asker, CallContext};
use crate::authority::identity::Identity;

mod arguments;
mod detached;
mod server_handler;
mod session;
mod state;
use self::arguments::{input_schema, parse_request};
use self::session::SessionGuard;
pub use self::state::GatewayState;
use super::render::render;
use crate::config::settings::OutputFormat;
use crate::helpers::Snippet;
use codemcp_base::timing;
use codemcp_exec::{Execution, RunControl, RunRequest, ToolCallObserver};

pub const TOOL_NAME: &str = "execute_python";
pub const SDK_URI: &str = "codemcp://sdk.pyi";

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
