//! `codemcp serve --http` on a free loopback port.

use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use super::{DESCRIPTION_BUDGET, STARTUP_WAIT_MS, Setup, bin, monty_bin};

/// A running `codemcp serve --http 127.0.0.1:0` and its URL.
pub struct HttpGateway {
    pub child: tokio::process::Child,
    pub url: String,
    pub(super) _setup: Setup,
}

pub async fn start_http(servers: serde_json::Value, env: &[(&str, &str)]) -> HttpGateway {
    let setup = Setup::new(servers);
    let mut child = tokio::process::Command::new(bin())
        .arg("--config")
        .arg(setup.config())
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("CODEMCP_MONTY_BIN", monty_bin())
        .env("CODEMCP_FALLBACK", "none")
        // Sessions (file store, key file) in the test's own directory.
        .env("XDG_STATE_HOME", setup.dir.path().join("state"))
        .env("CODEMCP_STARTUP_WAIT_MS", STARTUP_WAIT_MS)
        .env("CODEMCP_DESCRIPTION_BUDGET", DESCRIPTION_BUDGET)
        .envs(env.iter().copied())
        .env("CODEMCP_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn codemcp serve --http");
    let url = serving_url(&mut child).await;
    HttpGateway {
        child,
        url,
        _setup: setup,
    }
}

/// The URL a `codemcp serve --http` started with its stderr piped says it
/// serves, read from that stderr; the rest of it is drained in the
/// background so the gateway never blocks on a full pipe.
pub async fn serving_url(child: &mut tokio::process::Child) -> String {
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("serving MCP on ").nth(1) {
                return rest.trim().to_owned();
            }
        }
        panic!("codemcp exited before serving HTTP");
    })
    .await
    .expect("codemcp serves HTTP within 60 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    url
}
