//! What a run gives back, whatever the engine: [`Execution`].

use serde::Serialize;
use serde_json::Value;

use crate::{ParkedCall, RunError};
use codemcp_store::Snapshot;

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
    /// The session's state after the run, when [`Run::persist`](crate::Run::persist) asked for it.
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
