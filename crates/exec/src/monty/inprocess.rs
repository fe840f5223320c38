//! The Monty engine, in-process placement: agent code runs in the `monty`
//! interpreter on dedicated threads, one `MontyRepl` per session; once it
//! retires, its runs go to a spare worker pool.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use monty::MontyRepl;
use monty_types::{CompileOptions, ExcType, MontyException, ResourceLimits, ResourceTracker};

use super::driver::{Ending, Finished, Job, RunLimits};
use super::memory::SessionSlot;
use super::runaway::{Overrun, RunWatch, Runaways};
use super::supervisor::{Supervisor, ThreadResult};
use crate::error::cancelled;
use crate::session_table::{SessionState, SessionTable};
use crate::{
    Engine, ErrorKind, Execution, Run, RunControl, RunError, SessionId, Snapshot, ToolHost, reset,
};
use codemcp_base::threads::{self, INTERPRETER_THREADS};
use codemcp_snippet::call_sites::SessionCalls;

use super::shared::*;
use super::{ENGINE_NAME, MAX_FROZEN_THREADS, driver, memory, pool, runaway, snapshot};

pub(super) struct Session {
    /// `None` between a discarded state and the next run.
    pub(super) repl: Option<MontyRepl>,
    pub(super) slot: SessionSlot,
    /// The version of the state `repl` holds (see `Run::version`).
    pub(super) version: Option<u64>,
    /// The snippets `repl` ran, for deciding which calls get futures.
    pub(super) calls: Arc<parking_lot::Mutex<SessionCalls>>,
}

impl Session {
    fn fresh() -> Self {
        Self {
            repl: None,
            slot: SessionSlot::allocate(),
            version: None,
            calls: Arc::default(),
        }
    }
}

impl SessionState for Session {
    fn held_version(&self) -> Option<u64> {
        self.repl.as_ref().and(self.version)
    }
}

pub struct MontyEngine {
    limits: MontyLimits,
    sessions: SessionTable<Session>,
    runaways: Arc<Runaways>,
    spare: Option<Spare>,
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

    pub fn session_count(&self) -> usize {
        self.sessions.len()
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
        let resume_parked = restored.is_some_and(|s| s.kind == codemcp_store::SnapshotKind::Parked);
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
        let snippet_calls = run.calls().await;
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
            snippet_calls,
        };
        let cancel = job.cancel.clone();
        let watch = Arc::new(RunWatch::default());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread_watch = watch.clone();
        let handed = codemcp_base::timing::start();
        let spawned = INTERPRETER_THREADS.run(Box::new(move || {
            codemcp_base::timing::since("engine started", handed);
            let outcome = if thread_watch.begin() {
                let started = codemcp_base::timing::start();
                let outcome = catch_unwind(AssertUnwindSafe(|| driver::run(job)));
                codemcp_base::timing::since("driver done", started);
                outcome
            } else {
                Err(Box::new("the run was given up before it began")
                    as Box<dyn std::any::Any + Send>)
            };
            if thread_watch.finish() {
                codemcp_base::timing::RUN_FINISHED.set();
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
        codemcp_base::timing::RUN_FINISHED.log_since("engine finished");
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
            output,
            tool_calls,
            side_effects,
            others_bytes,
            tool_failures,
            ..
        } = *finished;
        execution.stdout = output.stdout;
        execution.stderr = output.stderr;
        execution.truncated = output.truncated;
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

fn retired_error(reason: &str) -> RunError {
    RunError::new(
        ErrorKind::Limit,
        "RuntimeError",
        format!("the in-process engine no longer takes runs: {reason}"),
    )
    .with_hint(
        "the operator must restart the gateway, or give it a Monty worker so runs move to worker \
         processes (unset CODEMCP_MONTY_BIN: codemcp is its own worker); CODEMCP_MONTY=pool runs every session in its own worker \
         process, where an overrun only costs that worker",
    )
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
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

#[async_trait::async_trait]
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

    /// Runs `run` in `session`'s interpreter state.
    async fn run(
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
        let checked_out = self
            .sessions
            .check_out(session, Session::fresh, deadline, &control.cancel)
            .await;
        let guard = match checked_out {
            Ok(guard) => guard,
            Err(error) => {
                execution.error = Some(error);
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

    fn holds(&self, session: SessionId, version: u64) -> bool {
        self.retired().is_none() && self.sessions.holds(session, version)
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

/// Where runs go once the in-process engine retires (see `runaway.rs`): a
/// Monty worker pool, started on first need.
pub(super) struct Spare {
    binary: std::path::PathBuf,
    workers: usize,
    pool: tokio::sync::OnceCell<Option<pool::PoolEngine>>,
}

impl MontyEngine {
    /// Lets runs move to a Monty worker pool (the `monty` binary at `binary`)
    /// once this engine retires, instead of being refused.
    pub fn with_spare_pool(mut self, binary: std::path::PathBuf, workers: usize) -> Self {
        self.spare = Some(Spare {
            binary,
            workers,
            pool: tokio::sync::OnceCell::new(),
        });
        self
    }

    pub fn has_spare_pool(&self) -> bool {
        self.spare.is_some()
    }

    /// The spare pool, if a run has already started it.
    pub(super) fn started_spare(&self) -> Option<&pool::PoolEngine> {
        self.spare.as_ref()?.pool.get()?.as_ref()
    }

    pub(super) async fn spare_pool(&self) -> Option<&pool::PoolEngine> {
        let spare = self.spare.as_ref()?;
        let started = spare.pool.get_or_init(|| async {
            let started =
                pool::PoolEngine::start(self.limits.clone(), spare.binary.clone(), spare.workers).await;
            match started {
                Ok(pool) => {
                    tracing::warn!(target: "codemcp::exec", "in-process runs now go to Monty worker processes");
                    Some(pool)
                }
                Err(e) => {
                    tracing::error!(target: "codemcp::exec", error = %e, "the spare Monty worker pool did not start");
                    None
                }
            }
        });
        started.await.as_ref()
    }
}
