//! The Monty engine, in-process placement: agent code runs in the `monty`
//! interpreter on dedicated threads, one `MontyRepl` per MCP session.
//!
//! Limits: wall time per run and per turn, recursion depth, source size, output
//! bytes, result size, tool calls, total sleep, and memory (one budget shared by
//! all in-process sessions; see `memory.rs`). After a limit fires the session's
//! state is discarded, because Monty makes no promise about a heap it stopped.

pub mod classify;
mod convert;
#[rustfmt::skip]
mod cpython_tables;
mod driver;
mod host;
pub mod memory;
mod output;
pub mod pool;
pub(crate) mod sessions;
mod threads;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use monty::MontyRepl;
use monty_types::{CompileOptions, ExcType, MontyException, ResourceLimits, ResourceTracker};
use serde_json::Value;
use tokio::sync::Mutex as AsyncMutex;

use self::classify::Verdict;
use self::driver::{Ending, Finished, Job, RunLimits};
use self::memory::SessionSlot;
use self::sessions::{SessionTable, TableFull};
use super::{ErrorKind, Execution, RunControl, RunError, RunRequest, SessionId, ToolHost};

pub const ENGINE_NAME: &str = "monty";

/// Interpreter threads get a big stack: deep (but legal) recursion must end in
/// `RecursionError`, never in a native stack overflow.
const INTERPRETER_STACK: usize = 256 << 20;

static INTERPRETER_THREADS: threads::ThreadCache = threads::ThreadCache::new(INTERPRETER_STACK);

/// The knobs of the Monty engine (filled from `config::Settings`).
#[derive(Debug, Clone)]
pub struct MontyLimits {
    pub exec_timeout: Duration,
    pub max_output_bytes: usize,
    pub max_result_bytes: usize,
    pub max_source_bytes: usize,
    pub max_tool_calls: u32,
    pub max_recursion_depth: usize,
    pub max_sleep_total: Duration,
    pub memory_limit: usize,
    pub session_idle: Duration,
    pub max_sessions: usize,
}

struct Session {
    /// `None` between a discarded state and the next run.
    repl: Option<MontyRepl>,
    slot: SessionSlot,
}

pub struct MontyEngine {
    limits: MontyLimits,
    sessions: SessionTable<Session>,
}

impl MontyEngine {
    pub fn new(limits: MontyLimits) -> Self {
        memory::enable_accounting();
        warm_up();
        let sessions = SessionTable::new(limits.session_idle, limits.max_sessions);
        Self { limits, sessions }
    }

    pub fn limits(&self) -> &MontyLimits {
        &self.limits
    }

    /// Runs `request` in `session`'s interpreter state.
    pub async fn run(
        &self,
        session: SessionId,
        request: RunRequest,
        host: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        let started = Instant::now();
        let wall = request.wall_time(self.limits.exec_timeout);
        let deadline = started + wall;
        let mut execution = Execution::of(ENGINE_NAME);
        if let Err(error) = check_source(&request.code, self.limits.max_source_bytes) {
            execution.error = Some(error);
            return execution;
        }
        let state = match self.session(session) {
            Ok(state) => state,
            Err(error) => {
                execution.error = Some(error);
                return execution;
            }
        };
        // One run at a time per session: a second concurrent call waits its turn.
        let guard = tokio::select! {
            guard = state.lock_owned() => guard,
            () = tokio::time::sleep_until(deadline.into()) => {
                execution.error = Some(RunError::new(ErrorKind::Limit, "TimeoutError",
                    "timed out waiting for this session's previous run to finish"));
                return execution;
            }
            () = control.cancel.cancelled() => {
                execution.error = Some(cancelled());
                return execution;
            }
        };
        let finished = self
            .run_on_thread(guard, request.code, deadline, host, control)
            .await;
        self.fill(&mut execution, finished);
        execution.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        execution
    }

    /// Forgets a session (its MCP session ended).
    pub fn end_session(&self, session: SessionId) {
        self.sessions.remove(session);
    }

    /// Drops sessions idle for longer than the configured time.
    pub fn expire_idle(&self) {
        self.sessions.expire_idle();
    }

    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    fn session(&self, id: SessionId) -> Result<Arc<AsyncMutex<Session>>, RunError> {
        self.sessions
            .get_or_create(id, || Session {
                repl: None,
                slot: SessionSlot::allocate(),
            })
            .map_err(busy)
    }

