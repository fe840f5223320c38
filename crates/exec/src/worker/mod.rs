//! The CPython engine: full Python in a worker process (`worker/bootstrap.py`)
//! reached over the authenticated WebSocket control channel. One worker per MCP
//! session, started on first use, with one spare kept warm to hide the cold
//! start. A run past its time limit gets its worker killed and replaced, and
//! the response says the session state was lost; so does a worker that exits.
//!
//! Workers run where a placement ([`Spawner`], `spawn.rs`) puts them: in
//! bubblewrap sandboxes on the host (`sandbox/`), in hardened Docker
//! containers (`docker.rs`), or as plain host processes (`spawn.rs`; no
//! sandbox, for trusted agents only, and only when asked for by name).

mod control;
pub mod docker;
mod link;
mod netns;
mod outcome;
pub mod protocol;
pub mod sandbox;
mod spawn;

use parking_lot::Mutex;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::process::Command;

use self::control::ControlServer;
use self::docker::{DockerConfig, DockerSpawner};
use self::link::{RunContext, WorkerLink};
use self::outcome::Outcome;
use self::protocol::{FunctionInfo, RunParams, WorkerCatalog};
use self::sandbox::{SandboxConfig, SandboxSpawner};
use self::spawn::{Dial, HostSpawner, Launched, Reach, Spawner};
use super::session_table::{SessionState, SessionTable};

use super::{
    Engine, ErrorKind, Execution, Run, RunControl, RunError, SessionId, Snapshot, ToolHost,
};
use codemcp_sdk::Sdk;

pub const HOST_ENGINE: &str = "cpython-host";
/// The CPython version whose semantics Monty follows: the worker image runs
/// it (`image/recipe.rs`), and `codemcp check` compares.
pub const MONTY_CPYTHON: &str = "3.14";

/// The worker program, baked into the binary.
pub const BOOTSTRAP: &str = include_str!("../../../../worker/bootstrap.py");
/// The `websockets` version the worker is tested with.
pub const WEBSOCKETS_PIN: &str = "websockets>=13,<18";
/// How long a new worker may take to dial in.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long to wait for the exit status of a worker whose connection closed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    #[error("cannot start the CPython worker: {0}")]
    Start(String),
    #[error(
        "the CPython worker needs the `websockets` package for {python}; install it with: {python} -m pip install '{WEBSOCKETS_PIN}'"
    )]
    MissingWebsockets { python: String },
    #[error("cannot open the worker control channel: {0}")]
    Control(std::io::Error),
    #[error("no Docker engine answers ({detail}); {}", docker::ENGINE_FIX)]
    NoDockerEngine { detail: String },
    #[error("the worker image {image} does not exist; {}", docker::IMAGE_FIX)]
    NoDockerImage { image: String },
    #[error("Docker: {0}")]
    Docker(String),
    #[error("the sandbox placement is unavailable: {0}")]
    Sandbox(String),
}

impl WorkerError {
    /// What went wrong, without the "cannot start" prefix of `Start`.
    fn reason(&self) -> String {
        match self {
            Self::Start(reason) => reason.clone(),
            e => e.to_string(),
        }
    }
}

/// Limits the worker engine applies.
#[derive(Debug, Clone)]
pub struct WorkerLimits {
    pub exec_timeout: Duration,
    pub max_output_bytes: usize,
    pub max_result_bytes: usize,
    pub max_tool_calls: u32,
    pub session_idle: Duration,
    pub max_sessions: usize,
    /// `CODEMCP_MAX_SESSION_BYTES`: the most a session's saved variables may take.
    pub max_state_bytes: usize,
}

struct Worker {
    /// Dropping it stops the process or container.
    process: Box<dyn Launched>,
    link: Arc<WorkerLink>,
    /// The catalog version this worker has seen.
    catalog_version: Option<u64>,
}

impl Worker {
    fn usable(&mut self) -> bool {
        !self.link.closed().is_cancelled() && !self.process.has_exited()
    }
}

#[derive(Default)]
struct WorkerSession {
    worker: Option<Worker>,
    /// The version of the state its worker holds (see `Run::version`).
    version: Option<u64>,
}

