//! The front of the engine stack: what every run goes through whatever engine
//! runs it. Checks the request once, starts its clock once, and hands the
//! engine a [`Run`]; the engine never sees a request that failed a check.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::persistence::Persistence;
use super::store::{self, Owner, SealKey, StoreError, StoreLimits, StoreSpec};
use super::{Engine, ErrorKind, Execution, Run, RunControl, RunError, RunRequest, ToolHost};

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
    sessions: Persistence,
}

impl Executor {
    pub fn new(engine: Arc<dyn Engine>, checks: RunChecks, sessions: Persistence) -> Self {
        Self {
            engine,
            checks,
            sessions,
        }
    }

    /// An executor whose sessions live in this process only (tests, fuzzing).
    /// Call inside a Tokio runtime.
    ///
    /// # Errors
    /// Never in practice: a memory store has nothing to connect to.
    pub fn in_memory(engine: Arc<dyn Engine>, checks: RunChecks) -> Result<Self, StoreError> {
        let limits = StoreLimits {
            idle: Duration::from_secs(3600),
            max_snapshot_bytes: 16 << 20,
            lease_ttl: checks.exec_timeout + Duration::from_secs(30),
        };
        let store = store::open(&StoreSpec::Memory, SealKey::ephemeral(), limits)?;
        Ok(Self::new(
            engine,
            checks,
            Persistence::new(store, limits.idle),
        ))
    }

    /// Runs `request` in the session it names (a new one when it names none),
    /// on behalf of `owner`, or says why it cannot run.
    pub async fn run(
        &self,
        owner: Owner,
        request: RunRequest,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        let started = Instant::now();
        let session = request.session.clone();
        let mut execution = match self.check(request) {
            Ok(run) => {
                self.run_in_session(session.as_deref(), owner, run, tools, control)
                    .await
            }
            Err(error) => self.refused(error),
        };
        if execution.engine.is_empty() {
            execution.engine = self.engine.name();
        }
        execution.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        execution
    }

    async fn run_in_session(
        &self,
        session: Option<&str>,
        owner: Owner,
        mut run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        let engine = &self.engine;
        let holds = |id, version| engine.holds(id, version);
        let begun = match self.sessions.begin(session, owner, &mut run, &holds).await {
            Ok(begun) => begun,
            Err(refused) => return refused,
        };
        let mut execution = self.engine.run(begun.id, run, tools, control).await;
        self.sessions.finish(begun, &mut execution).await;
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

    /// Where sessions are kept, in one line.
    pub fn describe_sessions(&self) -> String {
        self.sessions.describe()
    }

    /// The handle of a new, empty session of `owner`, usable at once.
    pub fn new_session(&self, owner: Owner) -> String {
        self.sessions.reserve(owner).to_string()
    }

    /// Frees what the engine holds for `handle` (its client left); its
    /// saved state stays in the store, so the handle still works.
    pub fn release_session(&self, handle: &str) {
        if let Some(session) = self.sessions.forget(handle) {
            self.engine.end_session(session);
        }
    }

    /// Drops what idle sessions hold in memory; their saved state stays in
    /// the store until it expires there.
    pub fn expire_idle(&self) {
        for session in self.sessions.expire_idle() {
            self.engine.end_session(session);
        }
        self.engine.expire_idle();
    }

    pub async fn shutdown(&self) {
        self.engine.shutdown().await;
    }
}
