//! Workers in hardened Docker containers (`CODEMCP_ISOLATION=DOCKER`,
//! `CODEMCP_FALLBACK=docker|auto`), driven with bollard.
//!
//! Every container: all capabilities dropped, no-new-privileges, read-only
//! root, a small noexec `/tmp`, user 65534, memory/pids/CPU limits, and only
//! the gateway's internal bridge network (`codemcp-workers`: no masquerading,
//! no traffic between containers). The control channel listens on that
//! network's gateway address only. Containers are labelled with the gateway
//! that started them; a gateway removes its own on drop and exit, and the
//! containers of gateways that died at its start. `auto_remove` and the
//! worker's exit on a closed control channel clean up after a killed gateway.

mod container;
mod network;
mod owner;

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as DockerApiError;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig};

use self::container::{Container, Watched, remove};
use self::network::ensure_network;
use self::owner::{GatewayProcess, reap_stale};
use super::WorkerError;
use super::spawn::{Dial, Launched, Reach, Spawner};

pub const DOCKER_ENGINE: &str = "cpython-docker";
/// The internal bridge network every gateway on this engine shares.
pub const NETWORK: &str = "codemcp-workers";
/// Where the image build (codemcp-image) puts `worker/bootstrap.py`.
const BAKED_BOOTSTRAP: &str = "/opt/codemcp/bootstrap.py";
/// The image label holding the SHA-256 of the baked bootstrap.
const BOOTSTRAP_LABEL: &str = "codemcp.bootstrap.sha256";
const WORKER_LABEL: &str = "codemcp.worker";
const HOST_LABEL: &str = "codemcp.gateway.host";
const PID_LABEL: &str = "codemcp.gateway.pid";
const START_LABEL: &str = "codemcp.gateway.start";
/// Scratch space for snippets; counted against the memory limit.
const TMPFS: &str = "rw,noexec,nosuid,nodev,size=64m";
/// How long removing a container may take at gateway exit.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long starting one container (create, start, inspect) may wait for the
/// engine; bollard's own timeout is 120 s per request.
const ENGINE_TIMEOUT: Duration = Duration::from_secs(10);

/// The fix for a missing engine or image, named in every such error.
/// Starting the engine is the operator's job; the image is codemcp's.
pub const ENGINE_FIX: &str = "starting one is the operator's job: on Debian, as root, `apt-get install docker.io` and run `dockerd` (from codemcp's repository: `sudo scripts/docker-engine.sh`); codemcp then builds its worker image on the first Docker escalation, or ahead of time with `codemcp setup docker`";
pub const IMAGE_FIX: &str =
    "build it with `codemcp setup docker` (CODEMCP_DOCKER_IMAGE selects another image)";

/// The container limits (`CODEMCP_DOCKER_*`).
#[derive(Debug, Clone)]
pub struct DockerConfig {
    pub image: String,
    pub memory_bytes: u64,
    pub pids: u32,
    pub nano_cpus: u64,
    /// Where a missing image's inputs are fetched from.
    pub sources: codemcp_image::Sources,
}

/// What `codemcp check` reports about Docker.
pub struct DockerStatus {
    /// The engine's version and API, or why it does not answer.
    pub engine: Result<String, String>,
    /// Whether the image exists and carries this build's worker code.
    pub image: Option<Result<String, String>>,
    /// The engine answers but has no such image (built on first use).
    pub image_missing: bool,
}

/// Connects and negotiates the API version (Debian's engine speaks 1.41).
pub async fn connect(within: Duration) -> Result<(Docker, String), WorkerError> {
    let no_engine = |detail: String| WorkerError::NoDockerEngine { detail };
    let docker = Docker::connect_with_defaults().map_err(|e| no_engine(e.to_string()))?;
    let answered = tokio::time::timeout(within, async {
        let docker = docker.negotiate_version().await?;
        let version = docker.version().await?;
        Ok::<_, DockerApiError>((docker, version))
    })
    .await;
    match answered {
        Ok(Ok((docker, version))) => {
            let text = format!(
                "Docker {} (API {})",
                version.version.unwrap_or_default(),
                docker.client_version()
            );
            Ok((docker, text))
        }
        Ok(Err(e)) => Err(no_engine(e.to_string())),
        Err(_) => Err(no_engine(format!(
            "no answer within {} s",
            within.as_secs()
        ))),
    }
}

/// For `codemcp check`: does an engine answer, does the image exist and is
/// it current (its labels), or what is missing.
pub async fn status(image: &str, sources: &codemcp_image::Sources) -> DockerStatus {
    let (docker, version) = match connect(Duration::from_secs(3)).await {
        Ok(ok) => ok,
        Err(e) => {
            return DockerStatus {
                engine: Err(e.to_string()),
                image: None,
                image_missing: false,
            };
        }
    };
    let found = codemcp_image::docker::inspect(&docker, image).await;
    let image_missing = matches!(found, Ok(codemcp_image::docker::Found::Missing));
    let image = found.map_err(|e| e.to_string()).and_then(|found| {
        codemcp_image::docker::describe(image, &found, &super::bootstrap_sha256(), sources)
    });
    DockerStatus {
        engine: Ok(version),
        image: Some(image),
        image_missing,
    }
}

