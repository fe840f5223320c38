//! Which gateway process owns a container (its labels name the host, the
//! pid and the pid's start time), and the removal, at a gateway's start, of
//! the containers of gateways on this host that are gone.

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::ListContainersOptions;

use super::container::remove;
use super::{HOST_LABEL, PID_LABEL, START_LABEL, WORKER_LABEL};

/// This gateway process, as its containers' labels name it.
pub(super) struct GatewayProcess {
    pub(super) host: String,
    pub(super) pid: u32,
    /// The process start time, so a reused pid is not mistaken for us.
    pub(super) start: String,
}

impl GatewayProcess {
    pub(super) fn current() -> Self {
        let pid = std::process::id();
        Self {
            host: hostname(),
            pid,
            start: process_start(pid).unwrap_or_default(),
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Field 22 of `/proc/PID/stat`: start time in clock ticks since boot.
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19).map(str::to_owned)
}

/// Removes worker containers whose gateway (on this host) is gone.
pub(super) async fn reap_stale(docker: &Docker, me: &GatewayProcess) {
    let options = ListContainersOptions {
        all: true,
        filters: Some(HashMap::from([(
            "label".into(),
            vec![WORKER_LABEL.to_owned()],
        )])),
        ..Default::default()
    };
    let Ok(containers) = docker.list_containers(Some(options)).await else {
        return;
    };
    for container in containers {
        let (Some(id), Some(labels)) = (container.id, container.labels) else {
            continue;
        };
        if labels.get(HOST_LABEL) != Some(&me.host) {
            continue;
        }
        let owner_alive = labels
            .get(PID_LABEL)
            .and_then(|p| p.parse::<u32>().ok())
            .and_then(process_start)
            .is_some_and(|start| labels.get(START_LABEL) == Some(&start));
        if !owner_alive {
            tracing::info!(target: "codemcp::worker", container = %id, "removing a worker container left by a gateway that is gone");
            remove(docker, &id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_is_recognised_as_alive() {
        let me = GatewayProcess::current();
        assert!(!me.start.is_empty());
        assert_eq!(process_start(me.pid), Some(me.start));
        assert!(!me.host.is_empty());
    }
}
