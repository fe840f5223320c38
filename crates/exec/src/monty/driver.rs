//! The in-process drive loop: feeds one snippet to a session's `MontyRepl` on a
//! dedicated thread and answers every suspension (tool calls, name lookups, OS
//! calls, futures) until the snippet completes. What to answer is decided by
//! [`SuspensionHost`], shared with the worker-pool placement.
//!
//! Tool calls run on the tokio runtime; their results come back over a channel,
//! so the interpreter thread never blocks the runtime and the runtime never
//! runs the interpreter.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use monty::{MontyRepl, ReplProgress, ReplStartError};
use monty_types::{ExcType, MontyException, MontyObject, NameLookupResult, PrintWriter};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::classify::{Verdict, classify};
use super::convert::{NotJson, to_json};
use super::host::{SuspensionHost, ToolFailures, exception};
use super::memory::{MemoryScope, SessionSlot};
use super::output::{Captured, OutputCapture};
use super::snapshot;
use crate::{ParkedCall, ToolCallObserver, ToolHost};
use codemcp_sdk::Sdk;
use codemcp_snippet::call_sites::{RunCalls, SessionCalls, SnippetCalls};

mod calls;

/// Per-run limits enforced by the host side of the loop.
#[derive(Debug, Clone)]
pub struct RunLimits {
    pub deadline: Instant,
    pub max_tool_calls: u32,
    pub max_output_bytes: usize,
    pub max_sleep_total: Duration,
}

/// Everything one run needs; moved onto the interpreter thread.
pub struct Job {
    /// The session's interpreter, or a fresh one when `restore` is set.
    pub repl: MontyRepl,
    /// A saved state to load in place of `repl` (empty: start fresh).
    pub restore: Option<Arc<Vec<u8>>>,
    /// `restore` is a run parked at a call: resume it instead of feeding `code`.
    pub resume_parked: bool,
    /// Dump the interpreter after the run, for the session store.
    pub dump: bool,
    pub code: String,
    pub slot: SessionSlot,
    pub limits: RunLimits,
    pub tools: Arc<dyn ToolHost>,
    pub sdk: Arc<Sdk>,
    pub runtime: Handle,
    pub cancel: CancellationToken,
    pub on_tool_call: Option<ToolCallObserver>,
    /// The session's snippets, for deciding which calls get futures.
    pub calls: Arc<parking_lot::Mutex<SessionCalls>>,
    /// This snippet's calls, from the run's one analysis.
    pub snippet_calls: Arc<SnippetCalls>,
}

/// How a run ended, before it is turned into an `Execution`.
pub enum Ending {
    Value(Value),
    /// A Python exception with what it means.
    Raised {
        exc: MontyException,
        verdict: Verdict,
    },
    /// The result existed but has no JSON form.
    NotJson(NotJson),
    Cancelled,
    /// Stopped at a call that waits for the user (see `exec::parked`).
    Parked(ParkedCall),
}

pub struct Finished {
    /// The session to keep; `None` when it must be discarded.
    pub repl: Option<MontyRepl>,
    /// The kept session as bytes, when the job asked for them; for a parked
    /// run, the suspended run.
    pub snapshot: Option<Result<Vec<u8>, String>>,
    /// Why the saved state given to the job could not be loaded.
    pub restore_failed: Option<String>,
    pub ending: Ending,
    pub output: Captured,
    pub tool_calls: u32,
    pub side_effects: u32,
    /// Bytes every other in-process session held when a limit fired.
    pub others_bytes: usize,
    pub tool_failures: ToolFailures,
}

type StepResult = Result<ReplProgress, Box<ReplStartError>>;
type CallResult = Result<MontyObject, MontyException>;

struct Driver {
    slot: SessionSlot,
    limits: RunLimits,
    host: SuspensionHost,
    tools: Arc<dyn ToolHost>,
    runtime: Handle,
    cancel: CancellationToken,
    on_tool_call: Option<ToolCallObserver>,
    out: OutputCapture,
    /// Which tool calls get futures rather than values (see `on_call`).
    calls: RunCalls,
    completed_calls: u32,
    results_tx: Sender<(u32, CallResult)>,
    results_rx: Receiver<(u32, CallResult)>,
    /// Results that arrived while waiting for another call.
    early: HashMap<u32, CallResult>,
    /// Set when the host aborts the run, so the abort is not misread.
    host_verdict: Option<Verdict>,
    cancelled: bool,
    others_bytes: usize,
    /// The run parks at this call; its suspended state as bytes.
    parked: Option<(ParkedCall, Vec<u8>)>,
}

