//! The tools as one run's agent code sees them: every upstream call passes
//! the tool's policy first and is written to the audit log. A call of an
//! `ask` tool waits while the gateway asks the human through the client:
//! `elicitation/create` to a 2025-era client that declared elicitation, or,
//! on 2026-07-28, an `input_required` result of the request that runs the
//! code (see `pending.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema,
    PrimitiveSchemaDefinition,
};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::audit::{AuditEntry, AuditLog};
use crate::config::Settings;
use crate::upstream::{Catalog, UpstreamError};
use codemcp_base::timing;
use codemcp_exec::{ToolFailure, ToolHost};
use codemcp_sdk::Sdk;
use codemcp_sdk::policy::Decision;

mod resources;

/// How approvals are asked and calls recorded, for the whole gateway.
pub struct Authority {
    pub audit: AuditLog,
    /// `CODEMCP_APPROVAL_TIMEOUT_SECS`.
    pub approval_timeout: Duration,
    /// `CODEMCP_SESSION_IDLE_SECS`: how long "the rest of this session" lasts unused.
    pub session_idle: Duration,
    /// `CODEMCP_HELPERS_SAVE`, the policy `helpers/save` (`None`: ask when
    /// the client can be asked, else allow).
    pub helpers_save: Option<Decision>,
}

impl Authority {
    /// # Errors
    /// `CODEMCP_AUDIT_LOG` names a file that cannot be opened for appending.
    pub fn from_settings(settings: &Settings) -> Result<Self, super::audit::AuditError> {
        let authority = &settings.authority;
        let audit = match &authority.audit_log {
            Some(path) => AuditLog::open(path, authority.audit_max_bytes)?
                .keeping(authority.audit_keep_files)
                .requiring(authority.audit_required),
            None => AuditLog::to_tracing_only(),
        };
        Ok(Self {
            audit,
            approval_timeout: authority.approval_timeout,
            session_idle: settings.sessions.session_idle,
            helpers_save: settings.helpers.helpers_save,
        })
    }
}

impl Default for Authority {
    fn default() -> Self {
        Self {
            audit: AuditLog::to_tracing_only(),
            approval_timeout: Duration::from_secs(120),
            session_idle: Duration::from_secs(1800),
            helpers_save: None,
        }
    }
}

/// Tools a user allowed for the rest of one session.
pub type Grants = Arc<Mutex<HashSet<(String, String)>>>;

/// The grants of every session, by caller and session handle; a session's
/// grants go when it has been idle as long as the session itself would.
#[derive(Default)]
pub struct GrantBook {
    sessions: Mutex<HashMap<(String, String), (Grants, Instant)>>,
}

impl GrantBook {
    pub fn of(&self, principal: &str, session: &str) -> Grants {
        let mut sessions = self.sessions.lock();
        let entry = sessions
            .entry((principal.to_owned(), session.to_owned()))
            .or_insert_with(|| (Grants::default(), Instant::now()));
        entry.1 = Instant::now();
        entry.0.clone()
    }

    pub fn expire(&self, idle: Duration) {
        self.sessions
            .lock()
            .retain(|_, (_, used)| used.elapsed() < idle);
    }
}

/// Who runs, where, and how to reach the human who may approve.
pub struct CallContext {
    pub identity: super::Identity,
    pub session: Option<String>,
    pub asker: Asker,
    pub grants: Grants,
    /// Runs that can stop at an `ask` call park there (2026-07-28 over a
    /// shared store) instead of waiting in memory.
    pub park: bool,
    /// The user's answer to the call a resumed parked run stopped at, by
    /// server and tool: that call's question is not asked again.
    pub answered: Mutex<Option<(String, String, ElicitResult)>>,
    /// The request's trace context, for the upstream calls (see `telemetry`).
    pub trace: crate::telemetry::RunTrace,
}

impl CallContext {
    pub fn new(
        identity: super::Identity,
        session: Option<String>,
        asker: Asker,
        grants: Grants,
    ) -> Self {
        Self {
            identity,
            session,
            asker,
            grants,
            park: false,
            answered: Mutex::new(None),
            trace: crate::telemetry::RunTrace::current(),
        }
    }
}

/// How a question reaches the user.
pub enum Asker {
    /// `elicitation/create` to a 2025-era client that declared elicitation.
    Client(Peer<RoleServer>),
    /// To the request waiting on this run, which answers `input_required`
    /// (2026-07-28) and passes the retry's answer back.
    Relay(mpsc::UnboundedSender<RunEvent>),
    Nobody,
}

