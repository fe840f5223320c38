//! Assembles the engine stack the settings ask for: `CODEMCP_ISOLATION` picks
//! Monty (with the `CODEMCP_FALLBACK` engine behind it) or CPython only;
//! `CODEMCP_MONTY` picks Monty's placement, else the transport's default.

use std::sync::Arc;
use std::time::Duration;

use crate::config::{
    CpythonSettings, Fallback, Isolation, MontyPlacement, MontySettings, RunLimits,
    SessionSettings, Settings,
};
use codemcp_exec::Engine;
use codemcp_exec::monty::pool::{PoolEngine, find_worker_binary, worker_binary};
use codemcp_exec::monty::{MontyEngine, MontyLimits};
use codemcp_exec::router::Router;
use codemcp_exec::worker::docker::DockerConfig;
use codemcp_exec::worker::sandbox::{Bounds, RootSource, SandboxConfig};
use codemcp_exec::worker::{WorkerEngine, WorkerError, WorkerLimits, find_python};
use codemcp_exec::{Executor, Persistence, RunChecks};
use codemcp_store::{SealKey, SessionStore, StoreError, StoreLimits, StoreSpec};

/// How long an explicitly chosen Docker engine may take to answer.
const DOCKER_WAIT: Duration = Duration::from_secs(10);
/// How long `CODEMCP_FALLBACK=auto` waits for one before going without.
const DOCKER_AUTO_WAIT: Duration = Duration::from_secs(2);
/// How long past the run limit a session's lease lasts (saving takes time too).
const LEASE_SLACK: Duration = Duration::from_secs(30);

/// Where clients reach the gateway; decides Monty's default placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One client on stdio (also `codemcp exec`): Monty in-process.
    Stdio,
    /// Many clients over HTTP: Monty in worker processes.
    Http,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("CODEMCP_SESSION_STORE: {0}")]
    Store(StoreError),
    #[error("CODEMCP_MONTY=pool: {0}")]
    MontyPool(String),
    #[error("{setting}: {source}")]
    Workers {
        setting: &'static str,
        source: WorkerError,
    },
}

/// The engine stack, and the saved helpers each run is assembled with
/// (`crate::helpers::assemble`).
pub struct Assembled {
    pub executor: Executor,
    pub helpers: Option<Arc<crate::helpers::Helpers>>,
}

impl From<Executor> for Assembled {
    /// An engine stack that keeps no saved helpers (tests, fuzzing).
    fn from(executor: Executor) -> Self {
        Self {
            executor,
            helpers: None,
        }
    }
}

/// The engines `settings` ask for, behind the checks every run goes through,
/// and the saved helpers.
///
/// # Errors
/// When an engine asked for explicitly cannot start (no worker binary, no
/// Docker engine or image, no usable Python).
pub async fn build(settings: &Settings, transport: Transport) -> Result<Assembled, ExecError> {
    let Settings {
        limits,
        sessions,
        monty,
        cpython,
        ..
    } = settings;
    let workers = worker_limits(limits, sessions, cpython);
    let engine: Arc<dyn Engine> = match cpython.isolation {
        Isolation::Monty => {
            let limits = monty_limits(limits, sessions, monty);
            let primary = monty_engine(limits, monty, &cpython.pypi_files, transport).await?;
            let (fallback, hint) = fallback(cpython, workers).await?;
            Arc::new(Router::new(primary, fallback, hint))
        }
        Isolation::HostSystem => {
            host_workers(cpython, workers, "CODEMCP_ISOLATION=HOST_SYSTEM").await?
        }
        Isolation::Sandbox => sandbox_workers(cpython, workers, true)
            .await
            .map_err(|source| ExecError::Workers {
                setting: "CODEMCP_ISOLATION=SANDBOX",
                source,
            })?,
        Isolation::Docker => docker_workers(cpython, workers, DOCKER_WAIT, true)
            .await
            .map_err(|source| ExecError::Workers {
                setting: "CODEMCP_ISOLATION=DOCKER",
                source,
            })?,
    };
    tracing::info!(target: "codemcp", engine = %engine.describe(), "engine ready");
    let checks = RunChecks {
        exec_timeout: limits.exec_timeout,
        max_source_bytes: limits.max_source_bytes,
    };
    // Saved helpers live in the sessions' store, under the same key.
    let (spec, key) = store_spec_and_key(settings, transport)?;
    let sessions = Persistence::new(
        session_store(settings, &spec, key.clone())?,
        settings.sessions.session_idle,
    )
    .parking_for(settings.authority.approval_timeout);
    tracing::info!(target: "codemcp", sessions = %sessions.describe(), "session store ready");
    let helpers =
        crate::helpers::Helpers::from_settings(settings, &spec, key).map_err(ExecError::Store)?;
    Ok(Assembled {
        executor: Executor::new(engine, checks, sessions),
        helpers: Some(Arc::new(helpers)),
    })
}