/// Runs one snippet to its end. Blocking: call it on a dedicated thread.
pub fn run(job: Job) -> Finished {
    let (results_tx, results_rx) = channel();
    let mut driver = Driver {
        slot: job.slot,
        out: OutputCapture::new(job.limits.max_output_bytes),
        host: SuspensionHost::new(
            job.sdk,
            job.limits.max_tool_calls,
            job.limits.max_sleep_total,
        ),
        limits: job.limits,
        tools: job.tools,
        runtime: job.runtime,
        cancel: job.cancel,
        on_tool_call: job.on_tool_call,
        calls: RunCalls::new(job.calls, &job.code, job.snippet_calls),
        completed_calls: 0,
        results_tx,
        results_rx,
        early: HashMap::new(),
        host_verdict: None,
        cancelled: false,
        others_bytes: 0,
        parked: None,
    };
    let (start, restore_failed) = match job.restore.as_deref() {
        Some(bytes) if bytes.as_slice() != snapshot::FRESH => match snapshot::load(bytes, job.slot)
        {
            Ok(restored) => (restored, None),
            Err(e) => (snapshot::Loaded::Idle(Box::new(job.repl)), Some(e)),
        },
        _ => (snapshot::Loaded::Idle(Box::new(job.repl)), None),
    };
    let (repl, ending) = match start {
        snapshot::Loaded::Idle(repl) if !job.resume_parked => {
            driver.calls.runs_as(repl.next_script_name());
            driver.feed(*repl, &job.code)
        }
        snapshot::Loaded::Suspended(progress) if job.resume_parked => driver.resume(*progress),
        // A state of the other kind than the job expects: never fed to Monty.
        _ => (None, mismatched_state()),
    };
    if let Ending::Parked(call) = ending {
        return driver.into_parked(call, restore_failed);
    }
    let (repl, ending) = match (repl, ending) {
        (Some(repl), Ending::Value(Value::Null)) if mentions_result(&job.code) => {
            driver.read_result_variable(repl)
        }
        other => other,
    };
    let tool_calls = driver.host.tool_calls;
    let side_effects = driver.host.side_effects;
    let output = driver.out.finish();
    let snapshot = match &repl {
        Some(repl) if job.dump => {
            let started = Instant::now();
            let dumped = snapshot::dump(repl);
            tracing::trace!(target: "codemcp::timing", us = started.elapsed().as_micros(), "session dumped");
            Some(dumped)
        }
        _ => None,
    };
    Finished {
        repl,
        snapshot,
        restore_failed,
        ending,
        output,
        tool_calls,
        side_effects,
        others_bytes: driver.others_bytes,
        tool_failures: driver.host.failures.clone(),
    }
}

