//! Clients that leave mid-run: over stdio (stdin closed) and over HTTP (the
//! session deleted, or the connection dropped). The run stops, the processes
//! it used are cleaned up, and an HTTP gateway keeps serving its other
//! sessions with its processes and file descriptors back where they were.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::json;
use support::{Setup, odd};

const BUSY_LOOP: &str = "while True:\n    pass";
const LONG_TOOL_CALL: &str = "odd_slow(ms=60000)";

/// The processes whose parent is `pid`, with their names.
fn children(pid: u32) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
            let (head, tail) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_owned();
            let mut fields = tail.split_whitespace();
            let state = fields.next()?;
            let ppid: u32 = fields.next()?.parse().ok()?;
            (ppid == pid && state != "Z").then_some((child, name))
        })
        .collect()
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

fn thread_count(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

async fn wait_until(within: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > within {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Some(started.elapsed())
}

/// Sends an `execute_python` call without waiting for its answer.
/// Hold the returned handle: its answer never comes, the client leaves first.
async fn start_run(
    peer: &rmcp::Peer<rmcp::RoleClient>,
    code: &str,
) -> rmcp::service::RequestHandle<rmcp::RoleClient> {
    let args = json!({"code": code})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("execute_python").with_arguments(args),
    ));
    peer.send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("send tools/call")
}

/// stdio: the client closes the gateway's stdin while a run is in progress.
async fn stdio_client_leaves(placement: &str, code: &str) {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[("CODEMCP_MONTY", placement)]).await;
    let gateway = client.pid.expect("gateway pid");
    let upstream = client
        .exec("odd_pid()")
        .await
        .result()
        .as_u64()
        .expect("pid");
    let upstream = u32::try_from(upstream).expect("pid");
    let _pending = start_run(client.service.peer(), code).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let helpers = children(gateway);
    assert!(
        helpers.iter().any(|(pid, _)| *pid == upstream),
        "{helpers:?}"
    );
    // rmcp's client closes the child's stdin, then waits for it to exit.
    let closing = tokio::spawn(async move { client.service.cancel().await });
    let exited = wait_until(Duration::from_secs(20), || {
        !support::process_alive(u64::from(gateway))
    })
    .await;
    let exited = exited.unwrap_or_else(|| {
        panic!("{placement}: gateway still runs 20 s after its client left ({code:?})")
    });
    let _ = closing.await;
    eprintln!(
        "stdio ({placement}), client left during {code:?}: gateway exited {exited:?} later; helpers were {helpers:?}"
    );
    // rmcp would wait 5 s for the run before closing (and rmcp's client kills the
    // gateway after 3 s); the run is cancelled after a 1.5 s drain instead.
    assert!(
        exited < Duration::from_secs(3),
        "{placement}: exit took {exited:?}"
    );
    for (pid, name) in helpers {
        let gone = wait_until(Duration::from_secs(5), || {
            !support::process_alive(u64::from(pid))
        })
        .await;
        assert!(
            gone.is_some(),
            "{placement}: {name} ({pid}) outlived the gateway"
        );
    }
}

#[tokio::test]
async fn stdio_client_leaving_during_a_busy_loop_ends_everything() {
    stdio_client_leaves("inprocess", BUSY_LOOP).await;
    stdio_client_leaves("pool", BUSY_LOOP).await;
}

#[tokio::test]
async fn stdio_client_leaving_during_a_tool_call_ends_everything() {
    stdio_client_leaves("inprocess", LONG_TOOL_CALL).await;
    stdio_client_leaves("pool", LONG_TOOL_CALL).await;
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn call_line(id: u32, code: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "execute_python", "arguments": {"code": code}}})
    .to_string()
}

/// A raw stdio gateway fed `lines` on stdin; stdout and stdin stay piped.
fn raw_gateway(setup: &Setup, lines: &[String]) -> std::process::Child {
    use std::io::Write as _;
    let mut child = std::process::Command::new(support::bin())
        .arg("--config")
        .arg(setup.config())
        .env("CODEMCP_MONTY_BIN", support::monty_bin())
        .env("CODEMCP_FALLBACK", "none")
        .env("CODEMCP_STARTUP_WAIT_MS", support::STARTUP_WAIT_MS)
        // Remembered catalogs (and other state) per test, not in $HOME.
        .env("XDG_STATE_HOME", setup.config().with_file_name("state"))
        .env("CODEMCP_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn codemcp");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in lines {
        writeln!(stdin, "{line}").expect("write a request");
    }
    child.stdin = Some(stdin);
    child
}

