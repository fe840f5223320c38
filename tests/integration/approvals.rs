//! Policy, approvals and the audit log, end to end: the real filesystem
//! server behind a gateway whose config puts `write_file` on `ask` and
//! `move_file` on `deny`, and the real PyPI `mcp` 2.x client
//! (`tests/clients/approve.py`) whose user answers from a script.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::{HttpGateway, bin, filesystem, monty_bin, python2, repo, start_http};
use tokio::process::Command;

struct World {
    gateway: HttpGateway,
    root: tempfile::TempDir,
    audit: PathBuf,
    /// What a stdio gateway of this world is started with.
    env: Vec<(String, String)>,
}

/// How the client reaches the gateway: the HTTP one of the world, or a
/// `codemcp` over stdio that the client starts itself (with the same config).
#[derive(Clone, Copy, Debug)]
enum Via {
    Http,
    Stdio,
}

async fn world(env: &[(&str, &str)]) -> World {
    let root = tempfile::tempdir().expect("root");
    let mut server = filesystem(root.path());
    server["policy"] = json!({"write_file": "ask", "move_file": "deny"});
    let audit = root.path().join("audit.jsonl");
    let audit_env = audit.to_str().expect("utf-8").to_owned();
    let mut all: Vec<(&str, &str)> = vec![("CODEMCP_AUDIT_LOG", &audit_env)];
    all.extend_from_slice(env);
    let gateway = start_http(json!({"fs": server}), &all).await;
    let state = root.path().join("stdio-state");
    let mut env: Vec<(String, String)> = vec![
        ("CODEMCP_MONTY_BIN".into(), path_text(&monty_bin())),
        ("CODEMCP_FALLBACK".into(), "none".into()),
        (
            "CODEMCP_STARTUP_WAIT_MS".into(),
            support::STARTUP_WAIT_MS.into(),
        ),
        ("CODEMCP_LOG".into(), "warn".into()),
        // Processes started one after another share the file store.
        ("XDG_STATE_HOME".into(), path_text(&state)),
    ];
    env.extend(all.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    World {
        gateway,
        root,
        audit,
        env,
    }
}

fn path_text(path: &Path) -> String {
    path.to_str().expect("utf-8").to_owned()
}

impl World {
    fn file(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// `fs_write_file(path=<root>/name, content=text)` as agent code.
    fn write(&self, name: &str, text: &str) -> String {
        format!(
            "fs_write_file(path={:?}, content={text:?})",
            self.file(name).to_str().expect("utf-8")
        )
    }

    /// Two writes, the second in a `try`; `n` counts the statements that
    /// ran, so none may run twice across the rounds (the result is 3).
    fn approve_then_decline(&self) -> String {
        format!(
            "n = 1\n{}\nn += 1\ntry:\n    {}\nexcept ToolError as e:\n    print('caught:', e)\nn += 1\nn",
            self.write("first.txt", "one"),
            self.write("second.txt", "two")
        )
    }

    fn audit_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.audit)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    async fn client(
        &self,
        mode: &str,
        answers: &[&str],
        calls: &[String],
        extra: &[&str],
    ) -> Value {
        approve(&self.gateway.url, mode, answers, calls, extra).await
    }

    /// approve.py against this world's gateway `via` HTTP or stdio.
    async fn client_via(
        &self,
        via: Via,
        mode: &str,
        answers: &[&str],
        calls: &[String],
        extra: &[&str],
    ) -> Value {
        match via {
            Via::Http => self.client(mode, answers, calls, extra).await,
            Via::Stdio => {
                let command = json!([bin(), "--config", self.gateway.config()]).to_string();
                let mut all = vec!["--command", command.as_str()];
                all.extend_from_slice(extra);
                let mut client = approve_command("stdio", mode, answers, calls, &all);
                client.envs(self.env.iter().map(|(k, v)| (k, v)));
                run_approve(client).await
            }
        }
    }
}

/// `tests/clients/approve.py URL …`: its JSON report.
async fn approve(
    url: &str,
    mode: &str,
    answers: &[&str],
    calls: &[String],
    extra: &[&str],
) -> Value {
    run_approve(approve_command(url, mode, answers, calls, extra)).await
}

fn approve_command(
    target: &str,
    mode: &str,
    answers: &[&str],
    calls: &[String],
    extra: &[&str],
) -> Command {
    let mut command = Command::new(python2());
    command
        .arg(repo().join("tests/clients/approve.py"))
        .arg(target)
        .args(["--mode", mode, "--answers", &json!(answers).to_string()])
        .args(["--calls", &json!(calls).to_string()])
        .args(extra);
    command
}

async fn run_approve(mut command: Command) -> Value {
    let output = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(90), output)
        .await
        .expect("approve.py finishes within 90 s")
        .expect("approve.py runs");
    serde_json::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap_or_else(|e| {
        panic!(
            "approve.py printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn text(report: &Value, i: usize) -> String {
    report["results"][i]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn exists(path: &Path) -> bool {
    path.exists()
}

#[tokio::test]
async fn an_approved_call_runs_and_a_declined_one_raises_tool_error_without_reaching_the_upstream()
{
    let w = world(&[]).await;
    // One snippet: the first write is approved, the second declined. The
    // first is not repeated: exactly one file, with its content.
    let code = format!(
        "{}\ntry:\n    {}\nexcept ToolError as e:\n    print('caught:', e)",
        w.write("a.txt", "approved"),
        w.write("b.txt", "declined")
    );
    let report = w
        .client("legacy", &["accept", "decline"], &[code], &[])
        .await;
    assert_eq!(
        report["asked"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    let message = report["asked"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Server: fs\nTool: write_file\n") && message.contains("approved"),
        "{message}"
    );
    assert!(
        text(&report, 0).contains("caught: denied by the user: fs.write_file"),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(w.file("a.txt")).ok().as_deref(),
        Some("approved")
    );
    assert!(
        !exists(&w.file("b.txt")),
        "a declined call never reaches the upstream"
    );

    let audit = w.audit_lines();
    let decisions: Vec<_> = audit
        .iter()
        .map(|l| (l["decision"].clone(), l["outcome"].clone()))
        .collect();
    assert_eq!(
        decisions,
        [
            (json!("approved"), json!("ok")),
            (json!("denied"), json!("none"))
        ],
        "{audit:?}"
    );
    assert_eq!(audit[0]["principal"], "anonymous");
    assert!(audit[0]["session"].as_str().is_some_and(|s| !s.is_empty()));
    let mode = std::fs::metadata(&w.audit)
        .expect("audit log")
        .permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );
    let metrics = support::scrape_metrics(&w.gateway.url, None).await;
    let approvals =
        |outcome: &str| metrics[&format!("codemcp_approvals_total{{outcome=\"{outcome}\"}}")];
    assert_eq!(
        [
            approvals("asked"),
            approvals("approved"),
            approvals("denied")
        ],
        [2.0, 1.0, 1.0],
        "{metrics:?}"
    );
}

#[tokio::test]
async fn the_rest_of_this_session_is_asked_once() {
    let w = world(&[]).await;
    for mode in ["legacy", "auto"] {
        let names = [1, 2, 3].map(|i| format!("{mode}-{i}.txt"));
        let calls = names.clone().map(|name| w.write(&name, "x"));
        let report = w.client(mode, &["session"], &calls, &[]).await;
        let asked = report["asked"].as_array().map(Vec::len);
        assert_eq!(asked, Some(1), "{mode}: {report}");
        for name in &names {
            assert!(exists(&w.file(name)), "{name}: {report}");
        }
    }
}

#[tokio::test]
async fn no_answer_in_time_or_a_client_that_cannot_ask_means_denied() {
    let w = world(&[("CODEMCP_APPROVAL_TIMEOUT_SECS", "1")]).await;
    let report = w
        .client("legacy", &["wait:3"], &[w.write("late.txt", "x")], &[])
        .await;
    assert!(
        text(&report, 0).contains("no answer within 1 s"),
        "{report}"
    );
    assert!(!exists(&w.file("late.txt")));

    let report = w
        .client(
            "legacy",
            &[],
            &[w.write("mute.txt", "x")],
            &["--no-elicitation"],
        )
        .await;
    let said = text(&report, 0);
    assert!(
        said.contains("cannot ask them") && said.contains("\"write_file\": \"allow\""),
        "{said}"
    );
    assert!(!exists(&w.file("mute.txt")));
    let report = w
        .client(
            "auto",
            &[],
            &[w.write("mute2026.txt", "x")],
            &["--no-elicitation"],
        )
        .await;
    assert_eq!(report["protocol"], "2026-07-28", "{report}");
    assert!(text(&report, 0).contains("cannot ask them"), "{report}");
    assert!(!exists(&w.file("mute2026.txt")));
}

#[tokio::test]
async fn a_2026_client_answers_input_required_and_the_run_resumes_where_it_paused() {
    // With the file store the run parks there; the memory store keeps no
    // snapshots, so there the run waits in the gateway for the retry.
    for store in ["file", "memory"] {
        resumes_where_it_paused(store).await;
    }
}

async fn resumes_where_it_paused(store: &str) {
    let w = world(&[("CODEMCP_SESSION_STORE", store)]).await;
    let report = w
        .client(
            "auto",
            &["accept", "decline"],
            &[w.approve_then_decline()],
            &[],
        )
        .await;
    assert_eq!(report["protocol"], "2026-07-28", "{report}");
    assert_eq!(
        report["asked"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    let metrics = support::scrape_metrics(&w.gateway.url, None).await;
    let approvals =
        |outcome: &str| metrics[&format!("codemcp_approvals_total{{outcome=\"{outcome}\"}}")];
    assert_eq!(
        [
            approvals("asked"),
            approvals("approved"),
            approvals("denied")
        ],
        [2.0, 1.0, 1.0],
        "{store}: {metrics:?}"
    );
    let result = &report["results"][0]["structuredContent"];
    assert_eq!(result["result"], 3, "{report}");
    assert!(
        result["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("denied by the user"),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(w.file("first.txt")).ok().as_deref(),
        Some("one")
    );
    assert!(!exists(&w.file("second.txt")));
    let decisions: Vec<_> = w
        .audit_lines()
        .iter()
        .map(|l| l["decision"].clone())
        .collect();
    assert_eq!(decisions, [json!("approved"), json!("denied")]);
}

#[tokio::test]
async fn a_denied_tool_does_not_exist_for_the_agent() {
    let w = world(&[]).await;
    std::fs::write(w.file("src.txt"), "s").expect("seed");
    let calls = [
        format!(
            "fs_move_file(source={:?}, destination={:?})",
            w.file("src.txt").to_str().unwrap(),
            w.file("dst.txt").to_str().unwrap()
        ),
        "[t['name'] for t in search_tools('move rename file', limit=20)]".to_owned(),
        "describe_tool('fs_move_file')".to_owned(),
    ];
    let report = w.client("legacy", &[], &calls, &[]).await;
    assert!(text(&report, 0).contains("NameError"), "{report}");
    assert!(!exists(&w.file("dst.txt")) && exists(&w.file("src.txt")));
    let found = &report["results"][1]["structuredContent"]["result"];
    assert!(!found.to_string().contains("move_file"), "{found}");
    assert!(text(&report, 2).contains("Error"), "{report}");

    // Nor in the tool description or the stub.
    let sdk = Command::new(support::bin())
        .arg("--config")
        .arg(w.gateway.config())
        .arg("sdk")
        .output()
        .await
        .expect("codemcp sdk");
    let sdk = String::from_utf8_lossy(&sdk.stdout);
    assert!(
        sdk.contains("fs_write_file") && !sdk.contains("move_file"),
        "{sdk}"
    );
    assert!(
        sdk.contains("Asks the user first"),
        "the stub says write_file asks"
    );
}

#[tokio::test]
async fn an_approval_answered_on_the_other_replica_resumes_the_run_there() {
    let Some(redis) = support::redis::Redis::start_or_skip() else {
        return;
    };
    let root = tempfile::tempdir().expect("root");
    let mut server = filesystem(root.path());
    server["policy"] = json!({"write_file": "ask"});
    let store = redis.url();
    let key = "k".repeat(40);
    // One gateway runs Monty in worker processes, the other in-process: a
    // parked run moves between placements as well as between gateways.
    let mut gateways = Vec::new();
    for placement in ["pool", "inprocess"] {
        let env = [
            ("CODEMCP_SESSION_STORE", store.as_str()),
            ("CODEMCP_SESSION_KEY", key.as_str()),
            ("CODEMCP_MONTY", placement),
        ];
        gateways.push(start_http(json!({"fs": server.clone()}), &env).await);
    }
    let path = |name: &str| root.path().join(name).to_str().expect("utf-8").to_owned();
    let code = format!(
        "n = 1\nprint('one')\nfs_write_file(path={:?}, content='a')\nn += 1\nprint('two')\n\
         fs_write_file(path={:?}, content='b')\nn += 1\nn",
        path("a.txt"),
        path("b.txt")
    );
    let also = ["--also", gateways[1].url.as_str()];
    let answers = ["accept", "accept"];
    let report = approve(&gateways[0].url, "auto", &answers, &[code], &also).await;
    assert_eq!(report["protocol"], "2026-07-28", "{report}");

    // Each answer went to the other gateway than the question came from.
    let calls: Vec<&Value> = report["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 3, "a call and two retries: {report}");
    assert_eq!(calls[0]["retry"], false, "{report}");
    assert!(
        calls[1]["retry"] == true && calls[2]["retry"] == true,
        "{report}"
    );
    assert_ne!(calls[0]["to"], calls[1]["to"], "{report}");
    assert_ne!(calls[1]["to"], calls[2]["to"], "{report}");

    // Nothing ran twice, and both writes happened once each.
    let result = &report["results"][0]["structuredContent"];
    assert_eq!(result["result"], 3, "{report}");
    assert_eq!(result["stdout"], "one\ntwo\n", "{report}");
    assert_eq!(result["tool_calls"], 2, "{report}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("a.txt"))
            .ok()
            .as_deref(),
        Some("a")
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("b.txt"))
            .ok()
            .as_deref(),
        Some("b")
    );
}

/// The last line of a result's text block.
fn last_line(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    text.trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

/// PyPI `mcp` 2.x in its default mode speaks 2026-07-28 on stdio too: no
/// `initialize`, its elicitation declared in each request's `_meta`. It is
/// asked through `input_required` on either transport.
#[tokio::test]
async fn the_default_python_client_approves_and_declines_over_stdio_and_http() {
    for via in [Via::Stdio, Via::Http] {
        let w = world(&[]).await;
        let code = w.approve_then_decline();
        let report = w
            .client_via(via, "default", &["accept", "decline"], &[code], &[])
            .await;
        assert_eq!(report["protocol"], "2026-07-28", "{via:?}: {report}");
        assert_eq!(
            report["asked"].as_array().map(Vec::len),
            Some(2),
            "{via:?}: {report}"
        );
        let result = &report["results"][0]["structuredContent"];
        assert_eq!(result["result"], 3, "{via:?}: {report}");
        assert!(
            result["stdout"]
                .as_str()
                .unwrap_or_default()
                .contains("denied by the user: fs.write_file"),
            "{via:?}: {report}"
        );
        assert_eq!(
            std::fs::read_to_string(w.file("first.txt")).ok().as_deref(),
            Some("one"),
            "{via:?}"
        );
        assert!(!exists(&w.file("second.txt")), "{via:?}");
        let decisions: Vec<_> = w
            .audit_lines()
            .iter()
            .map(|l| l["decision"].clone())
            .collect();
        assert_eq!(decisions, [json!("approved"), json!("denied")], "{via:?}");
    }
}

#[tokio::test]
async fn the_rest_of_this_session_is_asked_once_by_the_default_client_over_stdio_and_http() {
    let w = world(&[]).await;
    for via in [Via::Stdio, Via::Http] {
        let names = [1, 2, 3].map(|i| format!("{via:?}-{i}.txt"));
        let calls = names.clone().map(|name| w.write(&name, "x"));
        let report = w
            .client_via(via, "default", &["session"], &calls, &[])
            .await;
        assert_eq!(report["protocol"], "2026-07-28", "{via:?}: {report}");
        let asked = report["asked"].as_array().map(Vec::len);
        assert_eq!(asked, Some(1), "{via:?}: {report}");
        for name in &names {
            assert!(exists(&w.file(name)), "{name}: {report}");
        }
    }
}

/// Hosted connectors take an `input_required` that carries only a
/// `requestState` for an error: every question travels as an input request,
/// whether the run waits in memory (stdio, the memory store) or parks in the
/// session store (HTTP, the file store).
#[tokio::test]
async fn every_input_required_carries_an_input_request() {
    for (via, store) in [
        (Via::Stdio, "memory"),
        (Via::Http, "memory"),
        (Via::Http, "file"),
    ] {
        let w = world(&[("CODEMCP_SESSION_STORE", store)]).await;
        let code = ["a", "b", "c"]
            .map(|name| {
                format!(
                    "try:\n    {}\nexcept ToolError as e:\n    print('caught:', e)",
                    w.write(&format!("{name}.txt"), name)
                )
            })
            .join("\n");
        let answers = ["accept", "decline", "accept"];
        let report = w.client_via(via, "default", &answers, &[code], &[]).await;
        let rounds = report["input_required"].as_array().cloned();
        let rounds = rounds.unwrap_or_default();
        assert_eq!(rounds.len(), 3, "{via:?} {store}: {report}");
        for round in &rounds {
            let requests = round["inputRequests"].as_object();
            assert!(
                requests.is_some_and(|r| !r.is_empty()),
                "{via:?} {store}: an input_required without an input request: {round}"
            );
            for request in requests.into_iter().flat_map(|r| r.values()) {
                assert_eq!(request["method"], "elicitation/create", "{round}");
                assert!(request["params"]["message"].as_str().is_some(), "{round}");
            }
            assert!(
                round["requestState"]
                    .as_str()
                    .is_some_and(|s| !s.is_empty())
            );
        }
        assert!(exists(&w.file("a.txt")) && exists(&w.file("c.txt")));
        assert!(!exists(&w.file("b.txt")), "{via:?} {store}");
    }
}

/// A client that opens a new connection for every call (a new MCP session
/// over HTTP, a new gateway process over stdio) keeps its variables through
/// the handle each result names, in `structuredContent.session` and as the
/// text's last line, also across a question to its user.
#[tokio::test]
async fn per_call_sessions_keep_variables_by_handle() {
    let w = world(&[("CODEMCP_SESSION_STORE", "file")]).await;
    for via in [Via::Http, Via::Stdio] {
        for mode in ["default", "legacy"] {
            let file = format!("{via:?}-{mode}.txt");
            let calls = [
                "x = 41".to_owned(),
                format!("{}\nx += 1\nx", w.write(&file, "kept")),
                "x * 2".to_owned(),
            ];
            let report = w
                .client_via(via, mode, &["accept"], &calls, &["--per-call"])
                .await;
            let results = report["results"].as_array().cloned().unwrap_or_default();
            assert_eq!(results.len(), 3, "{via:?} {mode}: {report}");
            assert_eq!(
                results[1]["structuredContent"]["result"], 42,
                "{via:?} {mode}: {report}"
            );
            assert_eq!(
                results[2]["structuredContent"]["result"], 84,
                "{via:?} {mode}: {report}"
            );
            let handle = results[0]["structuredContent"]["session"].clone();
            assert!(handle.as_str().is_some_and(|h| !h.is_empty()), "{report}");
            for result in &results {
                assert_eq!(result["structuredContent"]["session"], handle, "{report}");
                assert_eq!(
                    last_line(result),
                    format!("[session: {}]", handle.as_str().unwrap_or_default()),
                    "{via:?} {mode}: {result}"
                );
            }
            assert_eq!(
                report["asked"].as_array().map(Vec::len),
                Some(1),
                "{report}"
            );
            assert!(exists(&w.file(&file)), "{via:?} {mode}: {report}");
        }
    }
}

/// Whether the user can be asked is decided per request from what it
/// declares: the same default client over stdio is asked when it declares
/// elicitation, and told clearly why not when it does not.
#[tokio::test]
async fn a_2026_request_declaring_no_elicitation_is_refused_clearly_and_one_declaring_it_is_asked()
{
    let w = world(&[]).await;
    let mute = [w.write("mute.txt", "x")];
    let report = w
        .client_via(Via::Stdio, "default", &[], &mute, &["--no-elicitation"])
        .await;
    assert_eq!(report["protocol"], "2026-07-28", "{report}");
    let said = text(&report, 0);
    assert!(
        said.contains("cannot ask them") && said.contains("\"write_file\": \"allow\""),
        "{said}"
    );
    assert_eq!(report["input_required"], json!([]), "{report}");
    assert!(!exists(&w.file("mute.txt")));

    let asked = [w.write("asked.txt", "x")];
    let report = w
        .client_via(Via::Stdio, "default", &["accept"], &asked, &[])
        .await;
    assert_eq!(
        report["asked"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert!(exists(&w.file("asked.txt")), "{report}");
}
