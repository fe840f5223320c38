//! The front of the engine stack: what every run goes through whatever engine
//! runs it. Checks the request once, starts its clock once, and hands the
//! engine a [`Run`]; the engine never sees a request that failed a check.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    Engine, ErrorKind, Execution, Run, RunControl, RunError, RunRequest, SessionId, ToolHost,
};

/// The checks made before any engine sees a run.
#[derive(Debug, Clone, Copy)]
pub struct RunChecks {
    /// `CODEMCP_EXEC_TIMEOUT_MS`: the longest wall time a run may ask for.
    pub exec_timeout: Duration,
    /// `CODEMCP_MAX_SOURCE_BYTES`.
    pub max_source_bytes: usize,
}

pub struct Executor {
    engine: Arc<dyn Engine>,
    checks: RunChecks,
}

impl Executor {
    pub fn new(engine: Arc<dyn Engine>, checks: RunChecks) -> Self {
        Self { engine, checks }
    }

    /// Runs `request` in `session`, or says why it cannot run.
    pub async fn run(
        &self,
        session: SessionId,
        request: RunRequest,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        let started = Instant::now();
        let mut execution = match self.check(request) {
            Ok(run) => self.engine.run(session, run, tools, control).await,
            Err(error) => self.refused(error),
        };
        execution.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        execution
    }

    /// An `Input` error result, as the engine would have answered it.
    pub fn refused(&self, error: RunError) -> Execution {
        Execution {
            error: Some(error),
            ..Execution::of(self.engine.name())
        }
    }

    fn check(&self, request: RunRequest) -> Result<Run, RunError> {
        let limit = self.checks.max_source_bytes;
        if request.code.len() > limit {
            return Err(RunError::new(
                ErrorKind::Input,
                "ValueError",
                format!(
                    "code is {} bytes; the limit is {limit} bytes (CODEMCP_MAX_SOURCE_BYTES)",
                    request.code.len()
                ),
            )
            .with_hint("send a shorter snippet; keep data in session variables between calls"));
        }
        let wall = request.wall_time(self.checks.exec_timeout);
        Ok(Run::new(request.code, wall))
    }

    pub fn describe(&self) -> String {
        self.engine.describe()
    }

    pub fn end_session(&self, session: SessionId) {
        self.engine.end_session(session);
    }

    pub fn expire_idle(&self) {
        self.engine.expire_idle();
    }

    pub async fn shutdown(&self) {
        self.engine.shutdown().await;
    }
}
