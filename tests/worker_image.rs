//! The worker image the binary builds itself (`codemcp setup docker`): a
//! tampered download is refused and makes no image; a build from the cached
//! pinned files makes an image the gateway escalates into, with the labels
//! `codemcp check` and the gateway read.
//!
//! Needs a Docker engine (`sudo scripts/docker-engine.sh`); without one each
//! test prints why and passes, except with `CI=true`. The build test needs
//! the recipe's downloads in the cache (`scripts/build-worker-image.sh` fills
//! it), so it never leaves loopback.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

mod support;

use std::time::{Duration, Instant};

use codemcp_image::Sources;
use codemcp_image::docker::cached_downloads;
use serde_json::json;
use support::Setup;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Runs `codemcp ARGS` with `env`; (success, stderr + stdout, time taken).
async fn codemcp(setup: &Setup, env: &[(&str, &str)], args: &[&str]) -> (bool, String, Duration) {
    let started = Instant::now();
    let output = tokio::process::Command::new(support::bin())
        .arg("--config")
        .arg(setup.config())
        .args(args)
        .env("CODEMCP_MONTY_BIN", support::monty_bin())
        .envs(env.iter().copied())
        .output()
        .await
        .expect("run codemcp");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    (output.status.success(), text, started.elapsed())
}

/// Fault injection: a "mirror" on loopback that answers every request with
/// 200 and bytes that are not the pinned file (shorter than any pin, so only
/// the digest check can catch them).
async fn tampering_mirror() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let body = vec![b'x'; 4096];
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    url
}

#[tokio::test]
async fn a_tampered_download_is_refused_and_makes_no_image() {
    let Some(docker) = support::docker_or_skip().await else {
        return;
    };
    let setup = Setup::new(json!({}));
    let mirror = tampering_mirror().await;
    let cache = setup.dir.path().join("cache");
    let image = "codemcp-test-tampered:0";
    let (ok, text, _) = codemcp(
        &setup,
        &[
            ("CODEMCP_DOCKER_IMAGE", image),
            ("CODEMCP_DEBIAN_MIRROR", &mirror),
            ("CODEMCP_PYPI_FILES", &mirror),
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ],
        &["setup", "docker"],
    )
    .await;
    assert!(!ok, "{text}");
    assert!(
        text.contains("SHA-256") && text.contains("refused") && text.contains(&mirror),
        "{text}"
    );
    assert!(
        docker.inspect_image(image).await.is_err(),
        "an image was made"
    );
    // Nothing the mirror sent was kept.
    let kept = std::fs::read_dir(cache.join("codemcp/worker-image"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".deb"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(kept, 0);
}

#[tokio::test]
async fn setup_docker_builds_the_image_the_gateway_escalates_into() {
    let Some(docker) = support::docker_or_skip().await else {
        return;
    };
    let (cached, total) = cached_downloads(&Sources::default());
    if cached < total {
        eprintln!(
            "SKIPPED: {cached} of {total} pinned downloads cached; scripts/build-worker-image.sh fills the cache (this test stays on loopback)"
        );
        return;
    }
    let setup = Setup::new(json!({}));
    let image = "codemcp-worker:selftest";
    let _ = docker
        .remove_image(
            image,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
    let env = [("CODEMCP_DOCKER_IMAGE", image), ("CODEMCP_LOG", "warn")];
    let (ok, text, built_in) = codemcp(&setup, &env, &["setup", "docker"]).await;
    assert!(ok, "{text}");
    assert!(text.contains(&format!("built {image}")), "{text}");
    let (ok, text, _) = codemcp(&setup, &env, &["setup", "docker"]).await;
    assert!(ok && text.contains("is up to date"), "{text}");
    let (_, text, _) = codemcp(&setup, &env, &["check"]).await;
    assert!(
        text.contains("current: this binary's recipe and worker code"),
        "{text}"
    );

    // The gateway's own escalation: every run in a container of this image.
    let probe = "import os, sys, websockets\nprint(os.getuid(), sys.version.split()[0], websockets.__version__, os.access('/opt/codemcp/bootstrap.py', os.W_OK), os.access('/', os.W_OK))";
    let docker_env = [
        ("CODEMCP_DOCKER_IMAGE", image),
        ("CODEMCP_ISOLATION", "DOCKER"),
        ("CODEMCP_LOG", "warn"),
    ];
    let (ok, text, first_run) = codemcp(&setup, &docker_env, &["exec", probe]).await;
    assert!(ok, "{text}");
    assert!(text.contains("65534 3.14.8 17.4 False False"), "{text}");

    // The labels the former script wrote, so either builder's image is accepted.
    let labels = docker
        .inspect_image(image)
        .await
        .unwrap()
        .config
        .and_then(|c| c.labels)
        .unwrap_or_default();
    for label in [
        "codemcp.bootstrap.sha256",
        "codemcp.recipe.sha256",
        "codemcp.python",
        "codemcp.websockets",
        "codemcp.debs",
    ] {
        assert!(labels.contains_key(label), "{label} missing: {labels:?}");
    }
    assert_eq!(labels["codemcp.python"], "3.14.8");
    assert!(labels["codemcp.debs"].contains("python3.14-minimal=3.14.8-1"));
    eprintln!(
        "worker image built in {:.1} s; `codemcp exec` with every run in it: {:.1} s",
        built_in.as_secs_f64(),
        first_run.as_secs_f64()
    );
    let _ = docker
        .remove_image(
            image,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await;
}