/// What a run relays to the request waiting on it.
pub enum RunEvent {
    Ask(Question),
    /// The run parked in the session store at a call that needs approval;
    /// `state` names it for the retry.
    Parked {
        state: String,
        question: ElicitRequestParams,
    },
    Done(rmcp::model::CallToolResult),
}

/// An approval question and where its answer goes.
pub struct Question {
    pub params: ElicitRequestParams,
    pub answer: oneshot::Sender<ElicitResult>,
}

pub struct GuardedTools {
    catalog: Catalog,
    authority: Arc<Authority>,
    context: Arc<CallContext>,
}

impl GuardedTools {
    pub fn new(catalog: Catalog, authority: Arc<Authority>, context: CallContext) -> Self {
        Self {
            catalog,
            authority,
            context: Arc::new(context),
        }
    }
}

/// One call on its way through the guard.
struct Call {
    catalog: Catalog,
    authority: Arc<Authority>,
    context: Arc<CallContext>,
    engine: &'static str,
    server: String,
    tool: String,
    args: Map<String, Value>,
    /// The saved helper whose code makes the call, for the audit line.
    helper: Option<String>,
}

impl ToolHost for GuardedTools {
    fn sdk(&self) -> Arc<Sdk> {
        self.context.identity.sdk(&self.catalog)
    }

    fn call_tool(
        &self,
        engine: &'static str,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let call = Call {
            catalog: self.catalog.clone(),
            authority: self.authority.clone(),
            context: self.context.clone(),
            engine,
            server: server.to_owned(),
            tool: tool.to_owned(),
            args,
            helper: None,
        };
        Box::pin(call.run())
    }

    fn resource_call(
        &self,
        engine: &'static str,
        call: codemcp_sdk::ResourceCall,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let guard = resources::Guard {
            catalog: self.catalog.clone(),
            authority: self.authority.clone(),
            context: self.context.clone(),
            engine,
        };
        Box::pin(resources::run(guard, call))
    }

    fn call_tool_via(
        &self,
        engine: &'static str,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        helper: Option<&str>,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let call = Call {
            catalog: self.catalog.clone(),
            authority: self.authority.clone(),
            context: self.context.clone(),
            engine,
            server: server.to_owned(),
            tool: tool.to_owned(),
            args,
            helper: helper.map(str::to_owned),
        };
        Box::pin(call.run())
    }

    fn approve_helper_save(
        &self,
        engine: &'static str,
        name: &str,
        source: &str,
    ) -> BoxFuture<'static, Result<(), ToolFailure>> {
        let decision = self
            .authority
            .helpers_save
            .unwrap_or(match self.context.asker {
                Asker::Nobody => Decision::Allow,
                _ => Decision::Ask,
            });
        let mut args = Map::new();
        args.insert("name".into(), Value::String(name.to_owned()));
        args.insert("source".into(), Value::String(source.to_owned()));
        let call = Call {
            catalog: self.catalog.clone(),
            authority: self.authority.clone(),
            context: self.context.clone(),
            engine,
            server: "helpers".to_owned(),
            tool: "save".to_owned(),
            args,
            helper: None,
        };
        Box::pin(async move {
            if decision == Decision::Deny {
                let why = "saving helpers is denied by policy (helpers/save, CODEMCP_HELPERS_SAVE)";
                return Err(call.refuse("deny", why.to_owned()));
            }
            let decided = call.authorize(Some(decision)).await?;
            let shown = super::audit::shown_arguments(&call.args);
            call.record(&shown, decided, "ok", Duration::ZERO, 0);
            Ok(())
        })
    }

    fn parks(&self, server: &str, tool: &str) -> bool {
        let context = &self.context;
        context.park
            && matches!(context.asker, Asker::Relay(_))
            && context.identity.policy(&self.catalog, server, tool) == Some(Decision::Ask)
            && !context
                .grants
                .lock()
                .contains(&(server.to_owned(), tool.to_owned()))
            && !context
                .answered
                .lock()
                .as_ref()
                .is_some_and(|(s, t, _)| s == server && t == tool)
    }
}

