//! The `requestState` of a run parked for approval (2026-07-28, SEP-2322),
//! attacked over raw HTTP: a real gateway with the file session store and the
//! real filesystem server, `write_file` on `ask`. Each test is named for what
//! it stops.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::{HttpGateway, filesystem, start_http};

async fn gateway(root: &Path, env: &[(&str, &str)]) -> HttpGateway {
    let mut server = filesystem(root);
    server["policy"] = json!({"write_file": "ask"});
    start_http(json!({"fs": server}), env).await
}

/// One stateless 2026-07-28 `tools/call` of `execute_python`, as `token`,
/// declaring form elicitation; `retry` is `(requestState, answer)`.
async fn call(url: &str, token: &str, arguments: Value, retry: Option<(&str, &str)>) -> Value {
    let mut params = json!({
        "name": "execute_python",
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "parked-test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    });
    if let Some((state, action)) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = json!({"approval": {"action": action, "content": {}}});
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    support::init_tls();
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "execute_python")
        .header("authorization", format!("Bearer {token}"))
        .body(body.to_string())
        .send()
        .await
        .expect("POST to the gateway");
    let text = response.text().await.expect("a body");
    // JSON, or an SSE stream whose data line carries the response.
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|l| l.contains("\"id\""))
        .unwrap_or(text.trim());
    let reply: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}"));
    reply["result"].clone()
}

/// The retry of `code`'s call with `state` and the user's `action`.
async fn answer(url: &str, token: &str, code: &str, state: &str, action: &str) -> Value {
    call(url, token, json!({"code": code}), Some((state, action))).await
}

fn state(result: &Value) -> String {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let state = result["requestState"].as_str().expect("a requestState");
    // With a file store the run parks there (not in the gateway's memory).
    assert!(state.starts_with("parked."), "{state}");
    state.to_owned()
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn write(root: &Path, name: &str, text: &str) -> String {
    let path = root.join(name);
    format!(
        "fs_write_file(path={:?}, content={text:?})",
        path.to_str().unwrap()
    )
}

#[tokio::test]
async fn a_replayed_request_state_resumes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let gw = gateway(root.path(), &[]).await;
    let code = format!("n = 0\n{}\nn += 1\nn", write(root.path(), "once.txt", "x"));
    let asked = call(&gw.url, "alice", json!({"code": code}), None).await;
    let state = state(&asked);
    assert!(
        !root.path().join("once.txt").exists(),
        "nothing before the answer"
    );
    let done = answer(&gw.url, "alice", &code, &state, "accept").await;
    assert_eq!(done["structuredContent"]["result"], 1, "{done}");
    std::fs::remove_file(root.path().join("once.txt")).unwrap();

    let replay = answer(&gw.url, "alice", &code, &state, "accept").await;
    assert_eq!(replay["isError"], true, "{replay}");
    assert!(text(&replay).contains("names no paused run"), "{replay}");
    assert!(
        !root.path().join("once.txt").exists(),
        "a replayed state must not write again"
    );
}

#[tokio::test]
async fn a_request_state_is_refused_to_another_caller_and_stays_its_owners() {
    let root = tempfile::tempdir().unwrap();
    let gw = gateway(root.path(), &[]).await;
    let code = write(root.path(), "mine.txt", "alice");
    let state = state(&call(&gw.url, "alice", json!({"code": code}), None).await);

    let stolen = answer(&gw.url, "mallory", &code, &state, "accept").await;
    assert_eq!(stolen["isError"], true, "{stolen}");
    assert!(text(&stolen).contains("names no paused run"), "{stolen}");
    assert!(!root.path().join("mine.txt").exists());
    let forged = answer(
        &gw.url,
        "alice",
        &code,
        "parked.AAAAAAAAAAAAAAAAAAAAAA",
        "accept",
    )
    .await;
    assert_eq!(forged["isError"], true, "{forged}");

    // Mallory's attempt did not drop Alice's paused run.
    let done = answer(&gw.url, "alice", &code, &state, "accept").await;
    assert_ne!(done["isError"], true, "{done}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("mine.txt")).unwrap(),
        "alice"
    );
}

