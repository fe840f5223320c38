//! What the binary provisions itself. The worker image (`codemcp setup
//! docker`): a tampered download is refused and makes no image; a build from
//! the cached pinned files makes an image the gateway escalates into, with
//! the labels `codemcp check` and the gateway read. The Monty pool worker: a
//! gateway with an empty HOME and no worker provisions the pinned one on its
//! first `serve --http` and answers a run on `monty-pool`.
//!
//! The image tests need a Docker engine (`sudo scripts/docker-engine.sh`);
//! without one each prints why and passes, except with `CI=true`. The build
//! and provisioning tests need the pinned downloads in the cache (a `codemcp
//! setup docker` / `codemcp setup pool` fills it) and serve them from
//! loopback, so they never leave the machine.

use std::time::{Duration, Instant};

use crate::support::{self, Setup};
use codemcp_exec::monty::pool::worker_binary;
use codemcp_image::docker::cached_downloads;
use codemcp_image::{Sources, cache_dir, fetch, monty_worker, recipe};
use serde_json::json;
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
    files_host(None, vec![b'x'; 4096]).await
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

/// A files host on loopback serving `body` at `path` (404 elsewhere), or at
/// every path when `path` is `None`.
async fn files_host(path: Option<String>, body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let body = std::sync::Arc::new(body);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (path, body) = (path.clone(), body.clone());
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let asked = String::from_utf8_lossy(&request)
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let (status, body): (&str, &[u8]) = if path.as_ref().is_none_or(|p| *p == asked) {
                    ("200 OK", &body)
                } else {
                    ("404 Not Found", b"")
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body).await;
            });
        }
    });
    url
}

/// `codemcp serve --http` with nothing but HOME, PATH and the files host:
/// (the child, its URL, the time it took to serve, its stderr so far).
async fn serve_from_empty_home(
    setup: &Setup,
    home: &std::path::Path,
    files: &str,
    path: &str,
) -> (tokio::process::Child, String, Duration, String) {
    use tokio::io::AsyncBufReadExt;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(support::bin())
        .arg("--config")
        .arg(setup.config())
        .args(["serve", "--http", "127.0.0.1:0"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("CODEMCP_PYPI_FILES", files)
        .env("CODEMCP_FALLBACK", "none")
        .env("CODEMCP_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let url = tokio::time::timeout(Duration::from_secs(120), async {
        while let Ok(Some(line)) = lines.next_line().await {
            log.push_str(&line);
            log.push('\n');
            if let Some(rest) = line.split("serving MCP on ").nth(1) {
                return Some(rest.trim().to_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| panic!("codemcp did not serve HTTP:\n{log}"));
    let took = started.elapsed();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url, took, log)
}

#[tokio::test]
async fn serve_http_from_an_empty_home_provisions_the_pinned_monty_worker_and_runs_on_the_pool() {
    if cfg!(feature = "self-worker") {
        eprintln!("SKIPPED: this build is its own Monty worker");
        return;
    }
    let line = worker_binary::version_line();
    let monty = worker_binary::monty_version_in(line).unwrap();
    let pin = monty_worker::pin(monty).expect("the linked Monty's worker is pinned");
    let item = recipe::wheel_download(pin, &Sources::default());
    let Ok(wheel) = std::fs::read(fetch::cached_path(&cache_dir(), &item)) else {
        eprintln!(
            "SKIPPED: {} is not in {} (`codemcp setup pool` puts it there; this test stays on loopback)",
            item.name,
            cache_dir().display()
        );
        return;
    };
    let files = files_host(Some(format!("/{}", pin.path)), wheel).await;
    let setup = Setup::new(json!({}));
    let home = tempfile::tempdir().unwrap();
    // On PATH only a `monty` of another Monty, which must be passed over
    // (nothing is beside the test's codemcp).
    let other = setup.dir.path().join("other-monty");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("monty"),
        "#!/bin/sh\necho 'monty-runtime 1.3.0'\n",
    )
    .unwrap();
    std::fs::set_permissions(
        other.join("monty"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!("{}:/usr/bin:/bin", other.display());
    let (mut child, url, cold, log) =
        serve_from_empty_home(&setup, home.path(), &files, &path).await;
    assert!(
        log.contains("passing over a Monty worker of another Monty"),
        "{log}"
    );
    assert!(log.contains("provisioning the Monty pool worker"), "{log}");
    let worker = monty_worker::home(&home.path().join(".local/share/codemcp"), pin).join("monty");
    assert!(worker.is_file(), "{log}");
    let client = support::http_connect(&url).await;
    let ran = support::http_exec(&client, "x = 6 * 7\nprint('hello')\nx").await;
    assert_eq!(ran.structured["engine"], "monty-pool", "{ran:?}");
    assert_eq!(ran.result(), &json!(42), "{ran:?}");
    assert_eq!(ran.stdout(), "hello\n");
    drop(client);
    let _ = child.kill().await;
    // The second start reuses the provisioned worker: nothing to download
    // (the files host is gone too).
    let (mut child, url, warm, log) =
        serve_from_empty_home(&setup, home.path(), "http://127.0.0.1:9", "/usr/bin:/bin").await;
    assert!(!log.contains("provisioning"), "{log}");
    let client = support::http_connect(&url).await;
    let ran = support::http_exec(&client, "1 + 1").await;
    assert_eq!(ran.structured["engine"], "monty-pool", "{ran:?}");
    drop(client);
    let _ = child.kill().await;
    eprintln!(
        "serve --http from an empty HOME: {:.1} s to serve with provisioning, {:.1} s with the worker provisioned",
        cold.as_secs_f64(),
        warm.as_secs_f64()
    );
}

#[tokio::test]
async fn serve_http_without_a_worker_offline_fails_at_once_naming_the_fixes() {
    if cfg!(feature = "self-worker") {
        eprintln!("SKIPPED: this build is its own Monty worker");
        return;
    }
    let setup = Setup::new(json!({}));
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = tokio::process::Command::new(support::bin())
        .arg("--config")
        .arg(setup.config())
        .args(["serve", "--http", "127.0.0.1:0"])
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        // A port nothing listens on: as offline as a test may be.
        .env("CODEMCP_PYPI_FILES", "http://127.0.0.1:9")
        .env("CODEMCP_FALLBACK", "none")
        .env("CODEMCP_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    let last = stderr.lines().last().unwrap_or_default();
    for fix in ["codemcp setup pool", "CODEMCP_MONTY_BIN", "self-worker"] {
        assert!(last.contains(fix), "{fix} not named in {last:?}");
    }
    // Nothing half-provisioned.
    let parent = home.path().join(".local/share/codemcp/monty-worker");
    assert!(
        !parent.exists() || std::fs::read_dir(&parent).unwrap().count() == 0,
        "{:?}",
        std::fs::read_dir(&parent).map(|d| d.count())
    );
}