impl Call {
    async fn run(mut self) -> Result<Value, ToolFailure> {
        let identity = &self.context.identity;
        let checking = timing::start();
        let policy = identity.policy(&self.catalog, &self.server, &self.tool);
        timing::since("policy checked", checking);
        let decision = self.authorize(policy).await?;
        // The (maybe huge) arguments go upstream without a copy; the audit
        // line needs only what it shows of them, and only when it is read.
        let args = std::mem::take(&mut self.args);
        let audited = self.authority.audit.wanted();
        let shown = if audited {
            super::audit::shown_arguments(&args)
        } else {
            Value::Null
        };
        self.audit_first(&shown, decision)?;
        let started = Instant::now();
        let call = self.catalog.call(&self.server, &self.tool, args);
        let trace = &self.context.trace;
        let result = trace.upstream_call(&self.server, &self.tool, call).await;
        let recording = timing::start();
        let outcome = match &result {
            Ok(r) if r.is_error == Some(true) => "error",
            Ok(_) => "ok",
            Err(UpstreamError::Timeout { .. }) => "timeout",
            Err(_) => "error",
        };
        if audited {
            let result_bytes = match &result {
                Ok(r) => super::audit::json_len(r),
                Err(_) => 0,
            };
            self.record(&shown, decision, outcome, started.elapsed(), result_bytes);
        }
        codemcp_base::metrics::tool_call(&self.server, outcome, started.elapsed());
        timing::since("audit recorded", recording);
        let converting = timing::start();
        let value = match result {
            Ok(result) => crate::upstream::tool_value(result),
            Err(e) => Err(ToolFailure {
                message: e.to_string(),
            }),
        };
        timing::since("result converted", converting);
        value
    }

    /// The audit word for a call its policy lets through, after asking the
    /// user for `ask`; else the refusal, recorded.
    async fn authorize(&self, policy: Option<Decision>) -> Result<&'static str, ToolFailure> {
        match policy {
            Some(Decision::Allow) => Ok("allow"),
            Some(Decision::Ask) => match self.approval().await {
                Ok(()) => {
                    codemcp_base::metrics::approval_decided(true);
                    Ok("approved")
                }
                Err(why) => {
                    codemcp_base::metrics::approval_decided(false);
                    Err(self.refuse("denied", why))
                }
            },
            Some(Decision::Deny) | None => {
                let why = format!(
                    "no tool {}.{} (unknown, or denied by policy)",
                    self.server, self.tool
                );
                Err(self.refuse("deny", why))
            }
        }
    }

    fn refuse(&self, decision: &str, message: String) -> ToolFailure {
        let shown = super::audit::shown_arguments(&self.args);
        self.record(&shown, decision, "none", Duration::ZERO, 0);
        ToolFailure { message }
    }

    fn record(
        &self,
        shown: &Value,
        decision: &str,
        outcome: &str,
        took: Duration,
        result_bytes: usize,
    ) {
        let entry = self.entry(shown, decision, outcome, took, result_bytes);
        self.authority.audit.record(&entry);
    }

    fn entry<'a>(
        &'a self,
        shown: &'a Value,
        decision: &'a str,
        outcome: &'a str,
        took: Duration,
        result_bytes: usize,
    ) -> AuditEntry<'a> {
        AuditEntry {
            principal: &self.context.identity.label,
            session: self.context.session.as_deref(),
            engine: self.engine,
            server: &self.server,
            tool: &self.tool,
            arguments: shown,
            decision,
            outcome,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            result_bytes,
            helper: self.helper.as_deref(),
        }
    }

    /// With `CODEMCP_AUDIT_REQUIRED`, a call that may have side effects (its
    /// tool is not `readOnlyHint`) is made only once a `started` line for it
    /// is in the file; when that write fails the call is refused.
    fn audit_first(&self, shown: &Value, decision: &str) -> Result<(), ToolFailure> {
        let audit = &self.authority.audit;
        if !audit.required() || self.read_only() {
            return Ok(());
        }
        let entry = self.entry(shown, decision, "started", Duration::ZERO, 0);
        audit.try_record(&entry).map_err(|e| ToolFailure {
            message: format!(
                "{}.{} was not called: its audit record could not be written ({e}), and \
                 CODEMCP_AUDIT_REQUIRED refuses calls that may have side effects without one",
                self.server, self.tool
            ),
        })
    }

    /// Whether the tool says it only reads (`readOnlyHint`).
    fn read_only(&self) -> bool {
        self.context
            .identity
            .sdk(&self.catalog)
            .functions()
            .iter()
            .any(|f| f.server == self.server && f.tool == self.tool && f.read_only)
    }

    /// `Ok` when the user approves this call (or approved the tool for the
    /// rest of the session); else why not.
    async fn approval(&self) -> Result<(), String> {
        let key = (self.server.clone(), self.tool.clone());
        if self.context.grants.lock().contains(&key) {
            return Ok(());
        }
        let denied = format!("denied by the user: {}.{}", self.server, self.tool);
        let given = {
            let mut answered = self.context.answered.lock();
            let mine = answered
                .as_ref()
                .is_some_and(|(s, t, _)| *s == self.server && *t == self.tool);
            if mine { answered.take() } else { None }
        };
        let answer = match given {
            Some((_, _, answer)) => answer,
            None => self.ask(&denied).await?,
        };
        if answer.action != ElicitationAction::Accept {
            return Err(denied);
        }
        let scope = answer
            .content
            .as_ref()
            .and_then(|c| c.get("scope"))
            .and_then(Value::as_str);
        if scope == Some(FOR_SESSION) {
            self.context.grants.lock().insert(key);
        }
        Ok(())
    }

    /// Asks the user through whatever the caller's client allows.
    async fn ask(&self, denied: &str) -> Result<ElicitResult, String> {
        if !matches!(self.context.asker, Asker::Nobody) {
            codemcp_base::metrics::approval_asked();
        }
        let timeout = self.authority.approval_timeout;
        let late = || {
            format!(
                "{denied} (no answer within {} s, CODEMCP_APPROVAL_TIMEOUT_SECS)",
                timeout.as_secs()
            )
        };
        Ok(match &self.context.asker {
            Asker::Client(peer) => {
                match peer
                    .create_elicitation_with_timeout(self.question(), Some(timeout))
                    .await
                {
                    Ok(answer) => answer,
                    Err(rmcp::ServiceError::Timeout { .. }) => return Err(late()),
                    Err(e) => return Err(format!("{denied} (asking failed: {e})")),
                }
            }
            Asker::Relay(events) => {
                let (answer, answered) = oneshot::channel();
                let question = Question {
                    params: self.question(),
                    answer,
                };
                if events.send(RunEvent::Ask(question)).is_err() {
                    return Err(format!("{denied} (the client left)"));
                }
                match tokio::time::timeout(timeout, answered).await {
                    Ok(Ok(answer)) => answer,
                    // Dropped: the question expired unanswered.
                    Ok(Err(_)) | Err(_) => return Err(late()),
                }
            }
            Asker::Nobody => {
                return Err(format!(
                    "{}.{} needs the user's approval (policy \"ask\"), and this client cannot ask them \
                     (it declared no elicitation support); the operator can allow the tool with \
                     \"policy\": {{\"{}\": \"allow\"}} in the server's config entry",
                    self.server, self.tool, self.tool
                ));
            }
        })
    }

    fn question(&self) -> ElicitRequestParams {
        approval_question(&self.server, &self.tool, &self.args)
    }
}

