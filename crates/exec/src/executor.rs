//! The front of the engine stack: what every run goes through whatever engine
//! runs it. Checks the request once, starts its clock once, and hands the
//! engine a [`Run`]; the engine never sees a request that failed a check.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::helpers::HelperHook;
use super::persistence::{Begun, Persistence};
use super::preflight::{self, EarlierNames};
use super::store::{self, Owner, SealKey, StoreError, StoreLimits, StoreSpec};
use super::{
    Engine, ErrorKind, Execution, Parked, Run, RunControl, RunError, RunRequest, ToolHost,
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
    sessions: Persistence,
    /// What earlier snippets of each session bound, for the pre-flight check.
    earlier: EarlierNames,
    /// Saved helpers, defined before the runs that use them.
    helpers: Option<Arc<dyn HelperHook>>,
}

impl Executor {
    pub fn new(engine: Arc<dyn Engine>, checks: RunChecks, sessions: Persistence) -> Self {
        Self {
            engine,
            checks,
            sessions,
            earlier: EarlierNames::default(),
            helpers: None,
        }
    }

    /// Keeps saved helpers (`save_helper`) and defines them for the runs
    /// that use them.
    pub fn with_helpers(mut self, helpers: Arc<dyn HelperHook>) -> Self {
        self.helpers = Some(helpers);
        self
    }

    /// The saved helpers given to [`Executor::with_helpers`], as their
    /// own type `T`.
    pub fn helpers<T: HelperHook>(&self) -> Option<Arc<T>> {
        let hook: Arc<dyn std::any::Any + Send + Sync> = self.helpers.clone()?;
        hook.downcast::<T>().ok()
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
            call_timeout: store::DEFAULT_CALL_TIMEOUT,
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
        // A stalled store costs the whole call one store timeout, however
        // many store operations it makes (helpers, lease, load, save).
        store::one_call(self.run_one(owner, request, tools, control)).await
    }

    async fn run_one(
        &self,
        owner: Owner,
        request: RunRequest,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        let started = Instant::now();
        let session = request.session.clone();
        let (tools, prelude, warning) = match &self.helpers {
            Some(helpers) => {
                let wrapped = helpers.clone().wrap(owner, &request.code, tools).await;
                (wrapped.tools, wrapped.prelude, wrapped.warning)
            }
            None => (tools, None, None),
        };
        let checked = self.check(request);
        crate::timing::since("limits checked", Some(started));
        let mut execution = match checked {
            Ok(mut run) => match self.preflight(session.as_deref(), &mut run, &tools).await {
                Ok(()) => {
                    if let Some(prelude) = &prelude {
                        run.code.insert_str(0, &prelude.text);
                    }
                    let mut execution = self
                        .run_in_session(session.as_deref(), owner, run, tools, control)
                        .await;
                    if let Some(prelude) = &prelude {
                        prelude.fix_lines(&mut execution);
                    }
                    execution
                }
                // Nothing ran: the session is as it was, and goes on.
                Err(error) => Execution {
                    session,
                    ..self.refused(error)
                },
            },
            Err(error) => self.refused(error),
        };
        if execution.engine.is_empty() {
            execution.engine = self.engine.name();
        }
        execution.warnings.extend(warning);
        execution.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        crate::metrics::run_finished(
            execution.engine,
            execution.outcome_label(),
            started.elapsed(),
        );
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
        let started = Instant::now();
        let begun = match self.sessions.begin(session, owner, &mut run, &holds).await {
            Ok(begun) => begun,
            Err(refused) => return refused,
        };
        tracing::trace!(target: "codemcp::timing", us = started.elapsed().as_micros(), "session begun (lease, load)");
        self.run_begun(begun, run, tools, control, None).await
    }