#[tokio::test]
async fn a_late_answer_finds_the_run_dropped_and_the_session_unchanged() {
    let root = tempfile::tempdir().unwrap();
    let gw = gateway(root.path(), &[("CODEMCP_APPROVAL_TIMEOUT_SECS", "1")]).await;
    let first = call(&gw.url, "alice", json!({"code": "x = 1"}), None).await;
    let session = first["structuredContent"]["session"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = format!("x = 2\n{}\nx = 3", write(root.path(), "late.txt", "x"));
    let args = json!({"code": code, "session": session});
    let state = state(&call(&gw.url, "alice", args.clone(), None).await);
    tokio::time::sleep(Duration::from_millis(2200)).await;

    let late = call(&gw.url, "alice", args, Some((&state, "accept"))).await;
    assert_eq!(late["isError"], true, "{late}");
    assert!(
        text(&late).contains("CODEMCP_APPROVAL_TIMEOUT_SECS"),
        "{late}"
    );
    assert!(!root.path().join("late.txt").exists());
    let x = call(
        &gw.url,
        "alice",
        json!({"code": "x", "session": session}),
        None,
    )
    .await;
    assert_eq!(
        x["structuredContent"]["result"], 1,
        "the session is as before: {x}"
    );
}

#[tokio::test]
async fn a_declined_parked_call_raises_tool_error_where_it_stopped() {
    let root = tempfile::tempdir().unwrap();
    let gw = gateway(root.path(), &[]).await;
    let code = format!(
        "print('before')\ntry:\n    {}\nexcept ToolError as e:\n    print('caught:', e)\n'after'",
        write(root.path(), "no.txt", "x")
    );
    let state = state(&call(&gw.url, "alice", json!({"code": code}), None).await);
    let done = answer(&gw.url, "alice", &code, &state, "decline").await;
    let result = &done["structuredContent"];
    assert_eq!(result["result"], "after", "{done}");
    assert_eq!(
        result["stdout"], "before\ncaught: denied by the user: fs.write_file\n",
        "{done}"
    );
    assert!(!root.path().join("no.txt").exists());
}

/// A parked run nobody answers is gone from the store at the approval
/// timeout, not kept for the session idle time (30 min by default) by a
/// record anyone could keep alive by reading it.
#[tokio::test]
async fn unanswered_parked_run_is_removed_at_approval_timeout() {
    let root = tempfile::tempdir().unwrap();
    let gw = gateway(root.path(), &[("CODEMCP_APPROVAL_TIMEOUT_SECS", "1")]).await;
    let code = write(root.path(), "never.txt", "x");
    let state = state(&call(&gw.url, "alice", json!({"code": code}), None).await);
    let handle = state.trim_start_matches("parked.").to_owned();
    let db = gw
        .config()
        .parent()
        .unwrap()
        .join("state/codemcp/sessions.sqlite3");
    let live = |db: &Path| -> i64 {
        let conn = rusqlite::Connection::open(db).expect("the session file");
        conn.busy_timeout(Duration::from_secs(2)).unwrap();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        conn.query_row(
            "SELECT count(*) FROM sessions WHERE handle = ?1 AND version > 0 AND expires_at > ?2",
            rusqlite::params![handle, now_ms],
            |row| row.get(0),
        )
        .expect("count")
    };
    assert_eq!(live(&db), 1, "the parked run is in the store");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        live(&db),
        0,
        "the parked run is gone at CODEMCP_APPROVAL_TIMEOUT_SECS"
    );
    let late = answer(&gw.url, "alice", &code, &state, "accept").await;
    assert_eq!(late["isError"], true, "{late}");
    assert!(!root.path().join("never.txt").exists());
}

/// A resumed run went on without the gateway's helpers: no `save_helper`,
/// and the lines it reported counted the helpers' prelude. Now it is
/// assembled as any run is: on Monty in-process and in the pool it parks in
/// the store and resumes; on CPython it waits in memory.
#[tokio::test]
async fn a_resumed_run_keeps_its_helpers_saves_one_and_reports_its_own_lines() {
    let python = support::worker_python().to_string_lossy().into_owned();
    let engines: [(&str, Vec<(&str, &str)>); 3] = [
        ("monty in-process", vec![("CODEMCP_MONTY", "inprocess")]),
        ("monty pool", vec![("CODEMCP_MONTY", "pool")]),
        (
            "cpython",
            vec![
                ("CODEMCP_ISOLATION", "host_system"),
                ("CODEMCP_PYTHON", &python),
            ],
        ),
    ];
    for (engine, mut env) in engines {
        let root = tempfile::tempdir().unwrap();
        let helpers = tempfile::tempdir().unwrap();
        std::fs::write(
            helpers.path().join("double.py"),
            "def double(x):\n    return x * 2\n",
        )
        .unwrap();
        env.push(("CODEMCP_HELPERS_DIR", helpers.path().to_str().unwrap()));
        env.push(("CODEMCP_HELPERS_SAVE", "allow"));
        let gw = gateway(root.path(), &env).await;
        let code = format!(
            "def triple(x: int) -> int:\n    return 3 * x\n\nn = double(2)\n{}\nsaved = save_helper(triple)\n[n, double(3), saved['name'], triple(2)]",
            write(root.path(), "a.txt", "x")
        );
        let asked = call(&gw.url, "alice", json!({"code": code}), None).await;
        let state = asked["requestState"].as_str().expect("asked");
        if engine != "cpython" {
            assert!(state.starts_with("parked."), "{engine}: {state}");
        }
        let done = answer(&gw.url, "alice", &code, state, "accept").await;
        let result = &done["structuredContent"]["result"];
        assert_eq!(*result, json!([4, 6, "triple", 6]), "{engine}: {done}");
        // Saved for the principal's next runs.
        let next = call(&gw.url, "alice", json!({"code": "triple(5)"}), None).await;
        assert_eq!(next["structuredContent"]["result"], 15, "{engine}: {next}");

        let code = format!(
            "n = double(2)\n{}\nraise ValueError('after the answer')",
            write(root.path(), "b.txt", "x")
        );
        let asked = call(&gw.url, "alice", json!({"code": code}), None).await;
        let state = asked["requestState"].as_str().expect("asked");
        let failed = answer(&gw.url, "alice", &code, state, "accept").await;
        let error = &failed["structuredContent"]["error"];
        let traceback = error["traceback"].as_str().unwrap_or_default();
        assert!(traceback.contains("line 3"), "{engine}: {failed}");
        assert!(!traceback.contains("line 5"), "{engine}: {failed}");
    }
}