    fn new_repl(&self) -> MontyRepl {
        let limits = ResourceLimits::default()
            .max_memory(self.limits.memory_limit)
            .max_recursion_depth(self.limits.max_recursion_depth)
            .max_feed_duration(self.limits.exec_timeout)
            .max_turn_duration(self.limits.exec_timeout)
            .max_suspensions(usize::MAX);
        let mut repl = MontyRepl::new(
            "main.py",
            ResourceTracker::new(limits),
            CompileOptions::default(),
        );
        // Monty has no user exception classes; `ToolError` is `RuntimeError` under
        // another name, so `except ToolError` catches failed tool calls.
        let mut out = String::new();
        if let Err(e) = repl.feed_run(
            "ToolError = RuntimeError",
            Vec::<(String, monty_types::MontyObject)>::new(),
            monty_types::PrintWriter::CollectString(&mut out, Some(0)),
        ) {
            tracing::error!(target: "codemcp::exec", error = %e.summary(), "defining ToolError failed");
        }
        repl
    }

    async fn run_on_thread(
        &self,
        mut guard: tokio::sync::OwnedMutexGuard<Session>,
        code: String,
        deadline: Instant,
        host: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> ThreadResult {
        let repl = guard.repl.take().unwrap_or_else(|| self.new_repl());
        let job = Job {
            repl,
            code,
            slot: guard.slot,
            limits: RunLimits {
                deadline,
                max_tool_calls: self.limits.max_tool_calls,
                max_output_bytes: self.limits.max_output_bytes,
                max_sleep_total: self.limits.max_sleep_total,
            },
            sdk: host.sdk(),
            tools: host,
            runtime: tokio::runtime::Handle::current(),
            cancel: control.cancel,
            on_tool_call: control.on_tool_call,
        };
        let cancel = job.cancel.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = INTERPRETER_THREADS.run(Box::new(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| driver::run(job)));
            let result = match outcome {
                Ok(mut finished) => {
                    let session_reset = finished.repl.is_none();
                    guard.repl = finished.repl.take();
                    ThreadResult::Finished {
                        finished: Box::new(finished),
                        session_reset,
                    }
                }
                Err(panic) => ThreadResult::Panicked(panic_message(&panic)),
            };
            // The session unlocks only once its state is back in place, even
            // when the caller stopped waiting.
            drop(guard);
            let _ = tx.send(result);
        }));
        if let Err(e) = spawned {
            return ThreadResult::Panicked(format!("could not start an interpreter thread: {e}"));
        }
        tokio::select! {
            biased;
            result = rx => result
                .unwrap_or_else(|_| ThreadResult::Panicked("the interpreter thread vanished".into())),
            // Monty cannot be interrupted mid-turn: the thread stops at its next
            // suspension or at the wall-time limit, and the caller need not wait.
            () = cancel.cancelled() => ThreadResult::Cancelled,
        }
    }

    fn fill(&self, execution: &mut Execution, result: ThreadResult) {
        let (finished, session_reset) = match result {
            ThreadResult::Finished {
                finished,
                session_reset,
            } => (finished, session_reset),
            ThreadResult::Cancelled => {
                execution.error = Some(cancelled());
                return;
            }
            ThreadResult::Panicked(message) => {
                tracing::error!(target: "codemcp::exec", %message, "the Monty interpreter panicked");
                let mut error = RunError::new(
                    ErrorKind::Internal,
                    "SystemError",
                    format!("the interpreter failed: {message}"),
                )
                .with_hint(
                    "this is a gateway bug; the session's variables were discarded, retry the call",
                );
                error.session_reset = true;
                execution.error = Some(error);
                return;
            }
        };
        let Finished {
            ending,
            stdout,
            truncated,
            tool_calls,
            side_effects,
            session_bytes,
            ..
        } = *finished;
        execution.stdout = stdout;
        execution.truncated = truncated;
        execution.tool_calls = tool_calls;
        execution.side_effects = side_effects;
        let limit_hint = |exc: &MontyException| self.limit_hint(exc, session_bytes);
        record_ending(
            execution,
            ending,
            self.limits.max_result_bytes,
            session_reset,
            &limit_hint,
        );
    }

    fn limit_hint(&self, exc: &MontyException, slot_bytes: usize) -> String {
        let reset = "this session's variables were discarded";
        if exc.exc_type() != ExcType::MemoryError {
            return format!("{reset}; do less work per call (smaller batches, fewer iterations)");
        }
        let budget = self.limits.memory_limit;
        if slot_bytes < budget / 2 {
            format!(
                "{reset}. This session held only {} KiB of the {} MiB in-process budget, which all in-process \
                 sessions share: other sessions used the rest (collateral). Retry shortly.",
                slot_bytes / 1024,
                budget >> 20
            )
        } else {
            format!(
                "{reset}; the in-process memory budget is {} MiB (CODEMCP_MONTY_MEM_LIMIT): work on less data at once",
                budget >> 20
            )
        }
    }
}

