//! The Monty engine in `monty-pool` worker processes: each MCP session checks
//! out one `monty subprocess` worker and keeps it between calls. Each worker
//! enforces its own session's limits exactly (`max_memory` via `monty-alloc`),
//! and a worker that crashes or overruns takes only its own session with it.
//!
//! Suspensions are answered by the same [`SuspensionHost`] as in-process; only
//! the resuming differs (async messages to the worker instead of calls on a
//! thread).

mod run;
pub mod worker_binary;

use self::run::PoolRun;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use monty_pool::{
    Checkout, Pool, PoolConfig, PoolError, ReplConfig, ResumeValue, TurnEvent, on_print_sync,
};
use monty_types::{ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult};
use serde_json::Value;

use super::classify::{Verdict, classify};
use super::convert::to_json;
use super::driver::{Ending, mentions_result};
use super::host::{CallDecision, OsDecision, OsRequest, Outgoing, SuspensionHost, exception};
use super::output::{Captured, OutputCapture};
use super::shared::{MontyLimits, OVERRUN_GRACE, record_ending};
use crate::session_table::{SessionState, SessionTable};
use crate::{
    Engine, ErrorKind, Execution, Run, RunControl, RunError, SessionId, Snapshot, ToolHost, reset,
};
use codemcp_snippet::call_sites::{RunCalls, SessionCalls};

pub const ENGINE_NAME: &str = "monty-pool";

/// How to get a worker other than codemcp itself, for the messages below.
pub const INSTALL_HINT: &str = "unset CODEMCP_MONTY_BIN to let codemcp choose its worker (its own, one installed beside it, \
     or the pinned one `codemcp setup pool` provisions), or point it at a worker of the same Monty (pip install pydantic-monty-runtime==1.4.0)";

/// Extra time the parent allows past the sandbox's own limits before killing a worker.
const BACKSTOP: Duration = Duration::from_secs(5);
/// Workers are recycled after this many sessions, bounding any slow leak.
const CHECKOUTS_PER_WORKER: u32 = 50;
/// How long a new session waits for a free worker before "busy".
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoolStartError {
    #[error(
        "pool mode cannot find a Monty worker ({looked}); {}",
        worker_binary::NO_WORKER_FIX
    )]
    NoBinary { looked: String },
    #[error(
        "pool mode has no Monty worker and could not provision the pinned one ({why}); {}",
        worker_binary::NO_WORKER_FIX
    )]
    Unprovisioned { why: String },
    #[error("the Monty worker binary {path} does not run: {message}; {INSTALL_HINT}")]
    BadBinary { path: String, message: String },
    #[error(
        "the Monty worker {path} was built from Monty {found} and this codemcp from Monty {}: \
         a worker must run the same Monty (its protocol and saved sessions); {INSTALL_HINT}",
        monty_types::MONTY_VERSION
    )]
    OtherMonty { path: String, found: String },
    #[error("cannot tell which Monty the worker {path} was built from ({message}); {INSTALL_HINT}")]
    NoVersion { path: String, message: String },
}

/// The worker without downloading anything (see `worker_binary::locate`;
/// `worker_binary::choose` also provisions one).
pub fn find_worker_binary(configured: Option<&Path>) -> Result<PathBuf, PoolStartError> {
    worker_binary::locate(configured).map(|w| w.binary)
}

/// One session's worker, kept between calls; `None` after it was lost.
struct PoolSession {
    checkout: Option<Checkout>,
    /// The version of the state the checkout holds (see `Run::version`).
    version: Option<u64>,
    /// The snippets the checkout ran, for deciding which calls get futures.
    calls: Arc<parking_lot::Mutex<SessionCalls>>,
    _counted: codemcp_base::metrics::Held,
}

impl SessionState for PoolSession {
    fn held_version(&self) -> Option<u64> {
        self.checkout.as_ref().and(self.version)
    }
}

impl Drop for PoolSession {
    /// A session that ends cleanly hands its worker back (reset) for reuse;
    /// dropping a `Checkout` unfinished would kill the worker instead.
    fn drop(&mut self) {
        if let (Some(checkout), Ok(runtime)) =
            (self.checkout.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(async move {
                if let Err(e) = checkout.finish().await {
                    tracing::debug!(target: "codemcp::exec", error = %e, "returning a Monty worker failed; it was discarded");
                }
            });
        }
    }
}

