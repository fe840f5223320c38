//! Pool placement (the default for `serve --http`) with nothing installed but
//! codemcp: the binary is its own Monty worker, and a worker built from
//! another Monty is refused before it can serve a session.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use support::{Setup, bin};
use tokio::io::AsyncBufReadExt;

/// How `codemcp serve --http` ended up: serving at a URL, or exited with its stderr.
enum Started {
    Serving(tokio::process::Child, String),
    Exited(String),
}

/// `codemcp serve --http` in pool placement with `env`, and with `remove` unset.
async fn serve(setup: &Setup, env: &[(&str, &str)], remove: &[&str]) -> Started {
    let mut command = tokio::process::Command::new(bin());
    command
        .arg("--config")
        .arg(setup.config())
        .args(["serve", "--http", "127.0.0.1:0"]);
    for var in remove {
        command.env_remove(var);
    }
    let mut child = command
        .env_remove("CODEMCP_MONTY")
        .env("CODEMCP_FALLBACK", "none")
        .env("XDG_STATE_HOME", setup.dir.path().join("state"))
        .envs(env.iter().copied())
        .env("CODEMCP_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn codemcp serve --http");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut said = String::new();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("serving MCP on ").nth(1) {
                return Some(rest.trim().to_owned());
            }
            said.push_str(&line);
            said.push('\n');
        }
        None
    })
    .await
    .expect("codemcp serves or exits within 60 s");
    match url {
        Some(url) => {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            Started::Serving(child, url)
        }
        None => Started::Exited(said),
    }
}

/// A stand-in worker that says it was built from Monty `version` and is the
/// real worker otherwise.
fn worker_saying(dir: &Path, version: &str) -> String {
    let path = dir.join(format!("monty-{version}"));
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'monty-runtime {version}'; exit 0; fi\nexec '{}' \"$@\"\n",
        support::monty_bin().display()
    );
    std::fs::write(&path, script).expect("write worker script");
    let mut mode = std::fs::metadata(&path).expect("metadata").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&path, mode).expect("chmod");
    path.to_str().expect("utf-8 path").to_owned()
}

#[tokio::test]
async fn worker_of_another_monty_version_is_refused() {
    let setup = Setup::new(json!({}));
    let other = worker_saying(setup.dir.path(), "1.3.0");
    match serve(&setup, &[("CODEMCP_MONTY_BIN", &other)], &[]).await {
        Started::Serving(_, url) => panic!("a Monty 1.3.0 worker was accepted; serving {url}"),
        Started::Exited(said) => {
            assert!(said.contains("built from Monty 1.3.0"), "{said}");
            assert!(said.contains("from Monty 1.4.0"), "{said}");
            assert!(said.contains(&other), "{said}");
        }
    }
    // The same worker saying the gateway's own version serves: it is the version that is refused.
    let same = worker_saying(setup.dir.path(), "1.4.0");
    let Started::Serving(_gateway, url) = serve(&setup, &[("CODEMCP_MONTY_BIN", &same)], &[]).await
    else {
        panic!("a worker of the same Monty was refused");
    };
    let client = support::http_connect(&url).await;
    let ran = support::http_exec(&client, "6 * 7").await;
    assert_eq!(ran.result(), 42, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "monty-pool", "{}", ran.text);
}

#[tokio::test]
async fn check_names_the_worker_and_its_monty_version() {
    let setup = Setup::new(json!({}));
    let worker = support::monty_bin();
    let output = tokio::process::Command::new(bin())
        .arg("--config")
        .arg(setup.config())
        .arg("check")
        .env("CODEMCP_MONTY_BIN", &worker)
        .env("CODEMCP_FALLBACK", "none")
        .env("XDG_STATE_HOME", setup.dir.path().join("state"))
        .output()
        .await
        .expect("codemcp check");
    let out = String::from_utf8_lossy(&output.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("monty worker:"))
        .unwrap_or_else(|| panic!("no worker line in {out}"));
    assert!(line.contains("Monty 1.4.0 (usable)"), "{line}");
}

/// Nothing but codemcp: no `CODEMCP_MONTY_BIN`, no `monty` on `PATH`, an
/// empty home; the HTTP gateway still runs every session in a worker, and the
/// worker is codemcp itself.
#[cfg(feature = "self-worker")]
#[tokio::test]
async fn http_gateway_serves_with_no_separate_worker_installed() {
    let setup = Setup::new(json!({}));
    let home = setup.dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let env = [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", home.to_str().expect("utf-8 path")),
    ];
    let Started::Serving(gateway, url) = serve(&setup, &env, &["CODEMCP_MONTY_BIN"]).await else {
        panic!("the HTTP gateway did not start without a separate worker");
    };
    let client = support::http_connect(&url).await;
    let ran = support::http_exec(&client, "x = sum(range(10))\nx").await;
    assert_eq!(ran.result(), 45, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "monty-pool", "{}", ran.text);
    let this = std::fs::canonicalize(bin()).expect("codemcp path");
    let gateway_pid = gateway.id().expect("pid");
    let workers: Vec<u32> = children(gateway_pid)
        .into_iter()
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe"))
                .ok()
                .as_deref()
                == Some(&this)
        })
        .collect();
    assert!(
        !workers.is_empty(),
        "no worker of {gateway_pid} runs {}",
        this.display()
    );
    // The session keeps its state in its worker between calls.
    let ran = support::http_exec(&client, "x + 1").await;
    assert_eq!(ran.result(), 46, "{}", ran.text);
    let check = tokio::process::Command::new(bin())
        .arg("--config")
        .arg(setup.config())
        .arg("check")
        .env_remove("CODEMCP_MONTY_BIN")
        .env("CODEMCP_FALLBACK", "none")
        .envs(env)
        .output()
        .await
        .expect("codemcp check");
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(
        out.contains("monty worker: codemcp itself") && out.contains("Monty 1.4.0 (usable)"),
        "{out}"
    );
}

#[cfg(feature = "self-worker")]
fn children(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after_name = stat.rsplit(')').next().unwrap_or_default();
            after_name
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse().ok())
                == Some(parent)
        })
        .collect()
}
