//! Workers for sessions: started when a session needs one, with one spare
//! kept started for the next new session to hide the cold start.

use std::sync::atomic::Ordering;

use super::spawn::Dial;
use super::{START_TIMEOUT, Worker, WorkerEngine, WorkerError, WorkerRun, WorkerSession};
use crate::{ErrorKind, Execution, Run, RunError};

impl WorkerEngine {
    async fn spawn_worker(&self) -> Result<Worker, WorkerError> {
        let (token, linked) = self.control.issue_token();
        let url = self.control.url();
        let dial = Dial {
            url: &url,
            token: &token,
            control: &self.control,
        };
        let launched = self.spawner.spawn(dial).await;
        let mut process = match launched {
            Ok(process) => process,
            Err(e) => {
                self.control.forget(&token);
                return Err(e);
            }
        };
        self.spawned.fetch_add(1, Ordering::Relaxed);
        let outcome = tokio::select! {
            link = linked => link.map_err(|_| "the control channel closed".to_owned()),
            exit = process.exited() => Err(format!("the worker exited before connecting ({})", exit.description)),
            () = tokio::time::sleep(START_TIMEOUT) => Err(format!("the worker did not connect within {} s", START_TIMEOUT.as_secs())),
        };
        self.control.forget(&token);
        let link = outcome.map_err(WorkerError::Start)?;
        Ok(Worker {
            process,
            link,
            catalog_version: None,
        })
    }

    /// Keeps one started worker ready for the next new session.
    pub(super) fn refill_spare(&self) {
        let engine = self.me.clone();
        tokio::spawn(async move {
            let Some(engine) = engine.upgrade() else {
                return;
            };
            let mut spare = engine.spare.lock().await;
            if matches!(*spare, Spare::Ready(_)) {
                return;
            }
            *spare = match engine.spawn_worker().await {
                Ok(worker) => Spare::Ready(worker),
                Err(e) if engine.stopping.load(Ordering::Relaxed) => {
                    tracing::debug!(target: "codemcp::worker", error = %e, "a spare stopped by the shutdown");
                    Spare::Failed(e.reason())
                }
                Err(e) => {
                    tracing::warn!(target: "codemcp::worker", error = %e, "could not pre-start a CPython worker");
                    Spare::Failed(e.reason())
                }
            };
        });
    }

    async fn take_worker(&self) -> Result<Worker, WorkerError> {
        // A spare under way holds the lock: wait for it rather than start a
        // second container. If it failed while we waited, that is this run's
        // answer too, so an engine that hangs is not waited on twice.
        let (spare, waited) = match self.spare.try_lock() {
            Ok(mut spare) => (std::mem::replace(&mut *spare, Spare::Empty), false),
            Err(_) => {
                let mut spare = self.spare.lock().await;
                (std::mem::replace(&mut *spare, Spare::Empty), true)
            }
        };
        self.refill_spare();
        // `usable` needs the worker mutably, which a match guard cannot have.
        #[allow(clippy::collapsible_match)]
        match spare {
            Spare::Ready(mut worker) => {
                if worker.usable() {
                    return Ok(worker);
                }
            }
            Spare::Failed(message) if waited => return Err(WorkerError::Start(message)),
            _ => {}
        }
        self.spawn_worker().await
    }

    /// Gives the session a live worker, starting one (or taking the spare)
    /// within the run's wall time; else the run's answer.
    pub(super) async fn ensure_worker(
        &self,
        session: &mut WorkerSession,
        run: &Run,
    ) -> Result<(), WorkerRun> {
        if session.worker.as_mut().is_some_and(Worker::usable) {
            return Ok(());
        }
        let mut execution = Execution::of(self.spawner.engine());
        session.version = None; // a new worker holds no state
        let taken = tokio::select! {
            taken = self.take_worker() => taken,
            () = tokio::time::sleep_until(run.deadline.into()) => {
                execution.error = Some(RunError::new(
                    ErrorKind::Limit,
                    "TimeoutError",
                    format!("the CPython worker did not start within the run's time limit ({} ms)", run.wall.as_millis()),
                ));
                return Err(WorkerRun { execution, no_worker: true });
            }
        };
        match taken {
            Ok(worker) => {
                session.worker = Some(worker);
                Ok(())
            }
            Err(e) => {
                tracing::warn!(target: "codemcp::worker", error = %e, "could not start a CPython worker for a run");
                execution.error = Some(RunError::new(
                    ErrorKind::Internal,
                    "RuntimeError",
                    format!("cannot start the CPython worker: {}", e.reason()),
                ));
                Err(WorkerRun {
                    execution,
                    no_worker: true,
                })
            }
        }
    }
}

/// The worker kept started for the next new session.
pub(super) enum Spare {
    Empty,
    Ready(Worker),
    /// Why the last attempt failed (for a run that waited for it).
    Failed(String),
}