/// Puts how a run ended into `execution`; shared by both placements.
fn record_ending(
    execution: &mut Execution,
    ending: Ending,
    max_result_bytes: usize,
    session_reset: bool,
    limit_hint: &dyn Fn(&MontyException) -> String,
) {
    match ending {
        Ending::Value(Value::Null) => {}
        Ending::Value(value) => match result_size_error(&value, max_result_bytes) {
            None => execution.result = Some(value),
            Some(error) => execution.error = Some(error),
        },
        Ending::NotJson(e) => {
            execution.error = Some(
                RunError::new(
                    ErrorKind::Python,
                    "TypeError",
                    format!("the result cannot be returned: {e}"),
                )
                .with_hint("return a dict, list, str or number, or print what you need"),
            );
        }
        Ending::Cancelled => execution.error = Some(cancelled()),
        Ending::Raised { exc, verdict } => {
            let mut error = describe_failure(&exc, &verdict, limit_hint);
            error.session_reset = session_reset;
            execution.error = Some(error);
        }
    }
}

fn describe_failure(
    exc: &MontyException,
    verdict: &Verdict,
    limit_hint: &dyn Fn(&MontyException) -> String,
) -> RunError {
    let exc_type = exc.exc_type().to_string();
    let message = exc.message().unwrap_or_default().to_owned();
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

enum ThreadResult {
    Finished {
        finished: Box<Finished>,
        session_reset: bool,
    },
    /// The caller cancelled; the thread may still be finishing the run.
    Cancelled,
    Panicked(String),
}

fn check_source(code: &str, max_source_bytes: usize) -> Result<(), RunError> {
    if code.len() > max_source_bytes {
        return Err(RunError::new(
            ErrorKind::Input,
            "ValueError",
            format!("code is {} bytes; the limit is {max_source_bytes} bytes (CODEMCP_MAX_SOURCE_BYTES)", code.len()),
        )
        .with_hint("send a shorter snippet; keep data in session variables between calls"));
    }
    Ok(())
}

fn busy(full: TableFull) -> RunError {
    RunError::new(
        ErrorKind::Limit,
        "RuntimeError",
        format!(
            "all {} sessions are busy (CODEMCP_MAX_SESSIONS); try again",
            full.0
        ),
    )
}

fn cancelled() -> RunError {
    RunError::new(
        ErrorKind::Cancelled,
        "KeyboardInterrupt",
        "the run was cancelled by the client",
    )
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn result_size_error(value: &Value, limit: usize) -> Option<RunError> {
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

fn unsupported_hint(reason: &str) -> String {
    format!(
        "Monty, the sandboxed Python subset codemcp runs, does not support {reason}. Rewrite that part with \
         supported features (plain functions, dicts and lists instead of class inheritance or generators; \
         json, re, math, datetime, collections, itertools and functools are available)."
    )
}

fn genuine_hint(exc: &MontyException) -> Option<String> {
    match exc.exc_type() {
        ExcType::NameError => Some(
            "tools are functions named <server>_<tool>; search_tools('keywords') finds them".into(),
        ),
        ExcType::RuntimeError => None,
        _ => None,
    }
}

/// The innermost frames, CPython style.
fn short_traceback(exc: &MontyException) -> Option<String> {
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

/// Touches Monty's lazily initialised statics outside any memory scope, so they
/// are never charged to a session.
fn warm_up() {
    let mut repl = MontyRepl::new(
        "warmup.py",
        ResourceTracker::new(ResourceLimits::default()),
        CompileOptions::default(),
    );
    let code = "import json, re, math, datetime, collections, itertools, functools\n\
                x = json.dumps({'a': 2**100, 'b': [1.5, 'x']})\n\
                y = re.sub('a', 'b', 'abc') + f'{3.5:.1f}' + str(datetime.date(2020, 1, 1))\n\
                len(x) + len(y)";
    let mut out = String::new();
    if let Err(e) = repl.feed_run(
        code,
        Vec::<(String, monty_types::MontyObject)>::new(),
        monty_types::PrintWriter::CollectString(&mut out, Some(1024)),
    ) {
        tracing::debug!(target: "codemcp::exec", error = %e.summary(), "Monty warm-up raised");
    }
}
