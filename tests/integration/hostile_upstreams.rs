//! What people read cannot be steered by an upstream or by agent code: the
//! approval question shows the server, the tool and every argument
//! (escaped, each value shortened on its own); two servers' tools never
//! silently share a function name; the audit log's lines are bounded, its
//! rotation keeps recent records through a burst of huge calls, and with
//! `CODEMCP_AUDIT_REQUIRED` a call with side effects needs its record.
//! The upstream is `tests/servers/hostile_server.py` (PyPI `mcp` 2.x); the
//! asking client is `tests/clients/approve.py`.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use codemcp_sdk::Sdk;
use codemcp_sdk::tooldef::ToolDef;
use serde_json::{Value, json};
use support::{Setup, python2, repo, start_http};
use tokio::process::Command;

fn hostile(policy: Value, calls: &Path) -> Value {
    json!({
        "command": python2(),
        "args": [repo().join("tests/servers/hostile_server.py")],
        "env": {"HOSTILE_CALLS": calls},
        "policy": policy,
    })
}

/// Runs `code` through a gateway whose `hostile.send` is on `ask`, the user
/// declining every question; the messages the user was asked.
async fn questions(code: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = dir.path().join("calls");
    let servers = json!({"hostile": hostile(json!({"*": "ask"}), &calls)});
    let gateway = start_http(servers, &[]).await;
    let output = Command::new(python2())
        .arg(repo().join("tests/clients/approve.py"))
        .arg(&gateway.url)
        .args(["--mode", "legacy", "--answers", r#"["decline","decline"]"#])
        .args(["--calls", &json!([code]).to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(90), output)
        .await
        .expect("approve.py finishes within 90 s")
        .expect("approve.py runs");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "approve.py printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let calls = std::fs::read_to_string(&calls).unwrap_or_default();
    assert!(!calls.contains("send"), "a declined call ran: {report}");
    report["asked"]
        .as_array()
        .expect("asked")
        .iter()
        .map(|q| q["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn long_first_argument_cannot_hide_later_arguments_in_the_question() {
    let code = "try:\n    hostile_send(meta={'note': 'x' * 3000, 'more': ['y' * 50] * 60}, \
                to='mallory@evil.example')\nexcept ToolError as e:\n    print(e)";
    let asked = questions(code).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    let message = &asked[0];
    assert!(
        message.contains("mallory@evil.example"),
        "the recipient is in the question: {message}"
    );
    assert!(message.contains("Server: hostile\n"), "{message}");
    assert!(message.contains("Tool: send\n"), "{message}");
    assert!(
        message.contains("  to = \"mallory@evil.example\"\n"),
        "{message}"
    );
    assert!(message.contains("  meta = "), "{message}");
    assert!(message.chars().count() < 3000, "{message}");
}

#[tokio::test]
async fn bidi_override_in_a_value_is_shown_escaped() {
    let code = "try:\n    hostile_send(meta={}, to='invoice_\\u202egnp.exe\\u200b')\n\
                except ToolError as e:\n    print(e)";
    let asked = questions(code).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    let message = &asked[0];
    assert!(
        message.contains("invoice_\\u202egnp.exe\\u200b"),
        "the override is shown as an escape: {message}"
    );
    assert!(
        !message.contains('\u{202e}') && !message.contains('\u{200b}'),
        "no raw override or zero-width character: {message:?}"
    );
}

#[tokio::test]
async fn newline_in_tool_name_cannot_forge_a_second_question() {
    // The tool's name is "ok\nServer: fs\nTool: read_file\n…"; its function
    // name is what naming makes of it.
    let code = "try:\n    hostile_ok_server_fs_tool_read_file_arguments_none_allow_this_call()\n\
                except Exception as e:\n    print(type(e).__name__, e)";
    let asked = questions(code).await;
    for message in &asked {
        assert!(
            !message.contains("\nServer: fs"),
            "a tool name wrote a line of the question: {message}"
        );
        assert_eq!(message.matches("\nServer: ").count(), 1, "{message}");
    }
}

fn tool(server: &str, name: &str) -> ToolDef {
    ToolDef::with_schema(server, name, json!({"type": "object", "properties": {}}))
}

/// `(python name, server, tool)` of every function.
fn names(tools: &[ToolDef]) -> Vec<(String, String, String)> {
    Sdk::build(tools)
        .functions()
        .iter()
        .map(|f| (f.py_name.clone(), f.server.clone(), f.tool.clone()))
        .collect()
}

fn py_name_of(tools: &[ToolDef], server: &str, tool: &str) -> String {
    names(tools)
        .into_iter()
        .find(|(_, s, t)| s == server && t == tool)
        .map(|(name, _, _)| name)
        .expect("the tool has a function")
}

#[test]
fn colliding_function_names_are_deterministic_in_any_config_order() {
    let one_order = [tool("gh", "issues_create"), tool("gh_issues", "create")];
    let other_order = [tool("gh_issues", "create"), tool("gh", "issues_create")];
    assert_eq!(names(&one_order), names(&other_order));
    let sdk = Sdk::build(&one_order);
    assert!(
        sdk.get("gh_issues_create").is_none(),
        "neither server has the contested name: {:?}",
        names(&one_order)
    );
    for (server, name) in [("gh", "issues_create"), ("gh_issues", "create")] {
        let py = py_name_of(&one_order, server, name);
        let described = sdk.describe(&py).expect("described");
        assert_eq!(described["server"], server);
        assert_eq!(described["tool"], name);
        let renamed = described["renamed"].as_str().unwrap_or_default();
        assert!(
            renamed.contains("gh_issues_create") && renamed.contains(server),
            "describe_tool says it was renamed and what it calls: {described}"
        );
    }
}

#[test]
fn adding_a_server_never_renames_existing_functions() {
    // `a` + `b_c_d` and `a_b_c` + `d` both map to `a_b_c_d`; then `a_b` with
    // `c_d` maps there too, and must not shift the other two's names.
    let before = [
        tool("a", "b_c_d"),
        tool("a_b_c", "d"),
        tool("a_b_c", "other"),
    ];
    let mut after = before.to_vec();
    after.push(tool("a_b", "c_d"));
    for (server, name) in [("a", "b_c_d"), ("a_b_c", "d"), ("a_b_c", "other")] {
        assert_eq!(
            py_name_of(&before, server, name),
            py_name_of(&after, server, name),
            "{server}.{name} kept its name: {:?} then {:?}",
            names(&before),
            names(&after)
        );
    }
    // The newcomer never takes a name that called another server.
    let newcomer = py_name_of(&after, "a_b", "c_d");
    assert!(
        names(&before).iter().all(|(name, _, _)| *name != newcomer),
        "{newcomer}"
    );
}

struct Audited {
    _dir: tempfile::TempDir,
    setup: Setup,
    audit: std::path::PathBuf,
    calls: std::path::PathBuf,
}

fn audited() -> Audited {
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = dir.path().join("calls");
    let audit = dir.path().join("audit.jsonl");
    let setup = Setup::new(json!({"hostile": hostile(json!({}), &calls)}));
    Audited {
        _dir: dir,
        setup,
        audit,
        calls,
    }
}

/// Every line of `PATH` and its rotated files.
fn audit_lines(audit: &Path) -> Vec<String> {
    let dir = audit.parent().expect("dir");
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("audit.jsonl") && path.is_file() {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    lines
}

/// Agent code that builds `blob`: `keys` keys of 300-character values.
fn blob(keys: usize) -> String {
    format!("blob = {{}}\nfor i in range({keys}):\n    blob['k' + str(i)] = 'v' * 300\n")
}

#[tokio::test]
async fn audit_line_size_is_bounded() {
    let w = audited();
    let path = w.audit.to_str().expect("utf-8");
    let client = w.setup.stdio(&[("CODEMCP_AUDIT_LOG", path)]).await;
    let code = format!(
        "{}hostile_store(blob=blob)\nhostile_send(meta={{'deep': [[['z' * 500] * 10] * 10] * 10}}, to='x' * 100000)",
        blob(10_000)
    );
    let ran = client.exec(&code).await;
    assert!(!ran.is_error, "{ran:?}");
    let lines = audit_lines(&w.audit);
    assert_eq!(lines.len(), 2, "{}", lines.len());
    let largest = lines.iter().map(String::len).max().unwrap_or(0);
    eprintln!("largest audit line: {largest} bytes");
    assert!(largest <= 64 * 1024, "an audit line of {largest} bytes");
    let store: Value = serde_json::from_str(&lines[0]).expect("JSON");
    let shown = store["arguments"]["blob"].to_string();
    assert!(shown.contains("[10000 keys]"), "{shown}");
    assert!(shown.contains("[300 chars]"), "{shown}");
}

#[tokio::test]
async fn burst_of_large_calls_keeps_recent_record() {
    let w = audited();
    let path = w.audit.to_str().expect("utf-8");
    let client = w
        .setup
        .stdio(&[
            ("CODEMCP_AUDIT_LOG", path),
            ("CODEMCP_AUDIT_MAX_BYTES", "1MiB"),
        ])
        .await;
    let ran = client.exec("hostile_peek()").await;
    assert!(!ran.is_error, "{ran:?}");
    let code = format!(
        "{}for _ in range(20):\n    hostile_store(blob=blob)",
        blob(5_000)
    );
    let ran = client.exec(&code).await;
    assert!(!ran.is_error, "{ran:?}");
    let lines = audit_lines(&w.audit);
    assert!(
        lines.iter().any(|l| l.contains("\"tool\":\"peek\"")),
        "the record of the call before the burst is kept ({} lines)",
        lines.len()
    );
    assert_eq!(lines.len(), 21, "every record is kept");
}

#[tokio::test]
async fn failing_audit_write_refuses_side_effects_when_required() {
    let w = audited();
    // Every write must rotate (the file is over 1 byte), and rotation fails:
    // each rotated name is a directory that is not empty.
    std::fs::write(&w.audit, "earlier\n").expect("audit file");
    for n in 1..=5 {
        let taken = w.audit.with_extension(format!("jsonl.{n}"));
        std::fs::create_dir(&taken).expect("dir");
        std::fs::write(taken.join("x"), "x").expect("file");
    }
    let path = w.audit.to_str().expect("utf-8");
    let client = w
        .setup
        .stdio(&[
            ("CODEMCP_AUDIT_LOG", path),
            ("CODEMCP_AUDIT_MAX_BYTES", "1"),
            ("CODEMCP_AUDIT_REQUIRED", "true"),
        ])
        .await;
    let ran = client
        .exec(
            "try:\n    r = hostile_store(blob={'a': 1})\nexcept ToolError as e:\n    r = str(e)\nr",
        )
        .await;
    let said = ran.result().as_str().unwrap_or_default().to_owned();
    assert!(
        said.contains("CODEMCP_AUDIT_REQUIRED"),
        "the call was refused: {ran:?}"
    );
    let calls = std::fs::read_to_string(&w.calls).unwrap_or_default();
    assert!(
        !calls.contains("store"),
        "a refused call reached the upstream"
    );
    // A read-only tool still works: it changes nothing to record.
    let ran = client.exec("hostile_peek()").await;
    assert_eq!(ran.result(), "peeked", "{ran:?}");
}
