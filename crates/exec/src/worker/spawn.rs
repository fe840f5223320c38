//! Where a worker runs: the one seam for placements. A [`Spawner`] starts a
//! worker, bounds it and says how it reaches the gateway; [`Launched`] is the
//! started worker. Placements: the unsandboxed host process (here),
//! bubblewrap sandboxes (`sandbox/`) and Docker containers (`docker/`). A
//! cluster backend (docs/scaling.md) would be one more implementation.

use std::path::PathBuf;
use std::process::Stdio;

use tokio::process::{Child, Command};

use super::WorkerError;
use super::control::ControlServer;

/// How a placement's workers reach the control channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// They dial a WebSocket listener on this address (loopback for host
    /// workers, the workers' network gateway for containers).
    Listen(std::net::IpAddr),
    /// Each is handed its end of a socket at start: nothing listens.
    HandedIn,
}

/// What a new worker needs to reach the gateway.
pub(super) struct Dial<'a> {
    /// The URL it dials (or names in its handshake, when handed a socket).
    pub url: &'a str,
    /// Its one-use token, the first frame it sends.
    pub token: &'a str,
    /// Where a handed-in socket's other end is admitted.
    pub control: &'a ControlServer,
}

/// Starts workers that dial the control channel.
#[async_trait::async_trait]
pub(super) trait Spawner: Send + Sync + 'static {
    /// The engine name results carry (`cpython-host`, `cpython-sandbox`,
    /// `cpython-docker`).
    fn engine(&self) -> &'static str;

    /// One line for logs and `check`.
    fn describe(&self) -> String;

    /// How its workers reach the control channel.
    fn reach(&self) -> Reach;

    /// Starts one worker, bounded, that reaches the gateway as `dial` says.
    async fn spawn(&self, dial: Dial<'_>) -> Result<Box<dyn Launched>, WorkerError>;

    /// Stops every worker still running (gateway exit).
    async fn shutdown(&self) {}

    /// The memory limit of one worker, for the error of a worker killed by it.
    fn memory_limit(&self) -> Option<String> {
        None
    }
}

/// A started worker process or container. Dropping it stops the worker.
#[async_trait::async_trait]
pub(super) trait Launched: Send + Sync {
    /// Resolves when the worker has exited, saying how.
    async fn exited(&mut self) -> Exit;

    /// Whether the worker has exited already.
    fn has_exited(&mut self) -> bool;
}

/// How a worker ended.
#[derive(Debug, Clone)]
pub(super) struct Exit {
    pub description: String,
    /// Killed by SIGKILL: the kernel's OOM killer (the container's memory
    /// limit) or someone outside.
    pub killed: bool,
    /// The Docker engine stopped (and took the container with it).
    pub engine_stopped: bool,
    /// The interpreter died of this signal (not SIGKILL): a crash such as a
    /// segfault or an abort, not an exit the snippet chose.
    pub crash_signal: Option<i32>,
}

/// Workers as host processes: no sandbox (`CODEMCP_FALLBACK=host-unsandboxed`).
pub(super) struct HostSpawner {
    pub python: PathBuf,
    pub bootstrap: &'static str,
}

#[async_trait::async_trait]
impl Spawner for HostSpawner {
    fn engine(&self) -> &'static str {
        super::HOST_ENGINE
    }

    fn describe(&self) -> String {
        format!(
            "cpython on the host ({}): UNSANDBOXED, snippets run as the gateway's user with its files and network; for trusted agents only",
            self.python.display()
        )
    }

    fn reach(&self) -> Reach {
        Reach::Listen(std::net::Ipv4Addr::LOCALHOST.into())
    }

    async fn spawn(&self, dial: Dial<'_>) -> Result<Box<dyn Launched>, WorkerError> {
        let Dial { url, token, .. } = dial;
        let mut command = Command::new(&self.python);
        command
            .args(["-u", "-c", self.bootstrap])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CODEMCP_CONTROL_URL", url)
            .env("CODEMCP_WORKER_TOKEN", token)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if let Some(home) = std::env::var_os("HOME") {
            command.env("HOME", home);
        }
        codemcp_base::process::die_with_parent(&mut command);
        let child = command
            .spawn()
            .map_err(|e| WorkerError::Start(format!("{}: {e}", self.python.display())))?;
        Ok(Box::new(HostProcess(child)))
    }
}

/// `kill_on_drop` stops the process with the worker.
struct HostProcess(Child);

#[async_trait::async_trait]
impl Launched for HostProcess {
    async fn exited(&mut self) -> Exit {
        exit_of(self.0.wait().await, false)
    }

    fn has_exited(&mut self) -> bool {
        !matches!(self.0.try_wait(), Ok(None))
    }
}

/// How a child process ended. With `codes_are_signals` an exit code of
/// 128 + N means death by signal N (bwrap passes its worker's death on so).
pub(super) fn exit_of(
    waited: std::io::Result<std::process::ExitStatus>,
    codes_are_signals: bool,
) -> Exit {
    let status = match waited {
        Ok(status) => status,
        Err(e) => {
            return Exit {
                description: e.to_string(),
                killed: false,
                engine_stopped: false,
                crash_signal: None,
            };
        }
    };
    let signal = std::os::unix::process::ExitStatusExt::signal(&status).or_else(|| {
        status
            .code()
            .filter(|&c| codes_are_signals && (129..160).contains(&c))
            .map(|c| c - 128)
    });
    Exit {
        description: status.to_string(),
        killed: signal == Some(libc::SIGKILL),
        engine_stopped: false,
        crash_signal: signal.filter(|&s| s != libc::SIGKILL),
    }
}