    /// Runs `run` in its leased session (`resumed`: the parked run it goes
    /// on with), then saves the session, or parks the run again.
    async fn run_begun(
        &self,
        begun: Begun,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
        resumed: Option<&Parked>,
    ) -> Execution {
        let (code, wall) = (run.code.clone(), run.wall);
        let started = Instant::now();
        let mut execution = self.engine.run(begun.id, run, tools, control).await;
        tracing::trace!(target: "codemcp::timing", us = started.elapsed().as_micros(), "engine run");
        let started = Instant::now();
        if let Some(parked) = resumed {
            // Its output and calls before it parked come first; the call it
            // parked at was counted then and again on resuming.
            execution.stdout.insert_str(0, &parked.stdout);
            execution.stderr.insert_str(0, &parked.stderr);
            execution.tool_calls += parked.tool_calls.saturating_sub(1);
        }
        if execution.parked.is_some() {
            self.sessions.park(begun, &code, wall, &mut execution).await;
        } else {
            self.sessions.finish(begun, &mut execution).await;
        }
        tracing::trace!(target: "codemcp::timing", us = started.elapsed().as_micros(), "session saved and released");
        execution
    }

    /// Whether runs may park at a call that waits for the user, to be
    /// resumed by any gateway sharing the session store.
    pub fn parks_runs(&self) -> bool {
        self.sessions.parks_runs()
    }

    /// Takes the run parked under `state` for `owner` out of the store (see
    /// `exec::parked`), ready to resume with [`Executor::resume`]; or why not.
    pub async fn unpark(
        &self,
        owner: Owner,
        state: &str,
        max_age: Duration,
    ) -> Result<Unparked, Execution> {
        let mut run = Run::new(String::new(), self.checks.exec_timeout);
        let engine = &self.engine;
        let holds = |id, version| engine.holds(id, version);
        let unparked = self
            .sessions
            .unpark(state, owner, max_age, &mut run, &holds);
        match store::one_call(unparked).await {
            Ok((begun, parked)) => Ok(Unparked { begun, run, parked }),
            Err(why) => Err(self.refused(
                RunError::new(ErrorKind::Input, "LookupError", why)
                    .with_hint("call execute_python again with the code that still has to run"),
            )),
        }
    }

    /// Resumes an unparked run to its end (or its next park).
    pub async fn resume(
        &self,
        unparked: Unparked,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        let started = Instant::now();
        let Unparked { begun, run, parked } = unparked;
        let resumed = self.run_begun(begun, run, tools, control, Some(&parked));
        let mut execution = store::one_call(resumed).await;
        if execution.engine.is_empty() {
            execution.engine = self.engine.name();
        }
        execution.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        crate::metrics::run_finished(
            execution.engine,
            execution.outcome_label(),
            started.elapsed(),
        );
        execution
    }

    /// An `Input` error result, as the engine would have answered it.
    pub fn refused(&self, error: RunError) -> Execution {
        Execution {
            error: Some(error),
            ..Execution::of(self.engine.name())
        }
    }

    /// The pre-flight check of `run`'s calls against the caller's tools;
    /// remembers the tool-like names it binds for the session's next runs.
    async fn preflight(
        &self,
        session: Option<&str>,
        run: &mut Run,
        tools: &Arc<dyn ToolHost>,
    ) -> Result<(), RunError> {
        let started = Instant::now();
        let earlier = match session {
            Some(handle) => self.earlier.of(handle),
            None => Some(Vec::new()),
        };
        // Too many names to know what an earlier snippet defined: unchecked.
        let Some(mut earlier) = earlier else {
            return Ok(());
        };
        let sdk = tools.sdk();
        earlier.extend(sdk.helpers().iter().map(|h| h.name.clone()));
        let mut checked = preflight::check_safely(run.code.clone(), tools.sdk(), earlier).await;
        if let Some(facts) = checked.facts.take() {
            run.analysis = codemcp_snippet::Analysis::known(facts);
        }
        if let Some(handle) = session {
            self.earlier.add(handle, checked.bound_tool_names.clone());
        }
        tracing::trace!(target: "codemcp::timing", us = started.elapsed().as_micros(), problems = checked.total, "pre-flight check");
        checked.rejection().map_or(Ok(()), |r| Err(r.into()))
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

/// A parked run taken out of the store, with its session leased.
pub struct Unparked {
    begun: Begun,
    run: Run,
    /// What it stopped at: the question's server, tool and arguments.
    pub parked: Parked,
}