/// The session store and key `settings` name (saved helpers live there too):
/// the store `CODEMCP_SESSION_STORE` names, else the transport's default,
/// memory for one stdio client, a file that survives restarts for HTTP.
pub fn store_spec_and_key(
    settings: &Settings,
    transport: Transport,
) -> Result<(StoreSpec, SealKey), ExecError> {
    let spec = match (&settings.sessions.session_store, transport) {
        (Some(text), _) => text.parse::<StoreSpec>().map_err(ExecError::Store)?,
        (None, Transport::Stdio) => StoreSpec::Memory,
        (None, Transport::Http) => {
            StoreSpec::File(codemcp_store::state_dir().join("sessions.sqlite3"))
        }
    };
    let key = match spec {
        StoreSpec::Memory => SealKey::ephemeral(),
        _ => SealKey::from_setting(
            settings.sessions.session_key.as_deref(),
            &codemcp_store::state_dir(),
        )
        .map_err(ExecError::Store)?,
    };
    Ok((spec, key))
}

fn session_store(
    settings: &Settings,
    spec: &StoreSpec,
    key: SealKey,
) -> Result<Arc<dyn SessionStore>, ExecError> {
    let limits = StoreLimits {
        idle: settings.sessions.session_idle,
        max_snapshot_bytes: settings.sessions.max_session_bytes,
        // A run holds its session's lease; a gateway that dies holding one
        // frees it after its longest possible run.
        lease_ttl: settings.limits.exec_timeout + LEASE_SLACK,
        call_timeout: settings.sessions.session_store_timeout,
    };
    codemcp_store::open(spec, key, limits).map_err(ExecError::Store)
}

/// The CPython engine Monty escalates to, or `None` and what to say instead.
/// `auto` takes the strongest placement this machine has (docs/security.md
/// gives the order and why): Docker when an engine answers, else a
/// bubblewrap sandbox, else none. Never the unsandboxed host: that one is
/// only ever used when named.
async fn fallback(
    cpython: &CpythonSettings,
    limits: WorkerLimits,
) -> Result<(Option<Arc<WorkerEngine>>, String), ExecError> {
    let explicit = |setting| move |source| ExecError::Workers { setting, source };
    Ok(match cpython.fallback {
        Fallback::Host => (
            Some(host_workers(cpython, limits, "CODEMCP_FALLBACK=host-unsandboxed").await?),
            String::new(),
        ),
        Fallback::Sandbox => {
            let workers = sandbox_workers(cpython, limits, true)
                .await
                .map_err(explicit("CODEMCP_FALLBACK=sandbox"))?;
            (Some(workers), String::new())
        }
        Fallback::Docker => {
            let workers = docker_workers(cpython, limits, DOCKER_WAIT, true)
                .await
                .map_err(explicit("CODEMCP_FALLBACK=docker"))?;
            (Some(workers), String::new())
        }
        Fallback::Auto => auto_fallback(cpython, limits).await,
        Fallback::None => (None, "The CPython fallback is disabled (CODEMCP_FALLBACK=none); CODEMCP_FALLBACK=sandbox or docker enables a sandboxed one (host-unsandboxed: trusted agents only, no sandbox).".to_owned()),
    })
}

