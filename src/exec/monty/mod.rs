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
pub(crate) mod cpython_tables;
mod driver;
mod host;
pub mod memory;
mod output;
pub mod pool;
mod runaway;
mod snapshot;
mod spare;
mod supervisor;
mod threads;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use monty::MontyRepl;
use monty_types::{CompileOptions, ExcType, MontyException, ResourceLimits, ResourceTracker};
use serde_json::Value;
use tokio::sync::Mutex as AsyncMutex;

use self::classify::Verdict;
use self::driver::{Ending, Finished, Job, RunLimits};
use self::host::ToolFailures;
use self::memory::SessionSlot;
pub use self::runaway::MAX_FROZEN_THREADS;
use self::runaway::{Overrun, RunWatch, Runaways};
use self::supervisor::{Supervisor, ThreadResult};
use super::call_sites::SessionCalls;
use super::session_table::{SessionTable, TableFull};
use super::{
    Engine, ErrorKind, Execution, Run, RunControl, RunError, SessionId, Snapshot, ToolHost, reset,
};

pub const ENGINE_NAME: &str = "monty";

/// Interpreter threads get a big stack: deep (but legal) recursion must end in
/// `RecursionError`, never in a native stack overflow.
const INTERPRETER_STACK: usize = 256 << 20;

static INTERPRETER_THREADS: threads::ThreadCache = threads::ThreadCache::new(INTERPRETER_STACK);

/// Agent code up to this size is parsed (and its tree walked) on the calling
/// thread: a hop to an interpreter thread and back costs 50-90 µs, more than
/// parsing a snippet this size. Bigger code hops, so a long parse never
/// holds up an async worker thread.
const PARSE_HERE_MAX: usize = 8 << 10;

/// The stack of the async runtime's threads: room to parse most snippets on
/// it as they are (see [`on_big_stack_for`]). Only the pages used are
/// committed.
pub const RUNTIME_STACK: usize = 64 << 20;

/// Stack a parse and walk of agent code needs per byte of it, at most: the
/// deepest syntax (`((((x))))`, `----x`) nests one level per byte or two,
/// and ruff's parser took up to 0.94 KiB per byte (release build); the
/// walks and the tree's drop nest as deep. Four times that, to be safe.
const STACK_PER_CODE_BYTE: usize = 4 << 10;
/// Stack the parse needs whatever the code, with the frames above it.
const STACK_BASE: usize = 256 << 10;

/// Runs `job`, work on agent code `code_len` bytes long whose nesting the
/// agent controls (parsing it, walking its syntax tree, dropping the tree),
/// where no code that long can overflow the stack: on the current stack
/// when what is left of it is enough (the common case, costing nothing),
/// else on a stack as big as an interpreter thread's. `None` if it panicked
/// or no thread could run it.
pub async fn on_big_stack_for<T: Send + 'static>(
    code_len: usize,
    job: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    if code_len <= PARSE_HERE_MAX {
        let needs = code_len
            .saturating_mul(STACK_PER_CODE_BYTE)
            .saturating_add(STACK_BASE);
        let job = || stacker::maybe_grow(needs, INTERPRETER_STACK, job);
        return catch_unwind(AssertUnwindSafe(job)).ok();
    }
    on_big_stack(job).await
}

/// Runs `job` on an interpreter thread: work on agent code whose nesting
/// the agent controls (parsing it, walking its syntax tree, dropping the
/// tree) needs the big stack too. `None` if no thread could run it or it
/// panicked.
pub async fn on_big_stack<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(job)).ok());
    });
    INTERPRETER_THREADS.run(task).ok()?;
    rx.await.ok().flatten()
}

/// How long past its deadline a run may take before the gateway answers without
/// it (in-process: freezes its thread; pool: kills its worker). Monty stops
/// itself at the deadline unless it is stuck inside one builtin.
const OVERRUN_GRACE: Duration = Duration::from_millis(250);
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
    fn resource_limits(&self) -> ResourceLimits {
        ResourceLimits::default()
            .max_memory(self.memory_limit)
            .max_recursion_depth(self.max_recursion_depth)
            .max_feed_duration(self.exec_timeout)
            .max_turn_duration(self.exec_timeout)
            .max_suspensions(usize::MAX)
    }
}

pub(super) struct Session {
    /// `None` between a discarded state and the next run.
    repl: Option<MontyRepl>,
    slot: SessionSlot,
    /// The version of the state `repl` holds (see `Run::version`).
    version: Option<u64>,
    /// The snippets `repl` ran, for deciding which calls get futures.
    calls: Arc<parking_lot::Mutex<SessionCalls>>,
}

pub struct MontyEngine {
    limits: MontyLimits,
    sessions: SessionTable<Session>,
    runaways: Arc<Runaways>,
    spare: Option<spare::Spare>,
}

impl MontyEngine {
    pub fn new(limits: MontyLimits) -> Self {
        memory::enable_accounting();
        memory::set_hard_ceiling(limits.memory_limit.saturating_add(HARD_CEILING_MARGIN));
        runaway::install();
        warm_up();
        let sessions = SessionTable::new(limits.session_idle, limits.max_sessions);
        Self {
            limits,
            sessions,
            runaways: Arc::default(),
            spare: None,
        }
    }

