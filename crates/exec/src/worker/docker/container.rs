//! One worker container and the news of its end: how it exited (the memory
//! limit's SIGKILL told from an engine that stopped), and its removal when
//! the worker is dropped.

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as DockerApiError;
use bollard::query_parameters::{RemoveContainerOptions, WaitContainerOptions};
use futures::StreamExt;

use super::super::spawn::{Exit, Launched};

/// One worker container; dropping it kills and removes the container.
pub(super) struct Container {
    docker: Docker,
    pub(super) id: String,
    live: Arc<Mutex<HashSet<String>>>,
    _counted: codemcp_base::metrics::Held,
}

impl Container {
    pub(super) fn new(docker: Docker, id: String, live: Arc<Mutex<HashSet<String>>>) -> Self {
        live.lock().insert(id.clone());
        let _counted = codemcp_base::metrics::container();
        Self {
            docker,
            id,
            live,
            _counted,
        }
    }
}

impl Container {
    /// Starts waiting for the container's end: with `auto_remove`, asking
    /// after it ended may find it gone, and its exit code with it.
    pub(super) fn watch_exit(self) -> Watched {
        let (tx, rx) = tokio::sync::watch::channel(None);
        let docker = self.docker.clone();
        let id = self.id.clone();
        tokio::spawn(async move {
            // Registered before the start, so wait for the next exit, not "not running".
            let options = WaitContainerOptions {
                condition: "next-exit".into(),
            };
            let mut exit = match docker.wait_container(&id, Some(options)).next().await {
                Some(Ok(done)) => code_exit(done.status_code),
                Some(Err(DockerApiError::DockerContainerWaitError { code, .. })) => code_exit(code),
                Some(Err(e @ DockerApiError::DockerResponseServerError { .. })) => Exit {
                    description: e.to_string(),
                    killed: false,
                    engine_stopped: false,
                    crash_signal: None,
                },
                // The connection to the engine broke: it stopped.
                Some(Err(e)) => Exit {
                    description: e.to_string(),
                    killed: false,
                    engine_stopped: true,
                    crash_signal: None,
                },
                None => Exit {
                    description: "the container stopped".into(),
                    killed: false,
                    engine_stopped: false,
                    crash_signal: None,
                },
            };
            // A stopping engine kills its containers: that SIGKILL is not the
            // memory limit's.
            if exit.killed && !answers(&docker).await {
                exit.killed = false;
                exit.engine_stopped = true;
            }
            let _ = tx.send(Some(exit));
        });
        Watched {
            container: self,
            exit: rx,
        }
    }
}

fn code_exit(code: i64) -> Exit {
    Exit {
        description: format!("exit code {code}"),
        // 128 + SIGKILL
        killed: code == 137,
        engine_stopped: false,
        // The engine reports a death by signal N as 128 + N.
        crash_signal: i32::try_from(code - 128)
            .ok()
            .filter(|&s| (1..32).contains(&s) && s != libc::SIGKILL),
    }
}

/// Whether the engine still answers, within a second.
async fn answers(docker: &Docker) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(1), docker.ping()).await,
        Ok(Ok(_))
    )
}

/// A container and the news of its end.
pub(super) struct Watched {
    /// Held so the container is removed when the worker is dropped.
    pub(super) container: Container,
    exit: tokio::sync::watch::Receiver<Option<Exit>>,
}

#[async_trait::async_trait]
impl Launched for Watched {
    async fn exited(&mut self) -> Exit {
        match self.exit.wait_for(Option::is_some).await {
            Ok(exit) => exit.clone().unwrap_or_else(unknown_exit),
            Err(_) => unknown_exit(),
        }
    }

    fn has_exited(&mut self) -> bool {
        self.exit.borrow().is_some()
    }
}

fn unknown_exit() -> Exit {
    Exit {
        description: "the container is gone".into(),
        killed: false,
        engine_stopped: false,
        crash_signal: None,
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let tracked = self.live.lock().remove(&self.id);
        if !tracked {
            return; // shutdown() already removed it
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let docker = self.docker.clone();
            let id = std::mem::take(&mut self.id);
            runtime.spawn(async move { remove(&docker, &id).await });
        }
    }
}

/// Kills and removes a container; one that is already gone is fine.
pub(super) async fn remove(docker: &Docker, id: &str) {
    let options = RemoveContainerOptions {
        force: true,
        ..Default::default()
    };
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => {}
        Err(DockerApiError::DockerResponseServerError {
            status_code: 404 | 409,
            ..
        }) => {}
        Err(e) => {
            tracing::warn!(target: "codemcp::worker", container = %id, error = %e, "could not remove a worker container");
        }
    }
}