async fn auto_fallback(
    cpython: &CpythonSettings,
    limits: WorkerLimits,
) -> (Option<Arc<WorkerEngine>>, String) {
    let no_docker = match docker_workers(cpython, limits.clone(), DOCKER_AUTO_WAIT, false).await {
        Ok(workers) => return (Some(workers), String::new()),
        Err(e) => e,
    };
    match sandbox_workers(cpython, limits, true).await {
        Ok(workers) => {
            tracing::info!(target: "codemcp", docker = %no_docker, "CODEMCP_FALLBACK=auto: no usable Docker, escalating to bubblewrap sandboxes");
            (Some(workers), String::new())
        }
        Err(no_sandbox) => {
            tracing::warn!(target: "codemcp", docker = %no_docker, sandbox = %no_sandbox, "no CPython fallback: CODEMCP_FALLBACK=auto found neither a usable Docker nor a sandbox");
            (
                None,
                format!(
                    "No CPython fallback is enabled: CODEMCP_FALLBACK=auto found no usable Docker ({no_docker}) and no sandbox ({no_sandbox}). `codemcp check` says what is missing."
                ),
            )
        }
    }
}

fn monty_limits(run: &RunLimits, sessions: &SessionSettings, monty: &MontySettings) -> MontyLimits {
    MontyLimits {
        exec_timeout: run.exec_timeout,
        max_output_bytes: run.max_output_bytes,
        max_result_bytes: run.max_result_bytes,
        max_tool_calls: run.max_tool_calls,
        max_recursion_depth: run.max_recursion_depth,
        max_sleep_total: run.max_sleep_total,
        memory_limit: monty.monty_mem_limit,
        session_idle: sessions.session_idle,
        max_sessions: sessions.max_sessions,
    }
}

/// The Monty engine in the placement `CODEMCP_MONTY` asks for, else the
/// transport's default.
async fn monty_engine(
    limits: MontyLimits,
    monty: &MontySettings,
    pypi_files: &str,
    transport: Transport,
) -> Result<Arc<dyn Engine>, ExecError> {
    let default = match transport {
        Transport::Stdio => MontyPlacement::InProcess,
        Transport::Http => MontyPlacement::Pool,
    };
    Ok(match monty.monty_placement.unwrap_or(default) {
        MontyPlacement::InProcess => {
            let engine = MontyEngine::new(limits);
            // Where runs go if runaway runs make the in-process engine retire.
            Arc::new(match find_worker_binary(monty.monty_bin.as_deref()) {
                Ok(binary) => engine.with_spare_pool(binary, monty.monty_workers),
                Err(_) => engine,
            })
        }
        MontyPlacement::Pool => {
            // Provisioned here on the first start without a worker.
            let worker = worker_binary::choose(monty.monty_bin.as_deref(), Some(pypi_files))
                .await
                .map_err(|e| ExecError::MontyPool(e.to_string()))?;
            let pool = PoolEngine::start(limits, worker.binary, monty.monty_workers)
                .await
                .map_err(|e| ExecError::MontyPool(e.to_string()))?;
            Arc::new(pool)
        }
    })
}

fn worker_limits(
    run: &RunLimits,
    sessions: &SessionSettings,
    cpython: &CpythonSettings,
) -> WorkerLimits {
    WorkerLimits {
        exec_timeout: run.exec_timeout,
        max_output_bytes: run.max_output_bytes,
        max_result_bytes: run.max_result_bytes,
        max_tool_calls: run.max_tool_calls,
        session_idle: cpython.worker_idle,
        max_sessions: sessions.max_sessions,
        max_state_bytes: sessions.max_session_bytes,
    }
}

/// The unsandboxed host placement: only ever started when named.
async fn host_workers(
    cpython: &CpythonSettings,
    limits: WorkerLimits,
    setting: &'static str,
) -> Result<Arc<WorkerEngine>, ExecError> {
    tracing::warn!(target: "codemcp", setting, "escalated code runs UNSANDBOXED on the host, as this user: for trusted agents only");
    WorkerEngine::start_host(limits, find_python(cpython.python.as_deref()))
        .await
        .map_err(|source| ExecError::Workers { setting, source })
}

fn docker_config(cpython: &CpythonSettings) -> DockerConfig {
    DockerConfig {
        image: cpython.docker_image.clone(),
        memory_bytes: cpython.docker_memory as u64,
        pids: cpython.docker_pids,
        nano_cpus: cpython.docker_nano_cpus,
        sources: codemcp_image::Sources {
            debian_mirror: cpython.debian_mirror.clone(),
            pypi_files: cpython.pypi_files.clone(),
        },
    }
}

