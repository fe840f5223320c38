//! The Docker engine and the worker image, for the tests of the Docker
//! placement: present, or the test is skipped with the reason.

use std::time::Duration;

/// The worker image the Docker tests use.
pub fn docker_image() -> String {
    std::env::var("CODEMCP_DOCKER_IMAGE").unwrap_or_else(|_| "codemcp-worker:2".to_owned())
}

/// The Docker engine when it answers (within 5 s) and the worker image exists;
/// else why not.
pub async fn docker_engine() -> Result<bollard::Docker, String> {
    let docker =
        bollard::Docker::connect_with_defaults().map_err(|e| format!("no Docker engine ({e})"))?;
    let docker = tokio::time::timeout(Duration::from_secs(5), docker.negotiate_version())
        .await
        .map_err(|_| "the Docker engine did not answer within 5 s".to_owned())?
        .map_err(|e| format!("no Docker engine answers ({e})"))?;
    docker
        .inspect_image(&docker_image())
        .await
        .map_err(|e| format!("the worker image {} is missing ({e})", docker_image()))?;
    Ok(docker)
}

/// The engine for a Docker-backed test, or `None` (the test is skipped, with
/// the reason printed). With `CI=true` a missing engine or image fails instead.
pub async fn docker_or_skip() -> Option<bollard::Docker> {
    match docker_engine().await {
        Ok(docker) => Some(docker),
        Err(reason) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true requires the Docker tests, but {reason}; .ci/run runs scripts/docker-engine.sh and scripts/build-worker-image.sh first"
            );
            eprintln!(
                "SKIPPED: {reason}; to run these tests: sudo scripts/docker-engine.sh && scripts/build-worker-image.sh"
            );
            None
        }
    }
}