    /// Why this engine no longer takes runs (too many frozen runaway threads).
    pub fn retired(&self) -> Option<&str> {
        self.runaways.retired()
    }

    pub fn frozen_threads(&self) -> u32 {
        self.runaways.frozen_threads()
    }

    pub fn limits(&self) -> &MontyLimits {
        &self.limits
    }

    /// Runs `run` in `session`'s interpreter state.
    pub async fn run(
        &self,
        session: SessionId,
        run: Run,
        host: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        if let Some(reason) = self.retired() {
            self.sessions.remove(session);
            return match self.spare_pool().await {
                Some(pool) => pool.run(session, run, host, control).await,
                None => Execution {
                    error: Some(retired_error(reason)),
                    ..Execution::of(ENGINE_NAME)
                },
            };
        }
        let deadline = run.deadline;
        let mut execution = Execution::of(ENGINE_NAME);
        let state = match self.session(session, deadline).await {
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
        let persist = run.persist;
        let finished = self.run_on_thread(guard, run, host, control).await;
        self.fill(&mut execution, finished);
        if persist && execution.snapshot.is_none() && reset(&execution) {
            // The state is fresh now, and so must the saved one be.
            execution.snapshot = Some(Snapshot::fresh());
        }
        execution
    }

    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    async fn session(
        &self,
        id: SessionId,
        deadline: Instant,
    ) -> Result<Arc<AsyncMutex<Session>>, RunError> {
        let fresh = || Session {
            repl: None,
            slot: SessionSlot::allocate(),
            version: None,
            calls: Arc::default(),
        };
        self.sessions
            .get_or_wait(id, fresh, deadline)
            .await
            .map_err(busy)
    }

    fn new_repl(&self) -> MontyRepl {
        let limits = self.limits.resource_limits();
        let mut repl = MontyRepl::new(
            snapshot::SCRIPT_NAME,
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
        run: Run,
        host: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> ThreadResult {
        let deadline = run.deadline;
        let restored = run.to_restore(guard.version);
        let resume_parked = restored.is_some_and(|s| s.kind == crate::exec::SnapshotKind::Parked);
        let restore = restored.map(|s| Arc::new(s.payload.clone()));
        let repl = match (&restore, guard.repl.take()) {
            (None, Some(repl)) => repl,
            _ => {
                // A new or restored interpreter gives its file names out again.
                guard.calls.lock().clear();
                self.new_repl()
            }
        };
        let slot = guard.slot;
        let job = Job {
            repl,
            restore,
            resume_parked,
            dump: run.persist,
            code: run.code,
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
            calls: guard.calls.clone(),
        };
        let cancel = job.cancel.clone();
        let watch = Arc::new(RunWatch::default());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread_watch = watch.clone();
        let handed = crate::timing::start();
        let spawned = INTERPRETER_THREADS.run(Box::new(move || {
            crate::timing::since("engine started", handed);
            let outcome = if thread_watch.begin() {
                let started = crate::timing::start();
                let outcome = catch_unwind(AssertUnwindSafe(|| driver::run(job)));
                crate::timing::since("driver done", started);
                outcome
            } else {
                Err(Box::new("the run was given up before it began")
                    as Box<dyn std::any::Any + Send>)
            };
            if thread_watch.finish() {
                crate::timing::RUN_FINISHED.set();
                let _ = tx.send(outcome.map_err(|panic| panic_message(&panic)));
            } else {
                runaway::leave_abandoned_run(&thread_watch, slot, outcome);
                threads::retire_current_thread();
            }
        }));
        if let Err(e) = spawned {
            return ThreadResult::Panicked(format!("could not start an interpreter thread: {e}"));
        }
        let supervisor = Supervisor {
            guard,
            version: run.version,
            watch,
            // Monty stops itself at the deadline unless it is inside one builtin.
            give_up_at: deadline + OVERRUN_GRACE,
            runaways: self.runaways.clone(),
            budget: self.limits.memory_limit,
        };
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        // The supervisor keeps the session locked until its state is back in
        // place (or given up), even when the caller stops waiting.
        tokio::spawn(async move {
            let _ = done_tx.send(supervisor.wait(rx).await);
        });
        let result = tokio::select! {
            biased;
            result = done_rx => result
                .unwrap_or_else(|_| ThreadResult::Panicked("the interpreter thread vanished".into())),
            () = cancel.cancelled() => ThreadResult::Cancelled,
        };
        crate::timing::RUN_FINISHED.log_since("engine finished");
        result
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
            ThreadResult::Abandoned(overrun) => {
                execution.error = Some(self.overrun_error(overrun));
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
            snapshot,
            restore_failed,
            ending,
            stdout,
            truncated,
            tool_calls,
            side_effects,
            others_bytes,
            tool_failures,
            ..
        } = *finished;
        execution.stdout = stdout;
        execution.truncated = truncated;
        execution.tool_calls = tool_calls;
        execution.side_effects = side_effects;
        if let Some(reason) = restore_failed {
            execution.warnings.push(format!(
                "this session's saved state could not be loaded ({reason}); it started fresh"
            ));
        }
        if let Ending::Parked(call) = &ending {
            execution.parked = Some(call.clone());
            execution.snapshot = snapshot.and_then(Result::ok).map(Snapshot::parked);
            return;
        }
        match snapshot {
            Some(Ok(bytes)) => execution.snapshot = Some(Snapshot::monty(bytes)),
            Some(Err(reason)) => execution.warnings.push(format!(
                "this session's state could not be saved ({reason}); it lives only in this gateway's memory"
            )),
            None => {}
        }
        let limit_hint = |exc: &MontyException| self.limit_hint(exc, others_bytes);
        record_ending(
            execution,
            ending,
            self.limits.max_result_bytes,
            session_reset,
            &limit_hint,
            &tool_failures,
        );
    }

    fn overrun_error(&self, overrun: Overrun) -> RunError {
        let mut error = match overrun {
            Overrun::Time => RunError::new(
                ErrorKind::Limit,
                "TimeoutError",
                "run time limit exceeded inside one builtin that cannot be interrupted \
                 (CODEMCP_EXEC_TIMEOUT_MS or the call's timeout_ms); the run was stopped",
            ),
            Overrun::Memory => RunError::new(
                ErrorKind::Limit,
                "MemoryError",
                format!(
                    "one builtin grew past the in-process hard memory ceiling ({} MiB: the {} MiB budget \
                     CODEMCP_MONTY_MEM_LIMIT + {} MiB); the run was stopped",
                    (self.limits.memory_limit + HARD_CEILING_MARGIN) >> 20,
                    self.limits.memory_limit >> 20,
                    HARD_CEILING_MARGIN >> 20
                ),
            ),
        }
        .with_hint(
            "this session's variables were discarded; the next call starts fresh. Work on less data \
             at once (smaller inputs to one regex, join, dumps or power)",
        );
        error.session_reset = true;
        error
    }

    fn limit_hint(&self, exc: &MontyException, others_bytes: usize) -> String {
        let reset = "this session's variables were discarded";
        if exc.exc_type() != ExcType::MemoryError {
            return format!("{reset}; do less work per call (smaller batches, fewer iterations)");
        }
        let budget = self.limits.memory_limit;
        if others_bytes >= budget / 2 {
            format!(
                "{reset}. Other sessions held {} MiB of the {} MiB in-process budget, which all in-process \
                 sessions share (collateral). Retry shortly.",
                others_bytes >> 20,
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
    failures: &ToolFailures,
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
        Ending::Parked(call) => execution.parked = Some(call),
        Ending::Raised { exc, verdict } => {
            let mut error = describe_failure(&exc, &verdict, limit_hint);
            error.exc_type = failures.type_name(error.exc_type, &error.message);
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
    let mut exc_type = exc.exc_type().to_string();
    let mut message = exc.message().unwrap_or_default().to_owned();
    if let Some(what) = message.strip_prefix(classify::MONTY_INTERNAL) {
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

fn retired_error(reason: &str) -> RunError {
    RunError::new(
        ErrorKind::Limit,
        "RuntimeError",
        format!("the in-process engine no longer takes runs: {reason}"),
    )
    .with_hint(
        "the operator must restart the gateway, or install the Monty worker binary so runs move to \
         worker processes (CODEMCP_MONTY_BIN); CODEMCP_MONTY=pool runs every session in its own worker \
         process, where an overrun only costs that worker",
    )
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

impl Engine for MontyEngine {
    fn name(&self) -> &'static str {
        ENGINE_NAME
    }

    fn describe(&self) -> String {
        let mut text = format!(
            "monty, in-process: {} MiB memory budget shared by in-process sessions, hard ceiling +{} MiB; \
             runs stuck in one builtin are frozen, after {MAX_FROZEN_THREADS} the engine retires ({})",
            self.limits.memory_limit >> 20,
            HARD_CEILING_MARGIN >> 20,
            if self.has_spare_pool() {
                "runs then move to worker processes"
            } else {
                "runs are then refused: no monty worker binary"
            }
        );
        if self.frozen_threads() > 0 {
            text.push_str(&format!("; {} frozen so far", self.frozen_threads()));
        }
        if let Some(reason) = self.retired() {
            text.push_str(&format!("; RETIRED: {reason}"));
        }
        text
    }

    fn run(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> BoxFuture<'_, Execution> {
        Box::pin(MontyEngine::run(self, session, run, tools, control))
    }

    fn holds(&self, session: SessionId, version: u64) -> bool {
        self.retired().is_none()
            && self
                .sessions
                .idle_state_is(session, |s| s.repl.is_some() && s.version == Some(version))
    }

    /// Forgets a session's state in memory (the store keeps its snapshot).
    fn end_session(&self, session: SessionId) {
        self.sessions.remove(session);
        if let Some(pool) = self.started_spare() {
            pool.end_session(session);
        }
    }

    /// Drops sessions idle for longer than the configured time.
    fn expire_idle(&self) {
        self.sessions.expire_idle();
        if let Some(pool) = self.started_spare() {
            pool.expire_idle();
        }
    }
}
