//! The front of the engine stack: what every run goes through whatever engine
//! runs it. Checks the request once, starts its clock once, and hands the
//! engine a [`Run`]; the engine never sees a request that failed a check.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemcp_snippet::Facts;

use super::helpers::{Assembly, Prelude, SnippetFacts};
use super::persistence::{Begun, Persistence};
use super::{
    Engine, ErrorKind, Execution, Parked, Run, RunControl, RunError, RunRequest, ToolHost,
};
use codemcp_snippet::preflight::EarlierNames;
use codemcp_store::{Owner, SealKey, StoreError, StoreLimits, StoreSpec};

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
}

impl Executor {
    pub fn new(engine: Arc<dyn Engine>, checks: RunChecks, sessions: Persistence) -> Self {
        Self {
            engine,
            checks,
            sessions,
            earlier: EarlierNames::default(),
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
            call_timeout: codemcp_store::DEFAULT_CALL_TIMEOUT,
        };
        let store = codemcp_store::open(&StoreSpec::Memory, SealKey::ephemeral(), limits)?;
        Ok(Self::new(
            engine,
            checks,
            Persistence::new(store, limits.idle),
        ))
    }

    /// Runs `request` in the session it names (a new one when it names none),
    /// on behalf of `owner`, with what the gateway assembled for it (its
    /// tools, the helpers' prelude), or says why it cannot run.
    pub async fn run(
        &self,
        owner: Owner,
        request: RunRequest,
        assembly: Assembly,
        control: RunControl,
    ) -> Execution {
        // A stalled store costs the whole call one store timeout, however
        // many store operations it makes (lease, load, save; and the
        // helpers' read when the gateway assembles inside the same call).
        codemcp_store::one_call(self.run_one(owner, request, assembly, control)).await
    }

    async fn run_one(
        &self,
        owner: Owner,
        request: RunRequest,
        assembly: Assembly,
        control: RunControl,
    ) -> Execution {
        let started = Instant::now();
        let session = request.session.clone();
        let Assembly {
            tools,
            prelude,
            warnings,
            snippet,
        } = assembly;
        let checked = self.check(request);
        codemcp_base::timing::since("limits checked", Some(started));
        let mut execution = match checked {
            Ok(run) => match self.preflight(session.as_deref(), &run, &tools).await {
                Ok(facts) => {
                    let run = self.assembled(run, prelude, facts, &snippet).await;
                    self.run_in_session(session.as_deref(), owner, run, tools, control)
                        .await
                }
                // Nothing ran: the session is as it was, and goes on.
                Err(error) => Execution {
                    session,
                    ..self.refused(error)
                },
            },
            Err(error) => self.refused(error),
        };
        execution.warnings.extend(warnings);
        self.finished(execution, started)
    }

    /// `run` with its prelude in front and an analysis of exactly the code
    /// the engine runs, read from the snippet's `facts` when the pre-flight
    /// check has them; `snippet` gets the snippet's own facts.
    async fn assembled(
        &self,
        run: Run,
        prelude: Option<Prelude>,
        facts: Option<Facts>,
        snippet: &SnippetFacts,
    ) -> Run {
        let mut run = match prelude {
            Some(prelude) => run.with_prelude(prelude),
            None => run,
        };
        if let Some(facts) = facts {
            run.know(&facts).await;
            snippet.fill(run.snippet(), Arc::new(facts));
        }
        run
    }

    /// The engine's name, the time taken and the metrics of a run that ended.
    fn finished(&self, mut execution: Execution, started: Instant) -> Execution {
        if execution.engine.is_empty() {
            execution.engine = self.engine.name();
        }
        execution.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        codemcp_base::metrics::run_finished(
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
        let (snippet, prelude, wall) = (run.snippet().to_owned(), run.prelude.clone(), run.wall);
        let started = Instant::now();
        let mut execution = self.engine.run(begun.id, run, tools, control).await;
        tracing::trace!(target: "codemcp::timing", us = started.elapsed().as_micros(), "engine run");
        if let Some(prelude) = &prelude {
            prelude.fix_lines(&mut execution);
        }
        let started = Instant::now();
        if let Some(parked) = resumed {
            // Its output and calls before it parked come first; the call it
            // parked at was counted then and again on resuming.
            execution.stdout.insert_str(0, &parked.stdout);
            execution.stderr.insert_str(0, &parked.stderr);
            execution.tool_calls += parked.tool_calls.saturating_sub(1);
        }
        if execution.parked.is_some() {
            let run = (snippet.as_str(), prelude.as_deref());
            self.sessions.park(begun, run, wall, &mut execution).await;
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
        match codemcp_store::one_call(unparked).await {
            Ok((begun, parked)) => Ok(Unparked { begun, run, parked }),
            Err(why) => Err(self.refused(
                RunError::new(ErrorKind::Input, "LookupError", why)
                    .with_hint("call execute_python again with the code that still has to run"),
            )),
        }
    }

    /// Resumes an unparked run to its end (or its next park), with what the
    /// gateway assembled for it (its prelude is the one it parked with).
    pub async fn resume(
        &self,
        unparked: Unparked,
        assembly: Assembly,
        control: RunControl,
    ) -> Execution {
        let started = Instant::now();
        let Unparked {
            begun,
            mut run,
            parked,
        } = unparked;
        let Assembly {
            tools,
            warnings,
            snippet,
            ..
        } = assembly;
        // Read once, for the engines and for `save_helper` alike.
        let facts = Facts::of_safely(run.snippet()).await;
        run.know(&facts).await;
        snippet.fill(run.snippet(), Arc::new(facts));
        let resumed = self.run_begun(begun, run, tools, control, Some(&parked));
        let mut execution = codemcp_store::one_call(resumed).await;
        execution.warnings.extend(warnings);
        self.finished(execution, started)
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
    /// The snippet's facts, read from the same parse, when it ran.
    async fn preflight(
        &self,
        session: Option<&str>,
        run: &Run,
        tools: &Arc<dyn ToolHost>,
    ) -> Result<Option<Facts>, RunError> {
        let started = Instant::now();
        let earlier = match session {
            Some(handle) => self.earlier.of(handle),
            None => Some(Vec::new()),
        };
        // Too many names to know what an earlier snippet defined: unchecked.
        let Some(mut earlier) = earlier else {
            return Ok(None);
        };
        let sdk = tools.sdk();
        earlier.extend(sdk.helpers().iter().map(|h| h.name.clone()));
        let mut checked =
            codemcp_snippet::preflight::check_safely(run.code.clone(), sdk, earlier).await;
        if let Some(handle) = session {
            self.earlier.add(handle, checked.bound_tool_names.clone());
        }
        tracing::trace!(target: "codemcp::timing", us = started.elapsed().as_micros(), problems = checked.total, "pre-flight check");
        match checked.rejection() {
            Some(rejection) => Err(rejection.into()),
            None => Ok(checked.facts.take()),
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

/// A parked run taken out of the store, with its session leased.
pub struct Unparked {
    begun: Begun,
    run: Run,
    /// What it stopped at: the question's server, tool and arguments.
    pub parked: Parked,
}