/// `printf '…requests…' | codemcp`: stdin ends right after the requests, but the
/// script still reads the answers, so the runs finish instead of being cancelled.
#[tokio::test]
async fn a_script_piping_its_requests_gets_every_answer() {
    use std::io::Read as _;
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    // The second round starts with the server's catalog remembered: its
    // requests must still wait for the server itself, not only its catalog.
    for _round in 0..2 {
        let mut child = raw_gateway(
            &setup,
            &[
                INITIALIZE.to_owned(),
                INITIALIZED.to_owned(),
                call_line(2, "6 * 7"),
                call_line(3, "import time\ntime.sleep(0.4)\nodd_pid() > 0"),
            ],
        );
        drop(child.stdin.take()); // end of input
        let mut out = String::new();
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut out)
            .expect("read the answers");
        let status = child.wait().expect("gateway exits");
        assert!(status.success(), "{status}");
        let answers: Vec<serde_json::Value> = out
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let result = |id: u32| {
            answers
                .iter()
                .find(|a| a["id"] == id)
                .map(|a| a["result"]["structuredContent"].clone())
                .unwrap_or_else(|| panic!("no answer {id} in {out}"))
        };
        assert_eq!(result(2)["result"], 42, "{out}");
        assert_eq!(result(3)["result"], true, "{out}");
    }
}

/// A client killed outright: its end of stdout closes with its end of stdin, and
/// the gateway stops the run and exits at once, without the drain.
#[tokio::test]
async fn a_killed_stdio_client_ends_the_run_at_once() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let mut child = raw_gateway(
        &setup,
        &[
            INITIALIZE.to_owned(),
            INITIALIZED.to_owned(),
            call_line(2, BUSY_LOOP),
        ],
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pid = child.id();
    drop(child.stdin.take());
    drop(child.stdout.take());
    let exited = wait_until(Duration::from_secs(10), || {
        matches!(child.try_wait(), Ok(Some(_)))
    })
    .await;
    eprintln!("stdio client killed during a busy loop: gateway {pid} exited {exited:?} later");
    assert!(
        exited.is_some_and(|t| t < Duration::from_millis(1000)),
        "exit took {exited:?}"
    );
}

/// What an HTTP gateway holds when idle.
#[derive(Clone, Copy)]
struct Footprint {
    children: usize,
    fds: usize,
    threads: usize,
}

/// The figures the tests print. Threads are shown, never asserted: tokio's
/// threads come and go.
impl std::fmt::Debug for Footprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} children, {} fds, {} threads",
            self.children, self.fds, self.threads
        )
    }
}

fn footprint(pid: u32) -> Footprint {
    Footprint {
        children: children(pid).len(),
        fds: fd_count(pid),
        threads: thread_count(pid),
    }
}

/// A pool-mode HTTP gateway whose runs may take `exec_timeout_ms`, with one other
/// session that has used an upstream, and its idle footprint.
async fn pool_gateway_with_a_bystander(
    exec_timeout_ms: &str,
) -> (support::HttpGateway, u32, support::HttpClient, Footprint) {
    let gateway = support::start_http(
        json!({"odd": odd(json!({}))}),
        &[
            ("CODEMCP_EXEC_TIMEOUT_MS", exec_timeout_ms),
            ("CODEMCP_MONTY", "pool"),
        ],
    )
    .await;
    let pid = gateway.child.id().expect("gateway pid");
    let other = support::http_connect(&gateway.url).await;
    let first = support::http_exec(&other, "odd_pid() > 0").await;
    assert_eq!(first.result(), true, "{:?}", first.structured);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let baseline = footprint(pid);
    (gateway, pid, other, baseline)
}

