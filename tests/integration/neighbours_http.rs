//! A shared HTTP gateway holds against its neighbours (issue 24, items 1
//! and 2): sockets that send nothing or drip bytes cannot lock out a client
//! with a token, and MCP sessions are bounded and belong to the principal
//! that opened them. Real TCP on loopback against the real binary; each test
//! is named for the attack it stops.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use support::Setup;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A `codemcp serve --http` started for one test, with its own limits.
struct Gateway {
    child: tokio::process::Child,
    url: String,
    _setup: Setup,
}

impl Gateway {
    /// Started under `sh -c 'ulimit -n N'` when `open_files` is given, so
    /// that neither its soft nor its hard open-files limit is above N.
    async fn start(env: &[(&str, &str)], open_files: Option<u32>) -> Self {
        let setup = Setup::new(json!({}));
        let mut command = match open_files {
            Some(n) => {
                let mut c = tokio::process::Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(support::bin());
                c
            }
            None => tokio::process::Command::new(support::bin()),
        };
        command
            .arg("--config")
            .arg(setup.config())
            .args(["serve", "--http", "127.0.0.1:0"])
            .env("CODEMCP_MONTY_BIN", support::monty_bin())
            .env("CODEMCP_FALLBACK", "none")
            .env("XDG_STATE_HOME", setup.dir.path().join("state"))
            .env("CODEMCP_STARTUP_WAIT_MS", support::STARTUP_WAIT_MS)
            .envs(env.iter().copied())
            .env("CODEMCP_LOG", "info")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn codemcp serve --http");
        let url = support::serving_url(&mut child).await;
        Self {
            child,
            url,
            _setup: setup,
        }
    }

    fn addr(&self) -> String {
        let rest = self.url.trim_start_matches("http://");
        rest.split('/').next().unwrap().to_owned()
    }

    fn rss_mib(&self) -> f64 {
        let pid = self.child.id().expect("pid");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        let kib: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib / 1024.0
    }
}

/// A principals file with `names`, and their tokens.
fn principals(dir: &Path, names: &[&str]) -> (String, Vec<String>) {
    let file = dir.join("tokens.json");
    let tokens = names
        .iter()
        .map(|name| support::token(&file, "add", name))
        .collect();
    (file.to_str().unwrap().to_owned(), tokens)
}

/// This process may open as many sockets as its hard limit allows.
fn raise_own_open_files() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only touch the struct passed to them.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
}

/// One JSON-RPC POST to `/mcp`: status, the session id it returned, and the
/// messages of its answer (JSON or SSE).
async fn post(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> (u16, Option<String>, Vec<Value>) {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("authorization", format!("Bearer {token}"))
        .body(body.to_string());
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let response = request.send().await.expect("POST /mcp");
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap_or_default();
    let messages = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect();
    (status, id, messages)
}

/// A new MCP session (2025-era, `Mcp-Session-Id`) of `token`'s principal.
async fn open_session(http: &reqwest::Client, url: &str, token: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "neighbour", "version": "0"}}});
    let (status, id, _) = post(http, url, token, None, &init).await;
    assert_eq!(status, 200, "initialize");
    let id = id.expect("mcp-session-id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(http, url, token, Some(&id), &initialized).await;
    assert_eq!(status, 202, "notifications/initialized");
    id
}

/// The status of a `ping` in session `id`: 200 while it lives, 404 after.
async fn ping(http: &reqwest::Client, url: &str, token: &str, id: &str) -> u16 {
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    post(http, url, token, Some(id), &ping).await.0
}