impl SessionState for WorkerSession {
    fn held_version(&self) -> Option<u64> {
        self.worker.as_ref().and(self.version)
    }
}

pub struct WorkerEngine {
    /// For the task that starts a spare worker; it must not keep the engine alive.
    me: Weak<Self>,
    limits: WorkerLimits,
    spawner: Box<dyn Spawner>,
    control: Arc<ControlServer>,
    sessions: SessionTable<WorkerSession>,
    /// Held while a spare starts, so a run can wait for it.
    spare: Arc<tokio::sync::Mutex<Spare>>,
    spawned: AtomicU32,
    /// Set by `shutdown`: a spare that fails from then on was stopped by it.
    stopping: AtomicBool,
    /// The catalog as workers see it, for the SDK it was built from: built
    /// once per catalog change, not once per run.
    catalog: Mutex<Option<(Arc<Sdk>, Arc<WorkerCatalog>)>>,
}

/// `CODEMCP_PYTHON`, else `python3` on `PATH`.
pub fn find_python(configured: Option<&std::path::Path>) -> PathBuf {
    configured.map_or_else(|| PathBuf::from("python3"), std::path::Path::to_owned)
}

/// For `codemcp check`: the version of the host workers' CPython, e.g. `3.14.8`.
pub async fn host_python_version(python: &std::path::Path) -> Result<String, String> {
    let mut command = tokio::process::Command::new(python);
    command
        .args(["-c", "import sys; print(sys.version.split()[0])"])
        .kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(10), command.output()).await {
        Ok(Ok(out)) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        Ok(Ok(out)) => Err(format!("{}: {}", python.display(), out.status)),
        Ok(Err(e)) => Err(format!("{}: {e}", python.display())),
        Err(_) => Err(format!("{}: no answer within 10 s", python.display())),
    }
}

impl WorkerEngine {
    /// Checks the interpreter and opens the control channel on loopback.
    pub async fn start_host(
        limits: WorkerLimits,
        python: PathBuf,
    ) -> Result<Arc<Self>, WorkerError> {
        let probe = Command::new(&python)
            .args(["-c", "import websockets"])
            .output()
            .await;
        match probe {
            Ok(out) if out.status.success() => {}
            Ok(_) => {
                return Err(WorkerError::MissingWebsockets {
                    python: python.display().to_string(),
                });
            }
            Err(e) => return Err(WorkerError::Start(format!("{}: {e}", python.display()))),
        }
        let spawner = HostSpawner {
            python,
            bootstrap: BOOTSTRAP,
        };
        tracing::warn!(target: "codemcp::worker", "CPython workers run UNSANDBOXED on the host: snippets that escalate get the gateway's user, files and network (for trusted agents only; CODEMCP_FALLBACK=sandbox confines them)");
        Self::start_placement(limits, Box::new(spawner), true).await
    }

    /// Checks that bubblewrap can make sandboxes here from `config`'s root
    /// file system; a spare sandbox starts at once with `prewarm`.
    pub async fn start_sandbox(
        limits: WorkerLimits,
        config: SandboxConfig,
        prewarm: bool,
    ) -> Result<Arc<Self>, WorkerError> {
        let spawner = SandboxSpawner::prepare(config, BOOTSTRAP).await?;
        Self::start_placement(limits, Box::new(spawner), prewarm).await
    }

    /// Opens the control channel the placement's workers reach, then starts.
    async fn start_placement(
        limits: WorkerLimits,
        spawner: Box<dyn Spawner>,
        prewarm: bool,
    ) -> Result<Arc<Self>, WorkerError> {
        let control = match spawner.reach() {
            Reach::Listen(address) => ControlServer::start(address)
                .await
                .map_err(WorkerError::Control)?,
            Reach::HandedIn => ControlServer::handed_in(),
        };
        Ok(Self::start(limits, spawner, control, prewarm))
    }

