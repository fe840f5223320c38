//! Running agent code: the request and response types shared by every engine,
//! and the interface engines use to reach upstream tools.
//!
//! Nothing here knows about MCP transports: the server hands in code and gets an
//! [`Execution`] back; tool calls go out through [`ToolHost`].

mod executor;
pub mod helpers;
pub mod monty;
mod parked;
mod persistence;
pub mod router;
pub(crate) mod session_table;
pub mod worker;

pub use self::executor::{Executor, RunChecks, Unparked};
pub use self::parked::{Parked, ParkedCall};
pub use self::persistence::Persistence;
// What a run's state is saved as: part of `Execution`, so of this crate's interface.
pub use codemcp_store::{Snapshot, SnapshotKind};

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use codemcp_sdk::Sdk;

/// One `execute_python` call.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub code: String,
    /// The handle of the session to continue; `None` starts a new one.
    pub session: Option<String>,
    /// The caller's own wall-time limit; never more than the configured one.
    pub timeout: Option<Duration>,
}

/// Called after each completed tool call with the number completed so far.
pub type ToolCallObserver = Arc<dyn Fn(u32) + Send + Sync>;

/// How the caller can steer a run from outside.
#[derive(Clone, Default)]
pub struct RunControl {
    pub cancel: CancellationToken,
    pub on_tool_call: Option<ToolCallObserver>,
}

/// Identifies the MCP session whose Python state a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub u64);

impl SessionId {
    /// A process-unique id for a new MCP session.
    pub fn next() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The outcome of one run, whatever the engine.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Execution {
    pub stdout: String,
    /// What the run wrote to `sys.stderr` (`print(..., file=sys.stderr)`,
    /// warnings), kept apart from `stdout` as Python keeps them.
    pub stderr: String,
    /// The snippet's value (last expression, or `result`), as JSON.
    pub result: Option<Value>,
    /// Why the snippet's value is not in `result`: it has no JSON form (an
    /// instance, a class, a cycle…). The run itself succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_unavailable: Option<String>,
    pub error: Option<RunError>,
    pub engine: &'static str,
    /// Why the run left the default engine, when it did.
    pub escalated: Option<String>,
    pub elapsed_ms: u64,
    pub tool_calls: u32,
    /// Output was cut at the output limit.
    pub truncated: bool,
    /// The session's handle: pass it back to continue this session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// What the caller should know that is not an error (state not saved, say).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The session's state after the run, when [`Run::persist`] asked for it.
    #[serde(skip)]
    pub snapshot: Option<Snapshot>,
    /// Why the engine holds a newer state than it could give back to save.
    #[serde(skip)]
    pub unsaved: Option<String>,
    /// Calls of tools not marked read-only that this run issued: after one,
    /// the run is never repeated elsewhere.
    #[serde(skip)]
    pub side_effects: u32,
    /// The run stopped at this call to wait for the user's approval; its
    /// suspended state is [`Execution::snapshot`] (kind `Parked`).
    #[serde(skip)]
    pub parked: Option<ParkedCall>,
}

impl Execution {
    /// How metrics label the way this run ended: `ok`, `parked` or the
    /// error's kind.
    pub fn outcome_label(&self) -> &'static str {
        match (&self.error, self.parked.is_some()) {
            (_, true) => "parked",
            (None, false) => "ok",
            (Some(error), false) => error.kind.label(),
        }
    }

    /// An empty outcome of `engine`, filled in as the run goes.
    pub fn of(engine: &'static str) -> Self {
        Self {
            engine,
            ..Self::default()
        }
    }
}

impl RunRequest {
    /// The run's wall-time limit: the caller's own, never more than `max`.
    pub fn wall_time(&self, max: Duration) -> Duration {
        self.timeout.map_or(max, |t| t.min(max))
    }
}