#[tokio::test]
async fn http_session_deleted_mid_run_stops_the_run_and_frees_its_worker() {
    let (gateway, pid, other, baseline) = pool_gateway_with_a_bystander("60000").await;
    for code in [BUSY_LOOP, LONG_TOOL_CALL] {
        let leaving = support::http_connect(&gateway.url).await;
        let _pending = start_run(leaving.peer(), code).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        let busy = footprint(pid);
        // The other session answers while the run goes on.
        let started = Instant::now();
        assert_eq!(support::http_exec(&other, "6 * 7").await.result(), 42);
        let answered = started.elapsed();
        let left = Instant::now();
        leaving.cancel().await.expect("close the session (DELETE)");
        let settled = wait_until(Duration::from_secs(15), || {
            let now = footprint(pid);
            now.children <= baseline.children && now.fds <= baseline.fds
        })
        .await;
        let after = footprint(pid);
        eprintln!(
            "HTTP session deleted during {code:?}: baseline {baseline:?}, during {busy:?}, after {after:?} \
             settled {settled:?} after the DELETE (sent {:?} ago); the other session answered in {answered:?}",
            left.elapsed()
        );
        assert!(
            settled.is_some_and(|t| t < Duration::from_secs(8)),
            "{code:?}: nothing freed: baseline {baseline:?}, after {after:?}"
        );
        assert!(answered < Duration::from_secs(2), "{answered:?}");
    }
    assert_eq!(
        support::http_exec(&other, "odd_pid() > 0").await.result(),
        true
    );
}

/// A bare Streamable HTTP client, so the test controls the connection itself.
struct RawSession {
    http: reqwest::Client,
    url: String,
    id: String,
}

impl RawSession {
    async fn open(url: &str) -> Self {
        support::init_tls();
        let http = reqwest::Client::new();
        let response = Self::post_to(&http, url, None, INITIALIZE).await;
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("mcp-session-id")
            .to_owned();
        let _ = response.bytes().await;
        let session = Self {
            http,
            url: url.to_owned(),
            id,
        };
        session
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        session
    }

    async fn post_to(
        http: &reqwest::Client,
        url: &str,
        session: Option<&str>,
        body: &str,
    ) -> reqwest::Response {
        let mut request = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_owned());
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        request.send().await.expect("POST to the gateway")
    }

    async fn post(&self, body: &str) -> reqwest::Response {
        Self::post_to(&self.http, &self.url, Some(&self.id), body).await
    }

    async fn call(&self, id: u32, code: &str) -> reqwest::Response {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "execute_python", "arguments": {"code": code}}});
        self.post(&body.to_string()).await
    }
}

#[tokio::test]
async fn http_connection_dropped_mid_run_leaks_nothing() {
    // The spec says a dropped connection is not a cancellation (the client may
    // resume the stream), so the run ends at its wall-time limit, not before.
    let (gateway, pid, other, baseline) = pool_gateway_with_a_bystander("3000").await;
    let mut first_settled: Option<Footprint> = None;
    for code in [BUSY_LOOP, LONG_TOOL_CALL, BUSY_LOOP] {
        let session = RawSession::open(&gateway.url).await;
        let started = Instant::now();
        let response = session.call(2, code).await;
        assert!(response.status().is_success(), "{}", response.status());
        tokio::time::sleep(Duration::from_millis(500)).await;
        drop(response); // closes the connection mid-stream
        let busy = footprint(pid);
        assert_eq!(support::http_exec(&other, "6 * 7").await.result(), 42);
        // The session is still there, and free again once the run hit its limit.
        let again = session.call(3, "'still here'").await;
        let text = again.text().await.unwrap_or_default();
        let waited = started.elapsed();
        assert!(text.contains("still here"), "{text}");
        assert!(waited < Duration::from_secs(8), "{waited:?}");
        let deleted = session
            .http
            .delete(&session.url)
            .header("mcp-session-id", &session.id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .expect("DELETE");
        assert!(deleted.status().is_success(), "{}", deleted.status());
        // The session's worker goes back to the pool: at most one idle worker
        // more than before, and no growth from one session to the next.
        let limit = first_settled.unwrap_or(Footprint {
            children: baseline.children + 1,
            fds: baseline.fds + 8,
            threads: 0,
        });
        let settled = wait_until(Duration::from_secs(10), || {
            let now = footprint(pid);
            now.children <= limit.children && now.fds <= limit.fds
        })
        .await;
        let after = footprint(pid);
        eprintln!(
            "HTTP connection dropped during {code:?}: baseline {baseline:?}, during {busy:?}, after {after:?}; \
             the session answered again {waited:?} after the call; settled {settled:?} after DELETE"
        );
        assert!(
            settled.is_some(),
            "baseline {baseline:?}, limit {limit:?}, after {after:?}"
        );
        first_settled.get_or_insert(after);
    }
    assert_eq!(
        support::http_exec(&other, "odd_pid() > 0").await.result(),
        true
    );
}
