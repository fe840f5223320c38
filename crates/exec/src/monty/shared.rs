//! What both Monty placements (in-process and the worker pool) share: the
//! limits, how a run's ending becomes an `Execution`, and the errors and
//! hints they word the same way.

use std::time::Duration;

use monty_types::{ExcType, MontyException, ResourceLimits};
use serde_json::Value;

use super::classify::Verdict;
use super::driver::Ending;
use super::host::ToolFailures;
use crate::error::cancelled;
use crate::{ErrorKind, Execution, RunError};

/// How long past its deadline a run may take before the gateway answers without
/// it (in-process: freezes its thread; pool: kills its worker). Monty stops
/// itself at the deadline unless it is stuck inside one builtin.
pub(super) const OVERRUN_GRACE: Duration = Duration::from_millis(250);
/// Bytes over the memory budget that all in-process runs together may reach
/// inside one builtin before the allocating thread is frozen (Monty's own
/// checks stop ordinary growth at the budget).
pub const HARD_CEILING_MARGIN: usize = 128 << 20;
/// How often a supervisor looks for a run frozen at the hard ceiling.
pub(super) const CEILING_POLL: Duration = Duration::from_millis(20);

/// The knobs of the Monty engine (filled from `config::Settings`).
#[derive(Debug, Clone)]
pub struct MontyLimits {
    pub exec_timeout: Duration,
    pub max_output_bytes: usize,
    pub max_result_bytes: usize,
    pub max_tool_calls: u32,
    pub max_recursion_depth: usize,
    pub max_sleep_total: Duration,
    pub memory_limit: usize,
    pub session_idle: Duration,
    pub max_sessions: usize,
}

impl MontyLimits {
    /// What Monty itself enforces, the same in both placements.
    pub(super) fn resource_limits(&self) -> ResourceLimits {
        ResourceLimits::default()
            .max_memory(self.memory_limit)
            .max_recursion_depth(self.max_recursion_depth)
            .max_feed_duration(self.exec_timeout)
            .max_turn_duration(self.exec_timeout)
            .max_suspensions(usize::MAX)
    }
}

/// Puts how a run ended into `execution`; shared by both placements.
pub(super) fn record_ending(
    execution: &mut Execution,
    ending: Ending,
    max_result_bytes: usize,
    session_reset: bool,
    limit_hint: &dyn Fn(&MontyException) -> String,
    failures: &ToolFailures,
) {
    match ending {
        Ending::Value(Value::Null) => {}
        Ending::Value(value) => match result_size_error(&value, max_result_bytes) {
            None => execution.result = Some(value),
            Some(error) => execution.error = Some(error),
        },
        // The run succeeded; only its value cannot travel (the same rule as
        // the CPython engine's).
        Ending::NotJson(e) => execution.result_unavailable = Some(crate::not_returned(&e.0)),
        Ending::Cancelled => execution.error = Some(cancelled()),
        Ending::Parked(call) => execution.parked = Some(call),
        Ending::Raised { exc, verdict } => {
            let mut error = describe_failure(&exc, &verdict, limit_hint);
            error.exc_type = failures.type_name(error.exc_type, &error.message);
            error.session_reset = session_reset;
            execution.error = Some(error);
        }
    }
}

pub(super) fn describe_failure(
    exc: &MontyException,
    verdict: &Verdict,
    limit_hint: &dyn Fn(&MontyException) -> String,
) -> RunError {
    let mut exc_type = exc.exc_type().to_string();
    let mut message = exc.message().unwrap_or_default().to_owned();
    if let Some(what) = message.strip_prefix(super::classify::MONTY_INTERNAL) {
        // Monty's own gap, not a fault of the gateway or the code.
        message = format!("Monty cannot run this: {what}");
        exc_type = "NotImplementedError".to_owned();
    }
    let (kind, hint) = match verdict {
        Verdict::Genuine => (ErrorKind::Python, genuine_hint(exc)),
        Verdict::Suspect { reason } => (
            ErrorKind::Python,
            Some(format!("{reason}; if so, rewrite that part")),
        ),
        Verdict::Unsupported { reason } => (ErrorKind::Unsupported, Some(unsupported_hint(reason))),
        Verdict::Limit => (ErrorKind::Limit, Some(limit_hint(exc))),
    };
    let mut error = RunError::new(kind, exc_type, message).with_traceback(short_traceback(exc));
    error.hint = hint;
    error
}

pub(super) fn result_size_error(value: &Value, limit: usize) -> Option<RunError> {
    let size = serde_json::to_string(value).map_or(0, |s| s.len());
    (size > limit).then(|| {
        RunError::new(
            ErrorKind::Limit,
            "ValueError",
            format!("the result is {size} bytes as JSON; the limit is {limit} bytes (CODEMCP_MAX_RESULT_BYTES)"),
        )
        .with_hint("return a summary (counts, the few items you need) instead of the whole data")
    })
}

pub(super) fn unsupported_hint(reason: &str) -> String {
    format!(
        "Monty, the sandboxed Python subset codemcp runs, does not support {reason}. Rewrite that part with \
         supported features (plain functions, dicts and lists instead of class inheritance or generators; \
         json, re, math, datetime, collections, itertools and functools are available)."
    )
}

pub(super) fn genuine_hint(exc: &MontyException) -> Option<String> {
    match exc.exc_type() {
        ExcType::NameError => Some(
            "tools are functions named <server>_<tool>; search_tools('keywords') finds them".into(),
        ),
        ExcType::RuntimeError => None,
        _ => None,
    }
}

/// The innermost frames, CPython style.
pub(super) fn short_traceback(exc: &MontyException) -> Option<String> {
    const FRAMES: usize = 5;
    let frames = exc.traceback();
    if frames.is_empty() {
        return None;
    }
    let mut text = String::new();
    if frames.len() > FRAMES {
        text.push_str(&format!("  ... {} earlier frames\n", frames.len() - FRAMES));
    }
    for frame in &frames[frames.len().saturating_sub(FRAMES)..] {
        let name = frame.frame_name.as_deref().unwrap_or("<module>");
        text.push_str(&format!("  line {}, in {name}\n", frame.start.line));
        if let Some(line) = frame.preview_line.as_deref() {
            let line = line.trim();
            let line: String = line.chars().take(200).collect();
            text.push_str(&format!("    {line}\n"));
        }
    }
    Some(text)
}
