//! What only the integration suite looks at in a gateway: tokens made with
//! `codemcp token`, a gateway whose log is kept, its `/metrics`, its config
//! file, its tool description, change and progress notifications and peak
//! memory, and the kind of a run's error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use super::{Client, HttpGateway, Ran, STARTUP_WAIT_MS, Setup, bin, init_tls, monty_bin};

/// `codemcp token ACTION NAME` on the principals file `tokens`; its stdout
/// (for `add`, the new token).
pub fn token(tokens: &Path, action: &str, name: &str) -> String {
    let output = std::process::Command::new(bin())
        .args(["token", action, name])
        .env("CODEMCP_HTTP_TOKENS", tokens)
        .output()
        .expect("run codemcp token");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

impl HttpGateway {
    /// The config file the gateway was started with.
    pub fn config(&self) -> PathBuf {
        self._setup.config()
    }
}

impl Ran {
    pub fn error_kind(&self) -> &str {
        self.structured["error"]["kind"]
            .as_str()
            .unwrap_or_default()
    }
}

impl Client {
    pub async fn description(&self) -> String {
        let tools = self.service.list_all_tools().await.expect("tools/list");
        assert_eq!(tools.len(), 1, "exactly one tool");
        tools[0]
            .description
            .as_deref()
            .unwrap_or_default()
            .to_owned()
    }

    pub async fn wait_changed(&self, within: Duration) -> bool {
        tokio::time::timeout(within, self.service.service().changed.notified())
            .await
            .is_ok()
    }

    /// Peak resident memory of the gateway process, from /proc.
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid?)).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// The `progress` values of the progress notifications received so far.
    pub fn progress(&self) -> Vec<f64> {
        self.service
            .service()
            .progress
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default()
    }
}

/// `GET /metrics` of the gateway serving `mcp_url`, parsed: each sample
/// (`name{labels}`) and its value. `token`: the bearer token, if any.
pub async fn scrape_metrics(
    mcp_url: &str,
    token: Option<&str>,
) -> std::collections::HashMap<String, f64> {
    init_tls();
    let url = format!("{}/metrics", mcp_url.trim_end_matches("/mcp"));
    let mut request = reqwest::Client::new().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("GET /metrics on loopback");
    assert_eq!(response.status().as_u16(), 200, "GET /metrics");
    let text = response.text().await.expect("metrics text");
    assert!(text.ends_with("# EOF\n"), "not OpenMetrics text: {text}");
    let sample = regex::Regex::new(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)")
        .expect("a valid pattern");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let caps = sample.captures(line)?;
            Some((caps[1].to_owned(), caps[2].parse().ok()?))
        })
        .collect()
}

/// `codemcp serve --http` on a free loopback port with its own state directory
/// (`XDG_STATE_HOME`), the `cleared` settings unset whatever the caller's
/// environment, and its stderr kept for failure messages.
pub struct LoggedGateway {
    pub child: tokio::process::Child,
    pub url: String,
    /// Its stderr so far (the first 2,000 lines).
    pub log: Arc<std::sync::Mutex<Vec<String>>>,
    _setup: Setup,
}

pub async fn serve_http_logged(
    setup: Setup,
    state: &Path,
    cleared: &[&str],
    env: &[(&str, &str)],
) -> LoggedGateway {
    let mut command = tokio::process::Command::new(bin());
    command
        .arg("--config")
        .arg(setup.config())
        .args(["serve", "--http", "127.0.0.1:0"]);
    for var in cleared {
        command.env_remove(var);
    }
    let mut child = command
        .env("XDG_STATE_HOME", state)
        .env("CODEMCP_MONTY_BIN", monty_bin())
        .env("CODEMCP_FALLBACK", "none")
        .env("CODEMCP_STARTUP_WAIT_MS", STARTUP_WAIT_MS)
        .envs(env.iter().copied())
        .env("CODEMCP_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn codemcp serve --http");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let url = tokio::time::timeout(Duration::from_secs(90), async {
        while let Ok(Some(line)) = lines.next_line().await {
            let url = line
                .split("serving MCP on ")
                .nth(1)
                .map(|u| u.trim().to_owned());
            log.lock().unwrap().push(line);
            if let Some(url) = url {
                return url;
            }
        }
        panic!(
            "codemcp exited before serving HTTP: {:?}",
            log.lock().unwrap()
        );
    })
    .await
    .expect("codemcp serves HTTP within 90 s");
    let sink = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut sink = sink.lock().unwrap();
            if sink.len() < 2000 {
                sink.push(line);
            }
        }
    });
    LoggedGateway {
        child,
        url,
        log,
        _setup: setup,
    }
}

impl LoggedGateway {
    /// `kill -9`, and wait until it is gone.
    pub async fn kill9(mut self) {
        self.child.start_kill().expect("SIGKILL");
        let _ = self.child.wait().await;
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}