/// Runs `code` in session `id`; the run's structured result.
async fn run(http: &reqwest::Client, url: &str, token: &str, id: &str, code: &str) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "execute_python", "arguments": {"code": code}}});
    let (status, _, messages) = post(http, url, token, Some(id), &call).await;
    assert_eq!(status, 200, "tools/call");
    messages
        .into_iter()
        .find_map(|m| m["result"]["structuredContent"].as_object().cloned())
        .map(Value::Object)
        .expect("a tools/call result")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_do_not_lock_out_a_token_client() {
    raise_own_open_files();
    let dir = tempfile::tempdir().unwrap();
    let (file, tokens) = principals(dir.path(), &["alice"]);
    // A header timeout far beyond the test: only the connection cap can
    // make room for the client.
    let env = [
        ("CODEMCP_HTTP_TOKENS", file.as_str()),
        ("CODEMCP_HTTP_HEADER_TIMEOUT_MS", "600000"),
    ];
    let gateway = Gateway::start(&env, Some(1024)).await;
    let addr = gateway.addr();
    let mut silent = Vec::new();
    for _ in 0..1200 {
        let connect = TcpStream::connect(&addr);
        if let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_secs(5), connect).await {
            silent.push(stream);
        }
    }
    assert!(silent.len() >= 1100, "opened {} sockets", silent.len());
    // Give the gateway time to accept them all.
    tokio::time::sleep(Duration::from_secs(2)).await;

    support::init_tls();
    let started = Instant::now();
    let config = StreamableHttpClientTransportConfig::with_uri(gateway.url.clone())
        .auth_header(tokens[0].clone());
    let served = tokio::time::timeout(Duration::from_secs(30), async {
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await?;
        let tools = client.list_all_tools().await?;
        Ok::<_, Box<dyn std::error::Error>>(tools.len())
    })
    .await;
    let waited = started.elapsed();
    let tools = served
        .expect("the token client was locked out by silent connections")
        .expect("tools/list");
    assert_eq!(tools, 1);
    let mut held = 0;
    let mut buf = [0u8; 1];
    for stream in &silent {
        if matches!(stream.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        {
            held += 1;
        }
    }
    eprintln!(
        "{} silent connections opened, {held} still held by the gateway; the token client was served in {waited:?}",
        silent.len()
    );
    assert!(
        held > 0,
        "the gateway should hold some connections, not refuse all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_drip_is_cut_after_the_header_timeout() {
    let gateway = Gateway::start(&[("CODEMCP_HTTP_HEADER_TIMEOUT_MS", "1000")], None).await;
    let mut stream = TcpStream::connect(gateway.addr()).await.unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let cut = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            // A byte every 200 ms: never a whole header line in time.
            if stream.write_all(b"X").await.is_err() {
                return;
            }
            let mut buf = [0u8; 256];
            let read = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf));
            if let Ok(Ok(0) | Err(_)) = read.await {
                return;
            }
        }
    })
    .await;
    assert!(
        cut.is_ok(),
        "a dripping client kept its connection for 20 s"
    );
    let after = started.elapsed();
    assert!(after < Duration::from_secs(10), "cut only after {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_body_drip_is_answered_after_the_body_timeout() {
    let gateway = Gateway::start(&[("CODEMCP_HTTP_BODY_TIMEOUT_MS", "1000")], None).await;
    let mut stream = TcpStream::connect(gateway.addr()).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{";
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(20), async {
        let mut seen = Vec::new();
        loop {
            let _ = stream.write_all(b" ").await;
            let mut buf = [0u8; 512];
            match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => return String::from_utf8_lossy(&seen).into_owned(),
                Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
    })
    .await
    .expect("a dripping body kept its request open for 20 s");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_session_id_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (file, tokens) = principals(dir.path(), &["alice", "bob"]);
    let (alice, bob) = (&tokens[0], &tokens[1]);
    let gateway = Gateway::start(&[("CODEMCP_HTTP_TOKENS", file.as_str())], None).await;
    support::init_tls();
    let http = reqwest::Client::new();
    let url = &gateway.url;
    let hers = open_session(&http, url, alice).await;
    let ran = run(&http, url, alice, &hers, "secret = 42").await;
    assert!(ran["error"].is_null(), "{ran}");

    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "execute_python", "arguments": {"code": "secret = 0"}}});
    let (status, _, messages) = post(&http, url, bob, Some(&hers), &call).await;
    assert_eq!(status, 404, "Bob ran code in Alice's session: {messages:?}");
    let deleted = http
        .delete(url)
        .header("mcp-session-id", &hers)
        .header("mcp-protocol-version", "2025-06-18")
        .header("authorization", format!("Bearer {bob}"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 404, "Bob ended Alice's session");
    let streamed = http
        .get(url)
        .header("mcp-session-id", &hers)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("authorization", format!("Bearer {bob}"))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status().as_u16(), 404, "Bob read Alice's stream");

    let ran = run(&http, url, alice, &hers, "secret").await;
    assert_eq!(ran["result"], 42, "{ran}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_flood_is_capped_per_principal_and_in_total() {
    let dir = tempfile::tempdir().unwrap();
    let (file, tokens) = principals(dir.path(), &["alice", "bob"]);
    let (alice, bob) = (&tokens[0], &tokens[1]);
    let env = [
        ("CODEMCP_HTTP_TOKENS", file.as_str()),
        ("CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL", "4"),
        ("CODEMCP_HTTP_MAX_SESSIONS", "6"),
    ];
    let gateway = Gateway::start(&env, None).await;
    support::init_tls();
    let http = reqwest::Client::new();
    let url = &gateway.url;
    let mut hers = Vec::new();
    for _ in 0..10 {
        hers.push(open_session(&http, url, alice).await);
    }
    let mut alive = Vec::new();
    for id in &hers {
        alive.push(ping(&http, url, alice, id).await == 200);
    }
    // Her newest four live; her flood ended only her own oldest.
    assert_eq!(alive, [vec![false; 6], vec![true; 4]].concat());
    let mut his = Vec::new();
    for _ in 0..4 {
        his.push(open_session(&http, url, bob).await);
    }
    let mut open = 0;
    for id in &hers {
        open += usize::from(ping(&http, url, alice, id).await == 200);
    }
    let mut bobs = 0;
    for id in &his {
        bobs += usize::from(ping(&http, url, bob, id).await == 200);
    }
    assert!(open + bobs <= 6, "alice {open} + bob {bobs} sessions");
    assert!(bobs >= 2, "bob keeps at least his share: {bobs}");
    assert_eq!(ping(&http, url, bob, his.last().unwrap()).await, 200);
}

