//! How a worker run ended, as an [`Execution`]: the worker's reply, or the
//! worker gone, over time or cancelled, with the session's state lost.

use serde_json::Value;

use super::link::LinkError;
use super::protocol::RunResult;
use super::spawn::Exit;
use super::{EXIT_GRACE, Worker, WorkerEngine};
use crate::{ErrorKind, Execution, RunError, Snapshot};

/// What ended a run's wait on its worker.
pub(super) enum Outcome {
    Reply(Result<Value, LinkError>),
    Exited(Exit),
    Deadline,
    Cancelled,
}

impl WorkerEngine {
    /// Records how the run ended in `execution`; `false` when its worker
    /// must go (it exited, overran or was cancelled).
    pub(super) async fn settle(
        &self,
        outcome: Outcome,
        worker: &mut Worker,
        version: u64,
        execution: &mut Execution,
    ) -> bool {
        let keep = matches!(outcome, Outcome::Reply(Ok(_) | Err(LinkError::Remote(_))));
        match outcome {
            Outcome::Reply(Ok(value)) => {
                worker.catalog_version = Some(version);
                match serde_json::from_value::<RunResult>(value) {
                    Ok(result) => self.fill(execution, result),
                    Err(e) => {
                        execution.error = Some(RunError::new(
                            ErrorKind::Internal,
                            "RuntimeError",
                            format!("the worker sent a malformed result: {e}"),
                        ))
                    }
                }
            }
            Outcome::Reply(Err(LinkError::Remote(message))) => {
                execution.error = Some(RunError::new(
                    ErrorKind::Internal,
                    "RuntimeError",
                    format!("the worker failed: {message}"),
                ));
            }
            Outcome::Reply(Err(LinkError::Closed)) => {
                let exit = tokio::time::timeout(EXIT_GRACE, worker.process.exited()).await;
                execution.error = Some(self.worker_gone(exit.ok()));
            }
            Outcome::Exited(exit) => {
                execution.error = Some(self.worker_gone(Some(exit)));
            }
            Outcome::Deadline => {
                execution.error = Some(lost(
                    "run time limit exceeded; the worker was stopped and replaced",
                    ErrorKind::Limit,
                    "TimeoutError",
                ));
            }
            Outcome::Cancelled => {
                let mut error = RunError::new(
                    ErrorKind::Cancelled,
                    "KeyboardInterrupt",
                    "the run was cancelled by the client",
                );
                error.session_reset = true;
                execution.error = Some(error);
            }
        }
        keep
    }

    /// The error of a run whose worker ended under it.
    fn worker_gone(&self, exit: Option<Exit>) -> RunError {
        match exit {
            Some(exit) if exit.engine_stopped => lost(
                &format!(
                    "the Docker engine stopped, and the worker container with it ({}); start it again with `sudo scripts/docker-engine.sh`",
                    exit.description
                ),
                ErrorKind::Internal,
                "RuntimeError",
            ),
            Some(exit) if exit.killed => {
                let limit = self
                    .spawner
                    .memory_limit()
                    .map_or_else(String::new, |l| format!(" ({l})"));
                lost(
                    &format!(
                        "the CPython worker was killed (SIGKILL), most likely for using more than its memory limit{limit}, else from outside"
                    ),
                    ErrorKind::Limit,
                    "MemoryError",
                )
            }
            Some(Exit {
                crash_signal: Some(signal),
                ..
            }) => lost(
                &format!(
                    "the CPython worker crashed (signal {signal}{}): the interpreter itself failed running this code",
                    signal_name(signal).map_or_else(String::new, |n| format!(", {n}"))
                ),
                ErrorKind::Python,
                "SystemError",
            ),
            Some(exit) => lost(
                &format!(
                    "the CPython worker exited ({}: sys.exit, os._exit or a crash)",
                    exit.description
                ),
                ErrorKind::Python,
                "SystemExit",
            ),
            None => lost(
                "the CPython worker exited (sys.exit, os._exit or a crash)",
                ErrorKind::Python,
                "SystemExit",
            ),
        }
    }

    fn fill(&self, execution: &mut Execution, result: RunResult) {
        match (result.globals, result.globals_bytes) {
            (Some(globals), _) => execution.snapshot = Some(Snapshot::cpython(&globals)),
            (None, Some(bytes)) => {
                execution.unsaved = Some(format!(
                    "this session's variables are {bytes} bytes as JSON, over CODEMCP_MAX_SESSION_BYTES ({}): \
                     they were not saved and live only in this gateway's worker; keep less data in variables",
                    self.limits.max_state_bytes
                ));
            }
            (None, None) => {}
        }
        execution.stdout = result.stdout;
        execution.stderr = result.stderr;
        execution.truncated = result.truncated;
        execution.result_unavailable = result
            .result_unavailable
            .map(|reason| crate::not_returned(&reason));
        if let Some(error) = result.error {
            let traceback = (!error.traceback.is_empty()).then_some(error.traceback);
            execution.error = Some(
                RunError::new(ErrorKind::Python, error.exc_type, error.message)
                    .with_traceback(traceback),
            );
            return;
        }
        let size = result
            .result
            .as_ref()
            .and_then(|v| serde_json::to_string(v).ok())
            .map_or(0, |s| s.len());
        if size > self.limits.max_result_bytes {
            execution.error = Some(
                RunError::new(
                    ErrorKind::Limit,
                    "ValueError",
                    format!("the result is {size} bytes as JSON; the limit is {} bytes (CODEMCP_MAX_RESULT_BYTES)", self.limits.max_result_bytes),
                )
                .with_hint("return a summary (counts, the few items you need) instead of the whole data"),
            );
            return;
        }
        execution.result = result.result.filter(|v| !v.is_null());
    }
}

/// The name of a crash signal, for the message.
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

pub(super) fn lost(what: &str, kind: ErrorKind, exc_type: &str) -> RunError {
    let mut error = RunError::new(
        kind,
        exc_type,
        format!("{what}; this session's state was lost"),
    );
    error.session_reset = true;
    error
}
