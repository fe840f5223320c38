//! The parts of the session tests: gateways with their own state directory,
//! HTTP clients and what a run's answer says about its session, two gateways
//! on one Redis, and the PyPI `mcp` client driven by `tests/clients/drive.py`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::KEY;
use crate::support::redis::Redis;
use crate::support::{self, HttpClient, Ran, Setup, repo, unpack};

// ---------------------------------------------------------------- gateways

/// A `codemcp serve --http 127.0.0.1:0` with its own state directory (or one
/// it shares with another gateway), killed on drop.
pub(crate) type Gateway = support::LoggedGateway;

/// Settings a test does not choose are unset, whatever the caller's environment.
const CLEARED: &[&str] = &[
    "CODEMCP_HTTP_TOKEN",
    "CODEMCP_SESSION_STORE",
    "CODEMCP_SESSION_KEY",
    "CODEMCP_MONTY",
    "CODEMCP_MONTY_WORKERS",
    "CODEMCP_ISOLATION",
    "CODEMCP_EXEC_TIMEOUT_MS",
];

pub(crate) async fn serve(state: &Path, env: &[(&str, &str)]) -> Gateway {
    support::serve_http_logged(Setup::new(json!({})), state, CLEARED, env).await
}

impl Gateway {
    pub(crate) fn pid(&self) -> u32 {
        self.child.id().expect("gateway pid")
    }

    pub(crate) fn assert_alive(&mut self) {
        assert!(
            matches!(self.child.try_wait(), Ok(None)),
            "the gateway exited: {:?}",
            self.log()
        );
    }
}

pub(crate) fn state_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("state dir")
}

pub(crate) fn sqlite_file(state: &Path) -> PathBuf {
    state.join("codemcp/sessions.sqlite3")
}

/// Pids of the live `monty` worker processes whose parent is `gateway`. A
/// worker the pool retired (it kills a worker after its 50th checkout and
/// frees the slot at once) is not live from the moment SIGKILL is sent: one
/// that is a zombie, exiting, or has SIGKILL pending is not counted.
pub(crate) fn monty_workers(gateway: u32) -> Vec<u32> {
    const PF_EXITING: u64 = 0x4;
    const SIGKILL_BIT: u64 = 1 << (9 - 1);
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // pid (comm) state ppid pgrp session tty_nr tpgid flags ...
            let (head, tail) = stat.rsplit_once(')').unwrap_or_default();
            let fields: Vec<&str> = tail.split_whitespace().collect();
            let parent = fields.get(1).and_then(|p| p.parse::<u32>().ok());
            if !head.ends_with("(monty") || parent != Some(gateway) {
                return false;
            }
            let gone = matches!(fields.first(), Some(&("Z" | "X" | "x")));
            let exiting = fields
                .get(6)
                .and_then(|f| f.parse::<u64>().ok())
                .is_some_and(|flags| flags & PF_EXITING != 0);
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let killed = status.lines().any(|l| {
                let pending = l
                    .strip_prefix("SigPnd:")
                    .or_else(|| l.strip_prefix("ShdPnd:"));
                pending
                    .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
                    .is_some_and(|mask| mask & SIGKILL_BIT != 0)
            });
            !(gone || exiting || killed)
        })
        .collect()
}

// ---------------------------------------------------------------- clients

/// An MCP client over HTTP presenting `token` as `Authorization: Bearer`.
pub(crate) async fn connect(url: &str, token: Option<&str>) -> HttpClient {
    support::init_tls();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP over HTTP")
}

pub(crate) fn arguments(code: &str, session: Option<&str>, timeout_ms: Option<u64>) -> Value {
    let mut args = json!({ "code": code });
    if let Some(session) = session {
        args["session"] = json!(session);
    }
    if let Some(ms) = timeout_ms {
        args["timeout_ms"] = json!(ms);
    }
    args
}

pub(crate) async fn call_with(client: &HttpClient, args: Value) -> Ran {
    let args = args.as_object().cloned().unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new("execute_python").with_arguments(args))
        .await
        .expect("tools/call execute_python");
    unpack(result)
}

pub(crate) async fn call(client: &HttpClient, code: &str, session: Option<&str>) -> Ran {
    call_with(client, arguments(code, session, None)).await
}