/// A run that passed the checks every engine relies on: only [`Executor`]
/// makes one from a client's [`RunRequest`].
#[derive(Debug, Clone)]
pub struct Run {
    /// What the engine runs: the prelude's text (if any), then the agent's
    /// snippet. Engines run it as one code; [`Run::analysis`] describes it.
    pub code: String,
    /// The saved helpers defined before the snippet, at the start of
    /// `code`: its own part, so lines can be told apart (see
    /// [`Run::snippet`]).
    pub prelude: Option<Arc<helpers::Prelude>>,
    /// The run's wall-time limit…
    pub wall: Duration,
    /// …and the instant it ends.
    pub deadline: Instant,
    /// The session's state as last saved: the engine loads it unless the
    /// state it holds is that version already.
    pub saved: Option<Arc<Saved>>,
    /// The version the session's state has after this run.
    pub version: u64,
    /// Return the state after the run as [`Execution::snapshot`].
    pub persist: bool,
    /// What the code does (imports, bindings, calls that want a future),
    /// read once for the whole run: by the pre-flight check, else by the
    /// first reader (the router, an engine). See [`Run::facts`].
    pub analysis: codemcp_snippet::Analysis,
}

/// A session's state as an engine saved it, with its version.
#[derive(Debug)]
pub struct Saved {
    pub version: u64,
    pub snapshot: Snapshot,
}

impl Run {
    /// A run of `code` with `wall` time from now. Engines trust it: outside
    /// tests, only [`Executor`] makes one, after its checks.
    pub fn new(code: String, wall: Duration) -> Self {
        Self {
            code,
            wall,
            deadline: Instant::now() + wall,
            saved: None,
            version: 0,
            persist: false,
            analysis: codemcp_snippet::Analysis::default(),
            prelude: None,
        }
    }

    /// Puts `prelude` in front of the snippet, as its own part.
    pub fn with_prelude(mut self, prelude: helpers::Prelude) -> Self {
        self.code.insert_str(0, &prelude.text);
        self.prelude = Some(Arc::new(prelude));
        self
    }

    /// Sets the analysis from the snippet's own `facts`, joined to the
    /// prelude's when it has one: it then describes exactly the code the
    /// engine runs, and the snippet is not parsed again.
    pub async fn know(&mut self, facts: &codemcp_snippet::Facts) {
        let known = match self.prelude.as_deref() {
            Some(prelude) => {
                let first = codemcp_snippet::Facts::of_safely(&prelude.text).await;
                codemcp_snippet::Facts::joined(&prelude.text, &first, self.snippet(), facts)
            }
            None => facts.clone(),
        };
        self.analysis = codemcp_snippet::Analysis::known(known);
    }

    /// The agent's own snippet: `code` without the prelude.
    pub fn snippet(&self) -> &str {
        let skip = self.prelude.as_ref().map_or(0, |p| p.text.len());
        self.code.get(skip..).unwrap_or(&self.code)
    }

    /// What the router needs to know of the code: read once per run.
    pub async fn facts(&self) -> Arc<codemcp_snippet::Facts> {
        self.analysis.facts(&self.code).await
    }

    /// Which of the code's calls want a future: what engines need to know
    /// of it, read once per run (not at all without `await` or `asyncio`).
    pub async fn calls(&self) -> Arc<codemcp_snippet::call_sites::SnippetCalls> {
        self.analysis.calls(&self.code).await
    }

    /// The saved state an engine holding `held` (its state's version, if it
    /// has one) must load first. A parked run is always loaded: it is not a
    /// session state any engine holds.
    pub fn to_restore(&self, held: Option<u64>) -> Option<&Snapshot> {
        let saved = self.saved.as_deref()?;
        let parked = saved.snapshot.kind == SnapshotKind::Parked;
        (parked || held != Some(saved.version)).then_some(&saved.snapshot)
    }

    /// The same code with its whole wall time again, from now: a run that
    /// moves to another engine before any of it ran there.
    pub fn restarted(self) -> Self {
        Self {
            deadline: Instant::now() + self.wall,
            ..self
        }
    }
}

/// What kind of failure a run ended with; tells the agent what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// An exception in the agent's code (including tool errors it did not catch).
    Python,
    /// A resource limit fired; never retried elsewhere.
    Limit,
    /// Valid Python the engine cannot run.
    Unsupported,
    /// The request itself was unusable (empty or oversized code).
    Input,
    /// Calls that cannot work, found before running: nothing ran, and the
    /// session is as it was.
    Preflight,
    /// The client cancelled the run.
    Cancelled,
    /// A fault of the gateway, not of the code.
    Internal,
}