pub struct PoolEngine {
    limits: MontyLimits,
    pool: Pool,
    max_workers: usize,
    binary: PathBuf,
    sessions: SessionTable<PoolSession>,
}

impl PoolEngine {
    pub async fn start(
        limits: MontyLimits,
        binary: PathBuf,
        max_workers: usize,
    ) -> Result<Self, PoolStartError> {
        worker_binary::ensure_same_monty(&binary).await?;
        let mut config = PoolConfig::subprocess(binary.clone());
        config.min_processes = 1;
        config.max_processes = max_workers.max(1);
        config.checkout_timeout = Some(CHECKOUT_TIMEOUT);
        config.request_timeout = Some(limits.exec_timeout + BACKSTOP);
        config.max_checkouts_per_worker = Some(CHECKOUTS_PER_WORKER);
        let pool = Pool::new(config)
            .await
            .map_err(|e| PoolStartError::BadBinary {
                path: binary.display().to_string(),
                message: e.to_string(),
            })?;
        // A session holds its worker while it lives, so at most `max_workers`
        // sessions keep state: a new one evicts the least recently used idle one.
        let max_workers = max_workers.max(1);
        let sessions = SessionTable::new(limits.session_idle, limits.max_sessions.min(max_workers));
        Ok(Self {
            limits,
            pool,
            max_workers,
            binary,
            sessions,
        })
    }

    pub fn binary(&self) -> &Path {
        &self.binary
    }

    pub fn idle_workers(&self) -> usize {
        self.pool.idle_workers()
    }

    fn repl_config(&self) -> ReplConfig {
        let limits = self.limits.resource_limits();
        ReplConfig {
            limits: Some(limits),
            print_flush_interval: Some(Duration::from_millis(50)),
            ..ReplConfig::default()
        }
    }

    /// A worker for a session: fresh, or holding the saved state `restore`
    /// (with `parked`: a run suspended at a call, whose suspension it gives
    /// back to answer).
    async fn new_checkout(
        &self,
        restore: Option<Vec<u8>>,
        parked: bool,
    ) -> Result<(Checkout, Option<TurnEvent>), RunError> {
        let mut checkout = self
            .pool
            .checkout(&self.repl_config())
            .await
            .map_err(|e| match e {
                PoolError::Exhausted => RunError::new(
                    ErrorKind::Limit,
                    "RuntimeError",
                    format!(
                        "all {} Monty workers are busy (CODEMCP_MONTY_WORKERS); try again shortly",
                        self.max_workers
                    ),
                ),
                other => RunError::new(
                    ErrorKind::Internal,
                    "SystemError",
                    format!("cannot start a Monty worker: {other}"),
                ),
            })?;
        let mut quiet = on_print_sync(|_, _| {});
        if let Some(state) = restore {
            // The saved state defines `ToolError` already.
            return match checkout.restore(state, vec![], &mut quiet).await {
                Ok((None, _)) if !parked => Ok((checkout, None)),
                Ok((Some(event), _)) if parked => Ok((checkout, Some(event))),
                other => Err(RunError::new(
                    ErrorKind::Internal,
                    "SystemError",
                    format!("a Monty worker could not load this session's saved state: {other:?}"),
                )
                .with_hint("call again: the session starts fresh")),
            };
        }
        // Monty has no user exception classes; `ToolError` is `RuntimeError`.
        match checkout
            .feed("ToolError = RuntimeError", vec![], vec![], true, &mut quiet)
            .await
        {
            Ok(TurnEvent::Complete(_)) => Ok((checkout, None)),
            other => Err(RunError::new(
                ErrorKind::Internal,
                "SystemError",
                format!("a new Monty worker failed: {other:?}"),
            )),
        }
    }
}

fn limit_hint(exc: &MontyException, budget: usize) -> String {
    let reset = "this session's variables were discarded";
    if exc.exc_type() == ExcType::MemoryError {
        format!(
            "{reset}; each session may use {} MiB (CODEMCP_MONTY_MEM_LIMIT): work on less data at once",
            budget >> 20
        )
    } else {
        format!("{reset}; do less work per call (smaller batches, fewer iterations)")
    }
}