/// Starts worker containers on one engine.
pub(super) struct DockerSpawner {
    docker: Docker,
    version: String,
    config: DockerConfig,
    network_id: String,
    gateway: Ipv4Addr,
    command: Vec<String>,
    /// Built on first use when it was missing.
    image: Arc<codemcp_image::docker::OnDemand>,
    labels: HashMap<String, String>,
    live: Arc<Mutex<HashSet<String>>>,
    /// Whether removing the container's default route can work (root).
    drop_route: bool,
}

impl DockerSpawner {
    /// Checks engine and image, makes the network and removes the containers
    /// of gateways that died.
    pub async fn prepare(
        config: DockerConfig,
        within: Duration,
        bootstrap: &'static str,
    ) -> Result<Self, WorkerError> {
        let (docker, version) = connect(within).await?;
        let found = codemcp_image::docker::inspect(&docker, &config.image)
            .await
            .map_err(|e| WorkerError::Docker(e.to_string()))?;
        // A missing image is built by this binary, with this bootstrap baked.
        let baked = match &found {
            codemcp_image::docker::Found::Present(labels) => labels.get(BOOTSTRAP_LABEL).cloned(),
            codemcp_image::docker::Found::Missing => Some(super::bootstrap_sha256()),
        };
        let image = codemcp_image::docker::OnDemand::new(
            docker.clone(),
            config.image.clone(),
            found != codemcp_image::docker::Found::Missing,
            config.sources.clone(),
            bootstrap,
        );
        let command = if baked.as_deref() == Some(super::bootstrap_sha256().as_str()) {
            vec!["python3".into(), "-u".into(), BAKED_BOOTSTRAP.into()]
        } else {
            tracing::warn!(target: "codemcp::worker", image = %config.image, "the image's worker code differs from this build's; passing it on the command line (rebuild: codemcp setup docker)");
            vec!["python3".into(), "-u".into(), "-c".into(), bootstrap.into()]
        };
        let (network_id, gateway) = ensure_network(&docker).await?;
        let me = GatewayProcess::current();
        // Docker before 26 gives containers on an internal network a default
        // route to the host (which drops what they send through it); removing it
        // needs the container's network namespace, so root.
        let drop_route = nix::unistd::geteuid().is_root();
        if !drop_route {
            tracing::warn!(target: "codemcp::worker", "not root: worker containers keep the default route Docker < 26 adds on internal networks (the host drops traffic sent through it)");
        }
        let labels = HashMap::from([
            (WORKER_LABEL.to_owned(), "1".to_owned()),
            (HOST_LABEL.to_owned(), me.host.clone()),
            (PID_LABEL.to_owned(), me.pid.to_string()),
            (START_LABEL.to_owned(), me.start.clone()),
        ]);
        let reaper = docker.clone();
        tokio::spawn(async move { reap_stale(&reaper, &me).await });
        Ok(Self {
            docker,
            version,
            config,
            network_id,
            gateway,
            command,
            image,
            labels,
            live: Arc::default(),
            drop_route,
        })
    }

    /// The only address the control channel may listen on.
    pub fn control_address(&self) -> IpAddr {
        IpAddr::V4(self.gateway)
    }