/// What the user is asked about a call of `server`'s `tool` with `args`:
/// the server, the tool and every argument's name each on a line of their
/// own, escaped ([`codemcp_base::for_humans`]) so no name or value can forge a line
/// or reorder text, and each value shortened on its own.
pub fn approval_question(
    server: &str,
    tool: &str,
    args: &Map<String, Value>,
) -> ElicitRequestParams {
    use codemcp_base::for_humans::{arguments, shortened};
    let listed = if args.is_empty() {
        "Arguments: none\n".to_owned()
    } else {
        format!(
            "Arguments ({}):\n{}",
            args.len(),
            arguments(args, QUESTION_ARGS_CHARS)
        )
    };
    let message = format!(
        "Agent code wants to call a tool.\nServer: {}\nTool: {}\n{listed}Allow this call?",
        shortened(server, NAME_CHARS),
        shortened(tool, NAME_CHARS),
    );
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: approval_form(),
    }
}

/// How much of a server or tool name the question shows.
const NAME_CHARS: usize = 120;
/// About how many characters the argument values share in the question.
const QUESTION_ARGS_CHARS: usize = 2000;

const FOR_CALL: &str = "this call";
const FOR_SESSION: &str = "the rest of this session";

/// One choice, defaulting to this call only.
fn approval_form() -> ElicitationSchema {
    let choices = vec![FOR_CALL.to_owned(), FOR_SESSION.to_owned()];
    let choice = EnumSchema::builder(choices.clone())
        .with_default(FOR_CALL)
        .unwrap_or_else(|_| EnumSchema::builder(choices))
        .title("Allow")
        .build();
    ElicitationSchema::builder()
        .property("scope", PrimitiveSchemaDefinition::Enum(choice))
        .build_unchecked()
}