    /// Checks the Docker engine (answering within `within`) and the image,
    /// and opens the control channel on the workers' network gateway address
    /// only. With `prewarm`, a spare container starts at once; otherwise on
    /// first use.
    pub async fn start_docker(
        limits: WorkerLimits,
        config: DockerConfig,
        within: Duration,
        prewarm: bool,
    ) -> Result<Arc<Self>, WorkerError> {
        let spawner = DockerSpawner::prepare(config, within, BOOTSTRAP).await?;
        Self::start_placement(limits, Box::new(spawner), prewarm).await
    }

    fn start(
        limits: WorkerLimits,
        spawner: Box<dyn Spawner>,
        control: Arc<ControlServer>,
        prewarm: bool,
    ) -> Arc<Self> {
        let sessions = SessionTable::new(limits.session_idle, limits.max_sessions);
        let engine = Arc::new_cyclic(|me| Self {
            me: me.clone(),
            limits,
            spawner,
            control,
            sessions,
            spare: Arc::new(tokio::sync::Mutex::new(Spare::Empty)),
            spawned: AtomicU32::new(0),
            stopping: AtomicBool::new(false),
            catalog: Mutex::new(None),
        });
        if prewarm {
            engine.refill_spare();
        }
        engine
    }

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
    fn refill_spare(&self) {
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

    fn catalog_for(&self, sdk: &Arc<Sdk>) -> Arc<WorkerCatalog> {
        let mut cached = self.catalog.lock();
        match cached.as_ref() {
            Some((built_from, catalog)) if Arc::ptr_eq(built_from, sdk) => catalog.clone(),
            _ => {
                let catalog = Arc::new(catalog_of(sdk));
                *cached = Some((sdk.clone(), catalog.clone()));
                catalog
            }
        }
    }

    /// Workers started so far (for tests and `check`).
    pub fn workers_started(&self) -> u32 {
        self.spawned.load(Ordering::Relaxed)
    }

    /// Runs `run` in `session`'s CPython state, first setting `globals` (the
    /// variables a session brings along when it escalates from Monty).
    pub async fn run_with_globals(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
        globals: Option<Map<String, Value>>,
    ) -> WorkerRun {
        let mut execution = Execution::of(self.spawner.engine());
        // Waiting for the session does not watch for cancellation: a run
        // cancelled meanwhile is stopped once it starts.
        let checked_out = self
            .sessions
            .check_out(session, WorkerSession::default, run.deadline, None)
            .await;
        let mut guard = match checked_out {
            Ok(guard) => guard,
            Err(error) => {
                execution.error = Some(error);
                return WorkerRun::ran(execution);
            }
        };
        if let Err(failed) = self.ensure_worker(&mut guard, &run).await {
            return failed;
        }
        let name = session.0.to_string();
        let globals = match self.restore(&mut guard, &name, &run, &mut execution).await {
            Some(restored) => Some(restored),
            None => globals,
        };
        let Some(worker) = guard.worker.as_mut() else {
            return WorkerRun::ran(execution);
        };
        let sdk = tools.sdk();
        let catalog = self.catalog_for(&sdk);
        let version = catalog.version;
        // Only a worker that has not seen this catalog gets it sent.
        let catalog = (worker.catalog_version != Some(version)).then(|| (*catalog).clone());
        let context = Arc::new(RunContext {
            engine: self.spawner.engine(),
            tools,
            sdk,
            max_tool_calls: self.limits.max_tool_calls,
            tool_calls: AtomicU32::new(0),
            side_effects: AtomicU32::new(0),
            observer: control.on_tool_call.clone(),
        });
        let future_calls = run.calls().await.future_lines(&run.code);
        worker.link.begin_run(&name, context.clone());
        let params = RunParams {
            session: name.clone(),
            code: run.code.clone(),
            timeout_ms: u64::try_from(run.wall.as_millis()).unwrap_or(u64::MAX),
            max_output_bytes: self.limits.max_output_bytes,
            catalog,
            globals,
            return_globals: run.persist.then_some(self.limits.max_state_bytes),
            future_calls: Some(future_calls),
        };
        let params = serde_json::to_value(&params).unwrap_or(Value::Null);
        let link = worker.link.clone();
        let outcome = tokio::select! {
            reply = link.request("run", params) => Outcome::Reply(reply),
            // A container can die without its connection closing cleanly.
            exit = worker.process.exited() => Outcome::Exited(exit),
            () = tokio::time::sleep_until(run.deadline.into()) => Outcome::Deadline,
            () = control.cancel.cancelled() => Outcome::Cancelled,
        };
        worker.link.end_run(&name);
        execution.tool_calls = context
            .tool_calls
            .load(Ordering::Relaxed)
            .min(self.limits.max_tool_calls);
        let side_effects = context.side_effects.load(Ordering::Relaxed);
        if !self.settle(outcome, worker, version, &mut execution).await {
            guard.worker = None; // dropping the worker stops its process
            if run.persist {
                // Its state is gone: so is the saved one.
                execution.snapshot = Some(Snapshot::cpython(&Map::new()));
            }
        }
        if execution.snapshot.is_some() {
            guard.version = Some(run.version);
        }
        execution.side_effects = side_effects;
        WorkerRun::ran(execution)
    }

    /// Gives the session a live worker, starting one (or taking the spare)
    /// within the run's wall time; else the run's answer.
    async fn ensure_worker(&self, session: &mut WorkerSession, run: &Run) -> Result<(), WorkerRun> {
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

    /// The saved variables to seed when the store holds a newer state than
    /// the worker; the worker's own copy of the session is dropped first.
    async fn restore(
        &self,
        session: &mut WorkerSession,
        name: &str,
        run: &Run,
        execution: &mut Execution,
    ) -> Option<Map<String, Value>> {
        let saved = run.to_restore(session.version)?;
        let globals = saved.cpython_globals();
        if globals.is_none() {
            execution.warnings.push(
                "this session's state was saved by the Monty engine, which this gateway does not run; it started fresh"
                    .to_owned(),
            );
        }
        if let Some(worker) = session.worker.as_ref()
            && session.version.is_some()
        {
            let reset = serde_json::json!({ "session": name });
            if let Err(e) = worker.link.request("reset", reset).await {
                tracing::debug!(target: "codemcp::worker", error = %e, "resetting a session before a restore failed");
                session.worker = None;
            }
        }
        Some(globals.unwrap_or_default())
    }
}

/// The worker kept started for the next new session.
enum Spare {
    Empty,
    Ready(Worker),
    /// Why the last attempt failed (for a run that waited for it).
    Failed(String),
}

/// A run of the worker engine.
pub struct WorkerRun {
    pub execution: Execution,
    /// No worker could be started (no Docker engine, say): nothing ran, and
    /// the session has no CPython state left.
    pub no_worker: bool,
}

impl WorkerRun {
    fn ran(execution: Execution) -> Self {
        Self {
            execution,
            no_worker: false,
        }
    }
}

/// The catalog as the worker sees it, with a version that changes with it.
fn catalog_of(sdk: &Sdk) -> WorkerCatalog {
    let functions: Vec<FunctionInfo> = sdk
        .functions()
        .iter()
        .map(|f| FunctionInfo {
            name: f.py_name.clone(),
            doc: format!("{}\n\n{}", f.signature(), f.description),
        })
        .collect();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for f in &functions {
        f.name.hash(&mut hasher);
        f.doc.hash(&mut hasher);
    }
    WorkerCatalog {
        version: hasher.finish(),
        functions,
    }
}

/// SHA-256 of the worker code in this build, as the image label has it.
fn bootstrap_sha256() -> String {
    sha256_hex(BOOTSTRAP.as_bytes())
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[async_trait::async_trait]
impl Engine for WorkerEngine {
    fn name(&self) -> &'static str {
        self.spawner.engine()
    }

    fn describe(&self) -> String {
        self.spawner.describe()
    }

    async fn run(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        self.run_with_globals(session, run, tools, control, None)
            .await
            .execution
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

    /// Stops every worker and waits for it: a dropped worker's container is
    /// removed by a task that may never run once the runtime ends.
    async fn shutdown(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        self.spawner.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_matches_the_standard_vector() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
