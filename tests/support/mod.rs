//! Shared pieces of the integration tests: real upstream peers, a config file
//! that names them, and the codemcp binary driven by a real MCP client (rmcp).
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Notify;

pub mod peers;
pub mod redis;

/// reqwest is built without a default TLS provider; install ring once.
pub fn init_tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// How long a test gateway's first call waits for its upstreams: far more
/// than the default 5 s, since a loaded 2-core machine starting several
/// gateways with Python and Node peers at once can take that long; tests
/// of the wait itself set their own.
pub const STARTUP_WAIT_MS: &str = "60000";

/// Room for every signature of a test catalog: tests find a tool's function in the
/// description (the default, 2,048, shows the servers and only the first signatures).
pub const DESCRIPTION_BUDGET: &str = "8000";

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codemcp"))
}

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

fn dep(var: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(var).map_or_else(|| repo().join(default), PathBuf::from);
    assert!(
        path.exists(),
        "{} is missing: run scripts/test.sh (or scripts/test-deps.sh) to install the test peers",
        path.display()
    );
    path
}

pub fn node_modules() -> PathBuf {
    dep("CODEMCP_TEST_NODE_MODULES", ".deps/node/node_modules")
}

/// Node 22 and the official conformance suite's entry point, from the pinned
/// test peers (`tests/integration/conformance.rs` runs its server scenarios, `tests/integration/oauth.rs`
/// its client auth scenarios).
pub fn conformance_suite() -> (PathBuf, PathBuf) {
    let modules = node_modules();
    let node = std::env::var_os("CODEMCP_TEST_NODE22")
        .map_or_else(|| modules.join(".bin/node"), PathBuf::from);
    let cli = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "node 22 or the conformance suite is missing: run scripts/test-deps.sh"
    );
    (node, cli)
}

/// Python with `mcp` 2.x (also runs our FastMCP test server).
pub fn python2() -> PathBuf {
    dep("CODEMCP_TEST_PY2", ".deps/py2/bin/python")
}

/// Python with `mcp` 1.x.
pub fn python1() -> PathBuf {
    dep("CODEMCP_TEST_PY1", ".deps/py1/bin/python")
}

/// The worker binary for pool mode: `CODEMCP_MONTY_BIN` when set (the PyPI
/// worker, scripts/install-monty-worker.sh), else codemcp itself when it is
/// built as its own worker (feature `self-worker`).
pub fn monty_bin() -> PathBuf {
    if cfg!(feature = "self-worker") && std::env::var_os("CODEMCP_MONTY_BIN").is_none() {
        return bin();
    }
    dep("CODEMCP_MONTY_BIN", ".deps/monty-runtime/bin/monty")
}

/// A CPython with `websockets` for host workers (scripts/install-worker-python.sh).
pub fn worker_python() -> PathBuf {
    dep("CODEMCP_PYTHON", ".deps/worker-python/bin/python")
}

/// Upstream entries for the config file.
pub fn everything() -> Value {
    let script = node_modules().join("@modelcontextprotocol/server-everything/dist/index.js");
    json!({"command": "node", "args": [script, "stdio"]})
}

pub fn filesystem(root: &Path) -> Value {
    let script = node_modules().join("@modelcontextprotocol/server-filesystem/dist/index.js");
    json!({"command": "node", "args": [script, root]})
}

pub fn memory(file: &Path) -> Value {
    let script = node_modules().join("@modelcontextprotocol/server-memory/dist/index.js");
    json!({"command": "node", "args": [script], "env": {"MEMORY_FILE_PATH": file}})
}

pub fn odd(extra_env: Value) -> Value {
    let mut env = json!({"ODD_LOG_LEVEL": "WARNING"});
    if let (Some(env), Some(extra)) = (env.as_object_mut(), extra_env.as_object()) {
        env.extend(extra.clone());
    }
    json!({"command": python2(), "args": [repo().join("tests/servers/odd_server.py")], "env": env})
}

/// A temp dir holding `mcp.json` with the given servers.
pub struct Setup {
    pub dir: tempfile::TempDir,
}

impl Setup {
    pub fn new(servers: Value) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = json!({"mcpServers": servers});
        std::fs::write(dir.path().join("mcp.json"), config.to_string()).expect("write config");
        Self { dir }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("mcp.json")
    }

    /// Starts `codemcp` over stdio with extra environment variables.
    pub async fn stdio(&self, env: &[(&str, &str)]) -> Client {
        let watcher = Watcher::default();
        let changed = watcher.changed.clone();
        let progress = watcher.progress.clone();
        let config = self.config();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let command = tokio::process::Command::new(bin()).configure(|c| {
            c.arg("--config")
                .arg(&config)
                .env("CODEMCP_MONTY_BIN", monty_bin())
                .env("CODEMCP_PYTHON", worker_python())
                // Monty-only verdicts unless a test asks for a fallback.
                .env("CODEMCP_FALLBACK", "none")
                .env("CODEMCP_STARTUP_WAIT_MS", STARTUP_WAIT_MS)
                .env("CODEMCP_DESCRIPTION_BUDGET", DESCRIPTION_BUDGET)
                // Remembered catalogs (and other state) per test, not in $HOME.
                .env("XDG_STATE_HOME", config.with_file_name("state"))
                .envs(env)
                .env("CODEMCP_LOG", "warn");
        });
        let transport = TokioChildProcess::new(command).expect("spawn codemcp");
        let pid = transport.id();
        let service = watcher
            .serve(transport)
            .await
            .expect("MCP handshake with codemcp");
        Client {
            service,
            changed,
            progress,
            pid,
        }
    }
}