    fn body(&self, url: &str, token: &str) -> ContainerCreateBody {
        let memory = i64::try_from(self.config.memory_bytes).unwrap_or(i64::MAX);
        ContainerCreateBody {
            image: Some(self.config.image.clone()),
            user: Some("65534:65534".into()),
            hostname: Some("codemcp-worker".into()),
            working_dir: Some("/tmp".into()),
            cmd: Some(self.command.clone()),
            env: Some(vec![
                format!("CODEMCP_CONTROL_URL={url}"),
                format!("CODEMCP_WORKER_TOKEN={token}"),
                "PYTHONDONTWRITEBYTECODE=1".into(),
                "PYTHONUNBUFFERED=1".into(),
            ]),
            labels: Some(self.labels.clone()),
            // The worker is pid 1 and has no SIGTERM handler, so the kernel
            // ignores SIGTERM: `docker stop` and an engine shutdown would wait
            // 10 s per container for nothing. It has nothing to save.
            stop_signal: Some("SIGKILL".into()),
            host_config: Some(HostConfig {
                cap_drop: Some(vec!["ALL".into()]),
                security_opt: Some(vec!["no-new-privileges".into()]),
                readonly_rootfs: Some(true),
                tmpfs: Some(HashMap::from([("/tmp".into(), TMPFS.into())])),
                memory: Some(memory),
                memory_swap: Some(memory),
                pids_limit: Some(i64::from(self.config.pids)),
                nano_cpus: Some(i64::try_from(self.config.nano_cpus).unwrap_or(i64::MAX)),
                network_mode: Some(self.network_id.clone()),
                // Names outside the network cannot resolve (no route out), so
                // fail a lookup after 1 s instead of the resolver's 10 s.
                dns_options: Some(vec!["timeout:1".into(), "attempts:1".into()]),
                auto_remove: Some(true),
                // The worker's own diagnostics only; bounded so a snippet writing
                // to fd 2 cannot fill the host's disk.
                log_config: Some(HostConfigLogConfig {
                    typ: Some("json-file".into()),
                    config: Some(HashMap::from([
                        ("max-size".into(), "1m".into()),
                        ("max-file".into(), "1".into()),
                    ])),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Starts one worker container, bounded: an engine that stopped or hangs
    /// gives an error naming the fix, never a hung run.
    async fn start(&self, url: &str, token: &str) -> Result<Watched, WorkerError> {
        tokio::time::timeout(ENGINE_TIMEOUT, self.start_unbounded(url, token))
            .await
            .unwrap_or_else(|_| {
                Err(WorkerError::NoDockerEngine {
                    detail: format!(
                        "starting a worker container: no answer within {} s",
                        ENGINE_TIMEOUT.as_secs()
                    ),
                })
            })
    }

    async fn start_unbounded(&self, url: &str, token: &str) -> Result<Watched, WorkerError> {
        let created = self
            .docker
            .create_container(None, self.body(url, token))
            .await
            .map_err(|e| match e {
                DockerApiError::DockerResponseServerError {
                    status_code: 404, ..
                } => WorkerError::NoDockerImage {
                    image: self.config.image.clone(),
                },
                e => engine_error("creating a worker container", e),
            })?;
        let container = Container::new(self.docker.clone(), created.id, self.live.clone());
        let mut waiting = container.watch_exit();
        self.docker
            .start_container(&waiting.container.id, None)
            .await
            .map_err(|e| engine_error("starting a worker container", e))?;
        if self.drop_route {
            let pid = self
                .docker
                .inspect_container(&waiting.container.id, None)
                .await
                .map_err(|e| engine_error("inspecting a worker container", e))?
                .state
                .and_then(|s| s.pid)
                .filter(|&pid| pid > 0);
            match pid {
                Some(pid) => {
                    tokio::task::spawn_blocking(move || super::netns::drop_default_route(pid))
                        .await
                        .map_err(|e| WorkerError::Docker(e.to_string()))?
                        .map_err(|e| {
                            WorkerError::Docker(format!(
                                "removing the worker container's default route: {e}"
                            ))
                        })?
                }
                None => {
                    let exit = waiting.exited().await;
                    return Err(WorkerError::Start(format!(
                        "the worker container stopped at once ({})",
                        exit.description
                    )));
                }
            }
        }
        Ok(waiting)
    }
}

/// An API error while starting a worker: an answer from the engine is a Docker
/// error; no answer (socket gone, connection refused or cut) means the engine
/// is not running, and the error says how to start it.
fn engine_error(doing: &str, e: DockerApiError) -> WorkerError {
    match e {
        DockerApiError::DockerResponseServerError {
            status_code,
            message,
        } => WorkerError::Docker(format!("{doing}: {message} (HTTP {status_code})")),
        e => WorkerError::NoDockerEngine {
            detail: format!("{doing}: {e}"),
        },
    }
}

#[async_trait::async_trait]
impl Spawner for DockerSpawner {
    fn engine(&self) -> &'static str {
        DOCKER_ENGINE
    }

    fn describe(&self) -> String {
        format!(
            "cpython in Docker containers ({}, {}; {} MiB, {} pids, {} CPUs, network {NETWORK}, control on {})",
            self.config.image,
            self.version,
            self.config.memory_bytes >> 20,
            self.config.pids,
            self.config.nano_cpus as f64 / 1e9,
            self.gateway
        )
    }

    fn reach(&self) -> Reach {
        Reach::Listen(self.control_address())
    }

    async fn spawn(&self, dial: Dial<'_>) -> Result<Box<dyn Launched>, WorkerError> {
        self.image.ready().await.map_err(WorkerError::Start)?;
        let watched = self.start(dial.url, dial.token).await?;
        Ok(Box::new(watched))
    }

    fn memory_limit(&self) -> Option<String> {
        Some(format!(
            "{} MiB, CODEMCP_DOCKER_MEMORY",
            self.config.memory_bytes >> 20
        ))
    }

    async fn shutdown(&self) {
        let ids: Vec<String> = self.live.lock().drain().collect();
        let removals = ids.iter().map(|id| remove(&self.docker, id));
        let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, futures::future::join_all(removals)).await;
    }
}