/// The session handle a result names, in `structuredContent.session` and as
/// the text's last line.
pub(crate) fn handle(ran: &Ran) -> String {
    let handle = ran.structured["session"]
        .as_str()
        .unwrap_or_else(|| panic!("no session handle in the result: {}", ran.text))
        .to_owned();
    assert_eq!(
        ran.text.lines().last(),
        Some(format!("[session: {handle}]").as_str()),
        "the text's last line names the session: {}",
        ran.text
    );
    handle
}

pub(crate) fn warnings(ran: &Ran) -> Vec<String> {
    ran.structured["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The value of a run that must have succeeded without warnings.
#[track_caller]
pub(crate) fn value(ran: &Ran) -> &Value {
    assert!(!ran.is_error, "the run failed: {}", ran.text);
    assert!(
        warnings(ran).is_empty(),
        "unexpected warnings: {}",
        ran.text
    );
    ran.result()
}

/// Asserts `ran` is the "unknown or expired" refusal of `given`, and returns
/// the new handle it names.
#[track_caller]
pub(crate) fn refused(ran: &Ran, given: &str) -> String {
    assert!(ran.is_error, "expected a refusal, got: {}", ran.text);
    assert_eq!(ran.error_kind(), "input", "{}", ran.text);
    assert_eq!(ran.error_type(), "LookupError", "{}", ran.text);
    assert!(
        ran.error_message().contains("unknown or expired"),
        "{}",
        ran.text
    );
    assert!(ran.structured["result"].is_null(), "{}", ran.text);
    assert_eq!(ran.stdout(), "", "the code did not run: {}", ran.text);
    let new = handle(ran);
    assert_ne!(new, given, "a refusal names a NEW session");
    new
}

/// A result with every handle replaced and timings dropped: two refusals
/// must be equal after this.
pub(crate) fn normalized(ran: &Ran, handles: &[&str]) -> (Value, String) {
    let mut structured = ran.structured.clone();
    if let Some(map) = structured.as_object_mut() {
        map.remove("elapsed_ms");
    }
    let mut text = structured.to_string();
    let mut plain = ran.text.clone();
    for h in handles {
        text = text.replace(h, "<handle>");
        plain = plain.replace(h, "<handle>");
    }
    let plain = regex::Regex::new(r"\d+ ?ms")
        .expect("regex")
        .replace_all(&plain, "<ms>")
        .into_owned();
    (serde_json::from_str(&text).expect("json"), plain)
}

/// A well-formed handle nobody minted.
pub(crate) const NEVER_MINTED: &str = "AAAAAAAAAAAAAAAAAAAAAA";

// ---------------------------------------------------------------- redis

/// Two gateways (pool placement) sharing one Redis and one key.
pub(crate) async fn two_on_redis(redis: &Redis, state: &Path) -> (Gateway, Gateway) {
    let url = redis.url();
    let env = [
        ("CODEMCP_SESSION_STORE", url.as_str()),
        ("CODEMCP_SESSION_KEY", KEY),
    ];
    let a = serve(&state.join("a"), &env).await;
    let b = serve(&state.join("b"), &env).await;
    (a, b)
}

// ---------------------------------------------------------------- PyPI mcp

/// Runs tests/clients/sessions.py against `url` and returns its report.
pub(crate) async fn drive(python: &Path, url: &str, mode: &str, steps: &Value) -> Value {
    let mut child = Command::new(python)
        .arg(repo().join("tests/clients/sessions.py"))
        .args(["--target", "http", "--url", url, "--mode", mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run sessions.py");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(steps.to_string().as_bytes())
        .await
        .expect("steps");
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("sessions.py finishes within 90 s")
        .expect("sessions.py output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "sessions.py printed no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert!(report.get("error").is_none(), "{report}");
    report
}

pub(crate) fn code_step(code: &str) -> Value {
    json!({"op": "call", "tool": "execute_python", "args": {"code": code}})
}

pub(crate) fn code_step_in(code: &str, session_from: usize) -> Value {
    json!({"op": "call", "tool": "execute_python", "args": {"code": code}, "session_from": session_from})
}