type CallResult = Result<MontyObject, MontyException>;

#[async_trait::async_trait]
impl Engine for PoolEngine {
    fn name(&self) -> &'static str {
        ENGINE_NAME
    }

    fn describe(&self) -> String {
        format!(
            "monty, worker processes ({}): exact per-session limits, crash isolation",
            self.binary.display()
        )
    }

    async fn run(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        let deadline = run.deadline;
        let mut execution = Execution::of(ENGINE_NAME);
        let fresh = || PoolSession {
            checkout: None,
            version: None,
            calls: Arc::default(),
            _counted: codemcp_base::metrics::pool_worker(),
        };
        let checked_out = self
            .sessions
            .check_out(session, fresh, deadline, &control.cancel)
            .await;
        let mut guard = match checked_out {
            Ok(guard) => guard,
            Err(error) => {
                execution.error = Some(error);
                return execution;
            }
        };
        let restored = run.to_restore(guard.version);
        let resume_parked = restored.is_some_and(|s| s.kind == codemcp_store::SnapshotKind::Parked);
        let restore = restored.map(|s| s.payload.clone());
        let mut parked_at = None;
        if guard.checkout.is_none() || restore.is_some() {
            // A worker loads a saved state only before its first feed.
            guard.checkout = None;
            // Its snippets are numbered anew: from 1 after `ToolError` (see
            // `new_checkout`), or from where the saved state stopped.
            match restore.as_ref().filter(|bytes| !bytes.is_empty()) {
                None => guard.calls.lock().restart_at(1),
                Some(_) => guard.calls.lock().clear(),
            }
            match self
                .new_checkout(restore.filter(|bytes| !bytes.is_empty()), resume_parked)
                .await
            {
                Ok((checkout, suspended)) => {
                    guard.checkout = Some(checkout);
                    parked_at = suspended;
                }
                Err(error) => {
                    execution.error = Some(error);
                    return execution;
                }
            }
        }
        guard.version = Some(run.version);
        let mut calls = RunCalls::new(guard.calls.clone(), &run.code, run.calls().await);
        if !resume_parked {
            calls.runs_next(&run.code);
        }
        let Some(checkout) = guard.checkout.as_mut() else {
            return execution;
        };
        let mut pool_run = PoolRun::new(&self.limits, tools.sdk(), tools, control, deadline, calls);
        let ending = pool_run.drive(checkout, &run.code, parked_at).await;
        let lost = pool_run.lost || checkout.worker_id().is_none();
        let parked = matches!(ending, Ending::Parked(_));
        if lost || parked {
            // A parked run lives on in its dump; its worker is let go.
            guard.checkout = None;
            guard.version = None;
        }
        let output = pool_run.take_output();
        execution.stdout = output.stdout;
        execution.stderr = output.stderr;
        execution.truncated = output.truncated;
        execution.tool_calls = pool_run.host.tool_calls;
        execution.side_effects = pool_run.host.side_effects;
        let budget = self.limits.memory_limit;
        let limit_hint = move |exc: &MontyException| limit_hint(exc, budget);
        record_ending(
            &mut execution,
            ending,
            self.limits.max_result_bytes,
            lost,
            &limit_hint,
            &pool_run.host.failures,
        );
        if parked {
            execution.snapshot = pool_run.parked_dump.take().map(Snapshot::parked);
        } else if run.persist {
            execution.snapshot = match guard.checkout.as_mut() {
                _ if reset(&execution) => Some(Snapshot::fresh()),
                Some(checkout) => match checkout.dump().await {
                    Ok(bytes) => Some(Snapshot::monty(bytes)),
                    Err(e) => {
                        execution.warnings.push(format!(
                            "this session's state could not be saved ({e}); it lives only in this worker"
                        ));
                        None
                    }
                },
                None => Some(Snapshot::fresh()),
            };
        }
        execution
    }

    fn holds(&self, session: SessionId, version: u64) -> bool {
        self.sessions.holds(session, version)
    }

    fn end_session(&self, session: SessionId) {
        self.sessions.remove(session);
    }

    fn expire_idle(&self) {
        self.sessions.expire_idle();
    }
}