impl ErrorKind {
    /// The kind as metrics and logs label it.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Python => "python_error",
            ErrorKind::Limit => "limit",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Input => "input_error",
            ErrorKind::Preflight => "preflight",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal_error",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunError {
    pub kind: ErrorKind,
    /// Python exception type, e.g. `ZeroDivisionError`.
    #[serde(rename = "type")]
    pub exc_type: String,
    pub message: String,
    /// A short traceback, innermost frame last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    /// What the agent can do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The session's variables were discarded because of this error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub session_reset: bool,
}

/// Error messages longer than this are cut: neither the output nor the result
/// cap covers an exception's text, and agents can make it arbitrarily large.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 8 * 1024;

fn capped(mut message: String) -> String {
    if message.len() > MAX_ERROR_MESSAGE_BYTES {
        let mut cut = MAX_ERROR_MESSAGE_BYTES;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = message.len();
        message.truncate(cut);
        message.push_str(&format!("… [message truncated: {total} bytes]"));
    }
    message
}

impl RunError {
    pub fn new(kind: ErrorKind, exc_type: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind,
            exc_type: exc_type.into(),
            message: capped(message.into()),
            traceback: None,
            hint: None,
            session_reset: false,
        }
    }

    /// Sets the traceback, cut like the message.
    pub fn with_traceback(mut self, traceback: Option<String>) -> Self {
        self.traceback = traceback.map(capped);
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl From<codemcp_snippet::preflight::Rejection> for RunError {
    fn from(rejection: codemcp_snippet::preflight::Rejection) -> Self {
        RunError::new(ErrorKind::Preflight, rejection.exc_type, rejection.message)
            .with_hint(rejection.hint)
    }
}

/// A tool call that failed: the upstream said `isError`, timed out or is gone.
/// Agent code sees it as `ToolError` (a `RuntimeError`) carrying `message`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    pub message: String,
}

/// Runs snippets for MCP sessions. Every engine keeps the same calling contract
/// and limits; they differ in where the code runs. Engines get only runs that
/// passed [`Executor`]'s checks.
pub trait Engine: Send + Sync + 'static {
    /// The name results carry in `engine` (`monty`, `cpython`, `cpython-docker`).
    fn name(&self) -> &'static str;
    /// One line for `codemcp check` and logs.
    fn describe(&self) -> String;
    fn run(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> BoxFuture<'_, Execution>;
    /// Whether this engine holds `session`'s state at `version` now, so a
    /// run need not load it from the store.
    fn holds(&self, session: SessionId, version: u64) -> bool {
        let _ = (session, version);
        false
    }
    /// The MCP session ended: drop its state.
    fn end_session(&self, session: SessionId);
    /// Drop sessions that have been idle too long.
    fn expire_idle(&self);
    /// Stops what outlives a run (worker processes, containers) before the
    /// gateway exits.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// What the agent reads when the snippet's value has no JSON form, from
/// why (`reason`, the same words on every engine): the run still succeeds.
pub fn not_returned(reason: &str) -> String {
    if reason.contains("return ") {
        // The reason says what to do already (a big integer: `str()` of it).
        format!("the value was not returned: {reason}")
    } else {
        format!(
            "the value was not returned: {reason}; return a dict, list, str, number, bool or None made from it, or print it"
        )
    }
}

/// Whether the run discarded the session's state.
pub fn reset(execution: &Execution) -> bool {
    execution.error.as_ref().is_some_and(|e| e.session_reset)
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
    /// and the run should rather park there (see [`Parked`]). Engines that
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_error_messages_are_cut_at_a_char_boundary() {
        let error = RunError::new(ErrorKind::Python, "ValueError", "é".repeat(1_000_000));
        assert!(error.message.len() < MAX_ERROR_MESSAGE_BYTES + 100);
        assert!(
            error
                .message
                .ends_with("[message truncated: 2000000 bytes]"),
            "{}",
            &error.message[error.message.len() - 60..]
        );
    }
}
