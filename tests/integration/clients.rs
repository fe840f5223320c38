//! Real MCP clients as users run them: PyPI `mcp` 2.3.0 (2026-07-28 protocol and
//! legacy `initialize`), `mcp` 1.30.0, and the MCP Inspector CLI, over stdio and HTTP.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use support::{Setup, bin, everything, python1, python2, repo, start_http};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

const SNIPPET: &str = "x = everything_get_sum(a=2, b=40)\nprint('ok')\nx";

fn steps() -> Value {
    json!([
        {"op": "list_tools"},
        {"op": "call", "tool": "execute_python", "args": {"code": SNIPPET}},
        {"op": "call", "tool": "execute_python", "args": {"code": "1/0"}},
        {"op": "list_resources"}
    ])
}

/// Runs tests/clients/drive.py with `python` and returns its JSON report.
async fn drive(python: &Path, target: &[String], steps: &Value) -> Value {
    let mut child = Command::new(python)
        .arg(repo().join("tests/clients/drive.py"))
        .args(target)
        .env("CODEMCP_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run drive.py");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(steps.to_string().as_bytes())
        .await
        .expect("write steps");
    drop(stdin);
    let output = child.wait_with_output().await.expect("drive.py output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "drive.py printed no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn check_report(report: &Value, label: &str) {
    assert!(report.get("error").is_none(), "{label}: {report}");
    let results = report["results"].as_array().expect("results");
    let tools = results[0]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 1, "{label}");
    assert_eq!(tools[0]["name"], "execute_python");
    assert!(
        tools[0]["description"]
            .as_str()
            .unwrap_or_default()
            .contains("everything_get_sum("),
        "{label}"
    );
    let ok = &results[1];
    assert_eq!(ok["isError"], false, "{label}: {ok}");
    assert_eq!(
        ok["structuredContent"]["result"], "The sum of 2 and 40 is 42.",
        "{label}: {ok}"
    );
    assert_eq!(ok["structuredContent"]["stdout"], "ok\n", "{label}");
    let err = &results[2];
    assert_eq!(err["isError"], true, "{label}: {err}");
    assert_eq!(
        err["structuredContent"]["error"]["type"], "ZeroDivisionError",
        "{label}"
    );
    let resources = results[3]["resources"].as_array().expect("resources");
    assert!(
        resources.iter().any(|r| r["uri"] == "codemcp://sdk.pyi"),
        "{label}"
    );
    assert_eq!(report["server_info"]["name"], "codemcp", "{label}");
}

fn stdio_target(setup: &Setup, mode: &str) -> Vec<String> {
    vec![
        "--target".into(),
        "stdio".into(),
        "--mode".into(),
        mode.into(),
        "--command".into(),
        bin().display().to_string(),
        "--config".into(),
        setup.config().display().to_string(),
        // The tests look for signatures, which follow the 2,048-character head.
        "--description-budget".into(),
        support::DESCRIPTION_BUDGET.into(),
    ]
}

#[tokio::test]
async fn python_mcp_clients_over_stdio() {
    let setup = Setup::new(json!({"everything": everything()}));
    for (python, mode, label) in [
        (python2(), "auto", "mcp 2.3.0 auto"),
        (python2(), "legacy", "mcp 2.3.0 legacy"),
        (python1(), "auto", "mcp 1.30.0"),
    ] {
        let report = drive(&python, &stdio_target(&setup, mode), &steps()).await;
        check_report(&report, label);
        if label == "mcp 2.3.0 auto" {
            assert_eq!(report["protocol"], "2026-07-28", "{report}");
        }
    }
}

#[tokio::test]
async fn python_mcp_clients_over_http() {
    let gateway = start_http(json!({"everything": everything()}), &[]).await;
    for (python, mode, label) in [
        (python2(), "auto", "mcp 2.3.0 auto"),
        (python2(), "legacy", "mcp 2.3.0 legacy"),
        (python1(), "auto", "mcp 1.30.0"),
    ] {
        let target = vec![
            "--target".into(),
            "http".into(),
            "--url".into(),
            gateway.url.clone(),
            "--mode".into(),
            mode.into(),
        ];
        let report = drive(&python, &target, &steps()).await;
        check_report(&report, label);
    }
}

#[tokio::test]
async fn session_state_persists_for_python_clients() {
    let setup = Setup::new(json!({}));
    let steps = json!([
        {"op": "call", "tool": "execute_python", "args": {"code": "n = 20"}},
        {"op": "call", "tool": "execute_python", "args": {"code": "n + 22"}}
    ]);
    for (python, mode) in [(python2(), "auto"), (python1(), "auto")] {
        let report = drive(&python, &stdio_target(&setup, mode), &steps).await;
        assert_eq!(
            report["results"][1]["structuredContent"]["result"], 42,
            "{report}"
        );
    }
}

#[tokio::test]
async fn mcp_inspector_cli_lists_and_calls() {
    let setup = Setup::new(json!({"everything": everything()}));
    let inspector = repo().join("tests/clients/inspector.sh");
    // The Inspector has a --config flag of its own, so name our config by environment.
    let base = [bin().display().to_string(), "--".into()];
    let list = Command::new(&inspector)
        .args(&base)
        .args(["--method", "tools/list"])
        .env("CODEMCP_CONFIG", setup.config())
        .env("CODEMCP_LOG", "warn")
        .output()
        .await
        .expect("inspector");
    let listed: Value = serde_json::from_slice(&list.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&list.stderr)));
    assert_eq!(listed["tools"][0]["name"], "execute_python");
    let call = Command::new(&inspector)
        .args(&base)
        .args([
            "--method",
            "tools/call",
            "--tool-name",
            "execute_python",
            "--tool-arg",
            "code=print(6*7)",
        ])
        .env("CODEMCP_CONFIG", setup.config())
        .env("CODEMCP_LOG", "warn")
        .output()
        .await
        .expect("inspector");
    let called: Value = serde_json::from_slice(&call.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&call.stderr)));
    assert_eq!(called["structuredContent"]["stdout"], "42\n", "{called}");
}

#[tokio::test]
async fn tool_list_changes_reach_python_clients_in_both_protocol_eras() {
    let setup = Setup::new(json!({"odd": support::odd(json!({}))}));
    for (python, mode) in [
        (python2(), "auto"),
        (python2(), "legacy"),
        (python1(), "auto"),
    ] {
        let name = format!("late_{mode}_{}", python.display().to_string().len());
        let steps = json!([
            {"op": "call", "tool": "execute_python", "args": {"code": format!("odd_add_tool(name='{name}')")}},
            {"op": "wait_tools_changed", "timeout": 15},
            // The change notified may be an earlier one (the server joining
            // after `initialize`): list again after each until it shows.
            {"op": "wait_described", "text": format!("odd_{name}("), "timeout": 15}
        ]);
        let report = drive(&python, &stdio_target(&setup, mode), &steps).await;
        assert_eq!(report["results"][1]["changed"], true, "{mode}: {report}");
        assert_eq!(report["results"][2]["described"], true, "{mode}: {report}");
    }
}