/// 3,000 `initialize` from one principal: the sessions stay within the
/// default caps and the gateway's memory with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_flood_leaves_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (file, tokens) = principals(dir.path(), &["mallory"]);
    let gateway = Gateway::start(&[("CODEMCP_HTTP_TOKENS", file.as_str())], None).await;
    support::init_tls();
    let http = reqwest::Client::new();
    let url = gateway.url.clone();
    let first = open_session(&http, &url, &tokens[0]).await;
    let before = gateway.rss_mib();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let (http, url, token) = (http.clone(), url.clone(), tokens[0].clone());
        tasks.spawn(async move {
            for _ in (worker..3000).step_by(8) {
                let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "flood", "version": "0"}}});
                let (status, _, _) = post(&http, &url, &token, None, &init).await;
                assert_eq!(status, 200);
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let after = gateway.rss_mib();
    eprintln!(
        "RSS {before:.1} MiB before, {after:.1} MiB after 3,000 initialize ({:?})",
        started.elapsed()
    );
    assert_eq!(ping(&http, &url, &tokens[0], &first).await, 404);
    assert!(after < 100.0, "RSS {after:.1} MiB after 3,000 initialize");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_mcp_sessions_expire() {
    let dir = tempfile::tempdir().unwrap();
    let (file, tokens) = principals(dir.path(), &["alice"]);
    let env = [
        ("CODEMCP_HTTP_TOKENS", file.as_str()),
        ("CODEMCP_SESSION_IDLE_SECS", "2"),
    ];
    let gateway = Gateway::start(&env, None).await;
    support::init_tls();
    let http = reqwest::Client::new();
    let id = open_session(&http, &gateway.url, &tokens[0]).await;
    assert_eq!(ping(&http, &gateway.url, &tokens[0], &id).await, 200);
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(ping(&http, &gateway.url, &tokens[0], &id).await, 404);
}