/// Our test client: records `notifications/tools/list_changed` and progress.
#[derive(Clone, Default)]
pub struct Watcher {
    pub changed: Arc<Notify>,
    pub progress: Arc<std::sync::Mutex<Vec<f64>>>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(params.progress);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("codemcp-tests", "0"),
        )
    }
}

pub struct Client {
    pub service: RunningService<RoleClient, Watcher>,
    pub changed: Arc<Notify>,
    /// `progress` values of the progress notifications received.
    pub progress: Arc<std::sync::Mutex<Vec<f64>>>,
    pub pid: Option<u32>,
}

/// One `execute_python` result, unpacked.
#[derive(Debug)]
pub struct Ran {
    pub text: String,
    pub structured: Value,
    pub is_error: bool,
}

impl Ran {
    pub fn result(&self) -> &Value {
        &self.structured["result"]
    }

    pub fn stdout(&self) -> &str {
        self.structured["stdout"].as_str().unwrap_or_default()
    }

    pub fn error_type(&self) -> &str {
        self.structured["error"]["type"]
            .as_str()
            .unwrap_or_default()
    }

    pub fn error_kind(&self) -> &str {
        self.structured["error"]["kind"]
            .as_str()
            .unwrap_or_default()
    }

    pub fn error_message(&self) -> &str {
        self.structured["error"]["message"]
            .as_str()
            .unwrap_or_default()
    }
}

pub fn unpack(result: CallToolResult) -> Ran {
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    Ran {
        text,
        structured: result.structured_content.unwrap_or(Value::Null),
        is_error: result.is_error == Some(true),
    }
}

impl Client {
    pub async fn exec(&self, code: &str) -> Ran {
        self.exec_args(json!({"code": code})).await
    }

    pub async fn exec_args(&self, args: Value) -> Ran {
        let args = args.as_object().cloned().unwrap_or_default();
        let result = self
            .service
            .call_tool(CallToolRequestParams::new("execute_python").with_arguments(args))
            .await
            .expect("tools/call execute_python");
        unpack(result)
    }

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
        tokio::time::timeout(within, self.changed.notified())
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
}

/// A running `codemcp serve --http 127.0.0.1:0` and its URL.
pub struct HttpGateway {
    pub child: tokio::process::Child,
    pub url: String,
    _setup: Setup,
}

impl HttpGateway {
    /// The config file the gateway was started with.
    #[allow(dead_code)] // not every test binary asks
    pub fn config(&self) -> PathBuf {
        self._setup.config()
    }
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
    // Keep draining stderr so the gateway never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    HttpGateway {
        child,
        url,
        _setup: setup,
    }
}

/// `odd_server.py` serving Streamable HTTP on a free loopback port: the process
/// (killed on drop) and its MCP URL.
pub async fn odd_over_http() -> (tokio::process::Child, String) {
    let port = free_port();
    let server = tokio::process::Command::new(python2())
        .arg(repo().join("tests/servers/odd_server.py"))
        .args(["--http", &port.to_string()])
        .env("ODD_LOG_LEVEL", "WARNING")
        .kill_on_drop(true)
        .spawn()
        .expect("start odd_server over HTTP");
    wait_for_port(port, Duration::from_secs(30)).await;
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// Whether `pid` is a live (not zombie) process.
pub fn process_alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => !status.lines().any(|l| {
            l.starts_with("State:") && (l.contains("Z (zombie)") || l.contains("X (dead)"))
        }),
        Err(_) => false,
    }
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("addr").port()
}

pub async fn wait_for_port(port: u16, within: Duration) {
    let deadline = std::time::Instant::now() + within;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on 127.0.0.1:{port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An MCP client session over Streamable HTTP.
pub type HttpClient = RunningService<RoleClient, ()>;

pub async fn http_connect(url: &str) -> HttpClient {
    init_tls();
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_owned(),
        );
    ().serve(rmcp::transport::StreamableHttpClientTransport::from_config(
        config,
    ))
    .await
    .expect("MCP over HTTP")
}

pub async fn http_exec(client: &HttpClient, code: &str) -> Ran {
    let args = json!({"code": code})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new("execute_python").with_arguments(args))
        .await
        .expect("tools/call");
    unpack(result)
}

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

/// Whether the bubblewrap sandbox placement works here (`codemcp setup
/// sandbox` succeeds: bwrap, user namespaces, the root file system, or
/// `CODEMCP_SANDBOX_ROOTFS` names one): else why not. Under `CI=true` it
/// must, so its absence fails the test.
pub fn sandbox_or_skip() -> Result<(), String> {
    let out = std::process::Command::new(bin())
        .args(["setup", "sandbox"])
        .output()
        .map_err(|e| format!("codemcp setup sandbox: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let reason = format!(
        "codemcp setup sandbox: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true needs the sandbox placement: {reason}"
    );
    eprintln!("SKIPPED the sandbox placement: {reason}");
    Err(reason)
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