/// Whether the snippet may have assigned `result` (the contract's way to return
/// a value from code whose last statement is not an expression).
pub fn mentions_result(code: &str) -> bool {
    code.match_indices("result").any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + "result".len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Driver {
    fn remaining(&self) -> Duration {
        self.limits
            .deadline
            .saturating_duration_since(Instant::now())
    }

    /// Resumes a parked run at the call it stopped at, and drives it on.
    fn resume(&mut self, mut progress: ReplProgress) -> (Option<MontyRepl>, Ending) {
        let remaining = self.remaining();
        progress.tracker_mut().set_max_feed_duration(remaining);
        self.drive(Ok(progress))
    }

    /// The run ends here: its state is the dump taken where it parked.
    fn into_parked(mut self, call: ParkedCall, restore_failed: Option<String>) -> Finished {
        let dump = self.parked.take().map(|(_, bytes)| bytes);
        Finished {
            repl: None,
            snapshot: dump.map(Ok),
            restore_failed,
            ending: Ending::Parked(call),
            output: self.out.finish(),
            tool_calls: self.host.tool_calls,
            side_effects: self.host.side_effects,
            others_bytes: 0,
            tool_failures: self.host.failures.clone(),
        }
    }

    /// Feeds `code` and drives it to completion.
    fn feed(&mut self, repl: MontyRepl, code: &str) -> (Option<MontyRepl>, Ending) {
        let mut repl = repl;
        let remaining = self.remaining();
        repl.tracker_mut().set_max_feed_duration(remaining);
        repl.tracker_mut().set_max_turn_duration(remaining);
        let started = codemcp_base::timing::start();
        let first = {
            let _scope = MemoryScope::enter(self.slot);
            repl.feed_start(
                code,
                Vec::<(String, MontyObject)>::new(),
                PrintWriter::Callback(&mut self.out),
            )
        };
        codemcp_base::timing::since("monty fed", started);
        self.drive(first)
    }

    fn drive(&mut self, mut step: StepResult) -> (Option<MontyRepl>, Ending) {
        loop {
            let mut progress = match step {
                Ok(progress) => progress,
                Err(err) => return self.raised(*err),
            };
            if let ReplProgress::Complete { repl, value } = progress {
                return self.completed(repl, value);
            }
            if let Some((call, _)) = &self.parked {
                let call = call.clone();
                // Freed under the session's slot, which charged it.
                let _scope = MemoryScope::enter(self.slot);
                drop(progress);
                return (None, Ending::Parked(call));
            }
            if self.cancel.is_cancelled() || self.cancelled {
                self.cancelled = true;
                return (Some(progress.into_repl()), Ending::Cancelled);
            }
            let remaining = self.remaining();
            if remaining.is_zero() {
                step = self.abort(
                    progress,
                    Verdict::Limit,
                    exception(ExcType::TimeoutError, self.wall_limit_message()),
                );
                continue;
            }
            // The turn limit is what is left of the run's wall time, so time spent
            // waiting on tools counts too.
            progress.tracker_mut().set_max_turn_duration(remaining);
            step = match progress {
                ReplProgress::FunctionCall(call) => self.on_call(call),
                ReplProgress::NameLookup(lookup) => match self.host.on_lookup(&lookup.name) {
                    Ok(answer) => {
                        let _scope = MemoryScope::enter(self.slot);
                        lookup.resume(answer, PrintWriter::Callback(&mut self.out))
                    }
                    Err((verdict, exc)) => {
                        self.abort(ReplProgress::NameLookup(lookup), verdict, exc)
                    }
                },
                ReplProgress::OsCall(os) => self.on_os_call(os),
                ReplProgress::ResolveFutures(waiting) => {
                    let pending: Vec<u32> = waiting.pending_call_ids().to_vec();
                    match self.wait_any(&pending) {
                        Ok(results) => {
                            let _scope = MemoryScope::enter(self.slot);
                            waiting.resume(results, PrintWriter::Callback(&mut self.out))
                        }
                        Err(stop) => {
                            let (verdict, exc) = stop.into_abort(self);
                            let _scope = MemoryScope::enter(self.slot);
                            self.host_verdict = Some(verdict);
                            waiting.abort(exc, PrintWriter::Callback(&mut self.out))
                        }
                    }
                }
                ReplProgress::Complete { .. } => unreachable!("handled above"),
            };
        }
    }

    fn wall_limit_message(&self) -> String {
        "run time limit exceeded (CODEMCP_EXEC_TIMEOUT_MS or the call's timeout_ms)".to_owned()
    }

    fn abort(
        &mut self,
        progress: ReplProgress,
        verdict: Verdict,
        exc: MontyException,
    ) -> StepResult {
        self.host_verdict = Some(verdict);
        let _scope = MemoryScope::enter(self.slot);
        let print = PrintWriter::Callback(&mut self.out);
        match progress {
            ReplProgress::FunctionCall(c) => c.abort(exc, print),
            ReplProgress::OsCall(c) => c.abort(exc, print),
            ReplProgress::NameLookup(c) => c.abort(exc, print),
            ReplProgress::ResolveFutures(c) => c.abort(exc, print),
            ReplProgress::Complete { repl, .. } => {
                Err(Box::new(ReplStartError { repl, error: exc }))
            }
        }
    }

    fn raised(&mut self, err: ReplStartError) -> (Option<MontyRepl>, Ending) {
        let ReplStartError { repl, error } = err;
        if self.cancelled {
            return (Some(repl), Ending::Cancelled);
        }
        let verdict = self.host_verdict.take().unwrap_or_else(|| classify(&error));
        self.others_bytes =
            super::memory::total_live_bytes().saturating_sub(self.slot.live_bytes());
        // After a limit Monty makes no promise about heap state: drop the session.
        let keep = !matches!(verdict, Verdict::Limit);
        (
            keep.then_some(repl),
            Ending::Raised {
                exc: error,
                verdict,
            },
        )
    }

    fn completed(&mut self, repl: MontyRepl, value: MontyObject) -> (Option<MontyRepl>, Ending) {
        let ending = match to_json(&value) {
            Ok(json) => Ending::Value(json),
            Err(e) => Ending::NotJson(e),
        };
        drop(value);
        (Some(repl), ending)
    }

    /// The snippet ended on a statement: return `result` if the code set it.
    fn read_result_variable(&mut self, repl: MontyRepl) -> (Option<MontyRepl>, Ending) {
        let mut step = {
            let _scope = MemoryScope::enter(self.slot);
            repl.feed_start(
                "result",
                Vec::<(String, MontyObject)>::new(),
                PrintWriter::Callback(&mut self.out),
            )
        };
        loop {
            step = match step {
                Ok(ReplProgress::Complete { repl, value }) => return self.completed(repl, value),
                Ok(ReplProgress::NameLookup(lookup)) => {
                    let _scope = MemoryScope::enter(self.slot);
                    lookup.resume(
                        NameLookupResult::Undefined,
                        PrintWriter::Callback(&mut self.out),
                    )
                }
                Ok(other) => return (Some(other.into_repl()), Ending::Value(Value::Null)),
                Err(err) => return (Some(err.repl), Ending::Value(Value::Null)),
            };
        }
    }
}

/// A job whose saved state is not what it says (a parked run to feed, or a
/// session to resume): refused before Monty sees it.
fn mismatched_state() -> Ending {
    Ending::Raised {
        exc: exception(
            ExcType::RuntimeError,
            "the saved state is not of the kind this run needs; call again".to_owned(),
        ),
        verdict: Verdict::Genuine,
    }
}
