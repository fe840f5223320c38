//! The tests that need a Docker engine: the Docker placement of the CPython
//! worker (`container`: escalation into a container, the container's lockdown,
//! limits that kill a worker without hurting the gateway, the container
//! lifecycle), an engine that hangs or stops under a running gateway
//! (`engine_faults`), and what the binary provisions itself (`worker_image`:
//! the worker image, and the Monty pool worker from an empty HOME).
//!
//! The engine-stop test stops the machine's shared engine, so it is ignored by
//! default; scripts/test.sh runs it alone after every other Docker test:
//! `cargo test --ignore-rust-version --test docker -- --ignored --test-threads=1`.
//!
//! Needs a Docker engine and the worker image (`sudo scripts/docker-engine.sh`,
//! `scripts/build-worker-image.sh`). Without them each test prints why and
//! passes, except with `CI=true`, where a missing engine fails. Network probes
//! aim only at loopback and at the gateway's own worker network.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

/// The parts of `tests/support/` these tests use (`mod x` here is
/// `tests/support/x.rs`).
#[path = "../support"]
mod support {
    mod setup;
    pub use setup::*;
    mod everything;
    pub use everything::*;
    mod results;
    pub use results::*;
    mod stdio;
    pub use stdio::*;
    mod http_client;
    pub use http_client::*;
    mod docker;
    pub use docker::*;
}

mod container;
mod engine_faults;
mod worker_image;

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::ListContainersOptions;

const DOCKER_ONLY: &[(&str, &str)] = &[("CODEMCP_ISOLATION", "DOCKER")];

fn image() -> String {
    support::docker_image()
}

/// The engine, or `None` (test skipped) when it or the image is missing.
async fn docker() -> Option<Docker> {
    support::docker_or_skip().await
}

/// The worker containers a gateway process started.
async fn containers_of(docker: &Docker, gateway_pid: u32) -> Vec<String> {
    let options = ListContainersOptions {
        all: true,
        filters: Some(HashMap::from([(
            "label".to_owned(),
            vec![format!("codemcp.gateway.pid={gateway_pid}")],
        )])),
        ..Default::default()
    };
    docker
        .list_containers(Some(options))
        .await
        .expect("list containers")
        .into_iter()
        .filter_map(|c| c.id)
        .collect()
}
