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
//!
//! A run (`run.rs`) checks its session out of the session table, gets it a
//! worker (`spare.rs`: started, or the spare taken) and settles how the run
//! ended (`outcome.rs`).

mod control;
pub mod docker;
mod link;
mod netns;
mod outcome;
pub mod protocol;
mod run;
pub mod sandbox;
mod spare;
mod spawn;

use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::process::Command;

use self::control::ControlServer;
use self::docker::{DockerConfig, DockerSpawner};
use self::link::WorkerLink;
use self::protocol::WorkerCatalog;
pub use self::run::WorkerRun;
use self::sandbox::{SandboxConfig, SandboxSpawner};
use self::spare::Spare;
use self::spawn::{HostSpawner, Launched, Reach, Spawner};
use super::session_table::{SessionState, SessionTable};

use super::{Engine, Execution, Run, RunControl, SessionId, ToolHost};
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

    /// Workers started so far (for tests and `check`).
    pub fn workers_started(&self) -> u32 {
        self.spawned.load(Ordering::Relaxed)
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
