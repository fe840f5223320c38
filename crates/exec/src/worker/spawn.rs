//! Where a worker runs: the one "start a worker" abstraction of the engine, and
//! its host-process implementation (`docker.rs` has the container one).

use std::path::PathBuf;
use std::process::Stdio;

use futures::future::BoxFuture;
use tokio::process::{Child, Command};

use super::WorkerError;

/// Starts workers that dial the control channel.
pub(super) trait Spawner: Send + Sync + 'static {
    /// The engine name results carry (`cpython-host`, `cpython-docker`).
    fn engine(&self) -> &'static str;

    /// One line for logs and `check`.
    fn describe(&self) -> String;

    /// Starts one worker that dials `url` and presents `token`.
    fn spawn<'a>(
        &'a self,
        url: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn Launched>, WorkerError>>;

    /// Stops every worker still running (gateway exit).
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// The memory limit of one worker, for the error of a worker killed by it.
    fn memory_limit(&self) -> Option<String> {
        None
    }
}

/// A started worker process or container. Dropping it stops the worker.
pub(super) trait Launched: Send + Sync {
    /// Resolves when the worker has exited, saying how.
    fn exited(&mut self) -> BoxFuture<'_, Exit>;

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

/// Workers as host processes: no sandbox.
pub(super) struct HostSpawner {
    pub python: PathBuf,
    pub bootstrap: &'static str,
}

impl Spawner for HostSpawner {
    fn engine(&self) -> &'static str {
        super::HOST_ENGINE
    }

    fn describe(&self) -> String {
        format!(
            "cpython on the host ({}): NO sandbox, for trusted agents only",
            self.python.display()
        )
    }

    fn spawn<'a>(
        &'a self,
        url: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Box<dyn Launched>, WorkerError>> {
        Box::pin(async move {
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
            crate::process::die_with_parent(&mut command);
            let child = command
                .spawn()
                .map_err(|e| WorkerError::Start(format!("{}: {e}", self.python.display())))?;
            Ok(Box::new(HostProcess(child)) as Box<dyn Launched>)
        })
    }
}

/// `kill_on_drop` stops the process with the worker.
struct HostProcess(Child);

impl Launched for HostProcess {
    fn exited(&mut self) -> BoxFuture<'_, Exit> {
        Box::pin(async move {
            match self.0.wait().await {
                Ok(status) => {
                    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
                    Exit {
                        description: status.to_string(),
                        killed: signal == Some(libc::SIGKILL),
                        engine_stopped: false,
                        crash_signal: signal.filter(|&s| s != libc::SIGKILL),
                    }
                }
                Err(e) => Exit {
                    description: e.to_string(),
                    killed: false,
                    engine_stopped: false,
                    crash_signal: None,
                },
            }
        })
    }

    fn has_exited(&mut self) -> bool {
        !matches!(self.0.try_wait(), Ok(None))
    }
}