async fn docker_workers(
    cpython: &CpythonSettings,
    limits: WorkerLimits,
    within: Duration,
    prewarm: bool,
) -> Result<Arc<WorkerEngine>, WorkerError> {
    WorkerEngine::start_docker(limits, docker_config(cpython), within, prewarm).await
}

/// The bounds of a sandboxed worker: Docker's memory, processes and CPU
/// share (`CODEMCP_DOCKER_*` bound every isolated worker), and the rest as
/// the container has them.
pub fn sandbox_bounds(cpython: &CpythonSettings) -> Bounds {
    Bounds {
        memory_bytes: cpython.docker_memory as u64,
        pids: cpython.docker_pids,
        nano_cpus: cpython.docker_nano_cpus,
        cpu_seconds: SANDBOX_CPU_SECONDS,
        file_bytes: SANDBOX_TMP_BYTES,
        open_files: 1024,
        tmp_bytes: SANDBOX_TMP_BYTES,
    }
}

/// CPU time a sandboxed worker's process may use over its life (a run's
/// wall limit stops any one run long before).
const SANDBOX_CPU_SECONDS: u64 = 3600;
/// `/tmp`, `/dev/shm` and the largest file, as Docker's tmpfs.
const SANDBOX_TMP_BYTES: u64 = 64 << 20;

async fn sandbox_workers(
    cpython: &CpythonSettings,
    limits: WorkerLimits,
    prewarm: bool,
) -> Result<Arc<WorkerEngine>, WorkerError> {
    let config = sandbox_config(cpython).map_err(|e| WorkerError::Sandbox(e.to_string()))?;
    WorkerEngine::start_sandbox(limits, config, prewarm).await
}

fn sandbox_config(
    cpython: &CpythonSettings,
) -> Result<SandboxConfig, codemcp_exec::worker::sandbox::Missing> {
    let bwrap = codemcp_exec::worker::sandbox::probe::find_bwrap(cpython.bwrap.as_deref()).ok_or(
        if cfg!(target_os = "linux") {
            codemcp_exec::worker::sandbox::Missing::NoBwrap
        } else {
            codemcp_exec::worker::sandbox::Missing::NotLinux
        },
    )?;
    let root = match &cpython.sandbox_rootfs {
        Some(tree) => RootSource::Given(tree.clone()),
        None => RootSource::Recipe(image_sources(cpython)),
    };
    Ok(SandboxConfig {
        bwrap,
        root,
        bounds: sandbox_bounds(cpython),
    })
}

fn image_sources(cpython: &CpythonSettings) -> codemcp_image::Sources {
    codemcp_image::Sources {
        debian_mirror: cpython.debian_mirror.clone(),
        pypi_files: cpython.pypi_files.clone(),
    }
}

/// `codemcp setup sandbox`: the root file system made and a sandbox tried
/// on it, or what is missing.
pub async fn prepare_sandbox(cpython: &CpythonSettings) -> Result<String, String> {
    let config = sandbox_config(cpython).map_err(|e| e.to_string())?;
    let version = codemcp_exec::worker::sandbox::probe::bwrap_works(&config.bwrap)
        .await
        .map_err(|e| e.to_string())?;
    let bootstrap = codemcp_exec::worker::BOOTSTRAP;
    let root = match &config.root {
        RootSource::Recipe(sources) => {
            codemcp_exec::worker::sandbox::root::made(&config.bwrap, sources, bootstrap).await?
        }
        RootSource::Given(tree) => {
            codemcp_exec::worker::sandbox::root::given(&config.bwrap, tree).await
        }
    };
    let python = codemcp_exec::worker::sandbox::probe::rootfs_python(&config.bwrap, &root.tree)
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "the sandbox is ready: {version}, CPython {python} in {}{}",
        root.tree.display(),
        if root.pycache.is_some() {
            " (bytecode compiled)"
        } else {
            " (no compiled bytecode: workers start slower)"
        }
    ))
}

/// Where the sandbox's root file system is (or will be made), for `check`.
pub fn sandbox_rootfs_path(cpython: &CpythonSettings) -> std::path::PathBuf {
    cpython.sandbox_rootfs.clone().unwrap_or_else(|| {
        codemcp_exec::worker::sandbox::root::recipe_tree(codemcp_exec::worker::BOOTSTRAP)
            .unwrap_or_else(|| codemcp_exec::worker::sandbox::root::data_dir().join("python-root"))
    })
}
