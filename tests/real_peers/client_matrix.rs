//! The client matrix (issue 26): every real MCP client that installs here from
//! npm or PyPI drives the gateway over stdio and over Streamable HTTP through
//! the same scenario, one probe per client (`tests/clients/matrix/`), and each
//! capability is recorded as pass, unsupported by the client (why) or fail.
//!
//! The test fails when a cell that `tests/clients/matrix.expected.json` records
//! as passing does not pass (a table in `docs/clients.md` that differs otherwise
//! is only noted). `UPDATE_MATRIX=1` rewrites both from the run instead.
//! The run also leaves `client-matrix.json` and `client-matrix.md` in cargo's
//! `CARGO_TARGET_TMPDIR`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{self, Setup, bin, monty_bin, node_modules, odd, python2, repo, start_http};
use serde_json::{Value, json};
use tokio::process::Command;

mod render;

/// The capabilities each probe reports, in the table's order.
pub const CELLS: [&str; 10] = [
    "connect",
    "list",
    "call",
    "state_implicit",
    "state_handle",
    "approval",
    "list_changed",
    "progress",
    "cancellation",
    "resources",
];

const TRANSPORTS: [&str; 2] = ["stdio", "http"];

/// Probes running at once: each starts a gateway and an upstream, on a
/// machine that may have two loaded cores.
const PARALLEL: usize = 3;

/// One client: how to run its probe (the target arguments are added per transport).
struct Probe {
    id: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

fn script(name: &str) -> String {
    repo()
        .join("tests/clients/matrix")
        .join(name)
        .display()
        .to_string()
}

fn python_probe(id: &'static str, python: PathBuf, file: &str, client: &str) -> Probe {
    Probe {
        id,
        program: python,
        args: vec![script(file), "--client".into(), client.into()],
        env: Vec::new(),
    }
}

/// The `version` field of an npm package's package.json under `dir`.
fn npm_version(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
    serde_json::from_str::<Value>(&text).unwrap_or_default()["version"]
        .as_str()
        .unwrap_or("?")
        .to_owned()
}

/// The first of `candidates` that exists (npm may nest or hoist a package).
fn first_existing(candidates: &[PathBuf]) -> PathBuf {
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| candidates[0].clone())
}

fn inspector_probe(
    id: &'static str,
    node: PathBuf,
    package: &Path,
    entry: &str,
    sdk: &Path,
) -> Probe {
    // The Inspector 2.x gives a stdio server only the environment named with -e.
    let pass_env = if npm_version(package).starts_with('2') {
        "1"
    } else {
        "0"
    };
    Probe {
        id,
        program: python2(),
        args: vec![
            script("inspector.py"),
            "--client".into(),
            npm_version(package),
        ],
        env: vec![
            ("INSPECTOR_NODE".into(), node.display().to_string()),
            (
                "INSPECTOR_JS".into(),
                package.join(entry).display().to_string(),
            ),
            ("INSPECTOR_SDK".into(), npm_version(sdk)),
            ("INSPECTOR_PASS_ENV".into(), pass_env.into()),
        ],
    }
}

/// A pinned test peer: the path in `var`, else `default` under the repository.
fn dep_path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(|| repo().join(default), PathBuf::from)
}

fn ts_probe(id: &'static str, major: &str, dir: &Path, mode: &str) -> Probe {
    Probe {
        id,
        program: node22(),
        args: vec![script("ts_sdk.mjs"), "--client".into(), mode.into()],
        env: vec![
            ("TS_SDK".into(), major.into()),
            ("TS_SDK_DIR".into(), dir.display().to_string()),
        ],
    }
}

fn node22() -> PathBuf {
    std::env::var_os("CODEMCP_TEST_NODE22")
        .map_or_else(|| node_modules().join(".bin/node"), PathBuf::from)
}

/// The client packages installed for the matrix only (scripts/test-deps.sh clients).
fn clients_node_modules() -> PathBuf {
    dep_path(
        "CODEMCP_TEST_CLIENTS_NODE_MODULES",
        ".deps/clients-node/node_modules",
    )
}

fn probes() -> Vec<Probe> {
    let nm = node_modules();
    let inspector1 = nm.join("@modelcontextprotocol/inspector");
    let sdk1 = first_existing(&[
        inspector1.join("node_modules/@modelcontextprotocol/sdk"),
        nm.join("@modelcontextprotocol/sdk"),
    ]);
    let cnm = clients_node_modules();
    let inspector2 = cnm.join("@modelcontextprotocol/inspector");
    let sdk2 = first_existing(&[
        inspector2.join("node_modules/@modelcontextprotocol/client"),
        cnm.join("@modelcontextprotocol/client"),
    ]);
    let client2 = cnm.join("@modelcontextprotocol/client");
    let fw2 = dep_path("CODEMCP_TEST_FW2", ".deps/fw2/bin/python");
    let fw1 = dep_path("CODEMCP_TEST_FW1", ".deps/fw1/bin/python");
    let python1 = support::dep("CODEMCP_TEST_PY1", ".deps/py1/bin/python");
    vec![
        python_probe("mcp2-auto", python2(), "mcp_sdk.py", "auto"),
        python_probe("mcp2-legacy", python2(), "mcp_sdk.py", "legacy"),
        python_probe("mcp1", python1, "mcp_sdk.py", "legacy"),
        inspector_probe(
            "inspector-sdk1",
            PathBuf::from("node"),
            &inspector1,
            "cli/build/cli.js",
            &sdk1,
        ),
        inspector_probe(
            "inspector-sdk2",
            node22(),
            &inspector2,
            "clients/launcher/build/index.js",
            &sdk2,
        ),
        ts_probe(
            "ts-sdk1",
            "1",
            &nm.join("@modelcontextprotocol/sdk"),
            "legacy",
        ),
        ts_probe("ts-sdk2-legacy", "2", &client2, "legacy"),
        ts_probe("ts-sdk2-auto", "2", &client2, "auto"),
        python_probe(
            "openai-agents",
            fw2.clone(),
            "frameworks.py",
            "openai-agents",
        ),
        python_probe("pydantic-ai", fw2, "frameworks.py", "pydantic-ai"),
        python_probe("langchain", fw1, "frameworks.py", "langchain"),
    ]
}

/// The gateway's one upstream: odd_server.py with `Send_Email` on `ask`.
fn servers() -> Value {
    let mut server = odd(json!({}));
    server["policy"] = json!({"Send_Email": "ask"});
    // A loaded machine starting many gateways at once may take long to start Python.
    server["timeout"] = json!(120_000);
    json!({"odd": server})
}

/// What a gateway started by a probe over stdio inherits from it.
fn gateway_env(setup: &Setup) -> Vec<(String, String)> {
    vec![
        (
            "CODEMCP_CONFIG".into(),
            setup.config().display().to_string(),
        ),
        (
            "CODEMCP_MONTY_BIN".into(),
            monty_bin().display().to_string(),
        ),
        ("CODEMCP_FALLBACK".into(), "none".into()),
        (
            "CODEMCP_STARTUP_WAIT_MS".into(),
            support::STARTUP_WAIT_MS.into(),
        ),
        // list_changed looks for the new tool's signature in the description.
        (
            "CODEMCP_DESCRIPTION_BUDGET".into(),
            support::DESCRIPTION_BUDGET.into(),
        ),
        // Gateways started one after another (state by handle) share the file store:
        // the stdio default, `memory`, ends with its process.
        ("CODEMCP_SESSION_STORE".into(), "file".into()),
        (
            "XDG_STATE_HOME".into(),
            setup.dir.path().join("state").display().to_string(),
        ),
        ("CODEMCP_LOG".into(), "warn".into()),
    ]
}

/// Runs one probe against one transport: its report, or a report whose every
/// cell fails with what went wrong.
async fn run(probe: &Probe, transport: &str) -> Value {
    let started = Instant::now();
    let setup = Setup::new(servers());
    let mut command = Command::new(&probe.program);
    command
        .args(&probe.args)
        .args(["--target", transport, "--tag", &probe.id.replace('-', "_")])
        .envs(gateway_env(&setup))
        .envs(probe.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut gateway = if transport == "http" {
        let gateway = start_http(servers(), &[]).await;
        command.args(["--url", &gateway.url]);
        Some(gateway)
    } else {
        command.args(["--command", &json!([bin()]).to_string()]);
        None
    };
    let output = tokio::time::timeout(Duration::from_secs(300), command.output()).await;
    // A failed cell over HTTP is the client's or the gateway's: say which died.
    let gateway_exit = gateway
        .as_mut()
        .and_then(|g| g.child.try_wait().ok().flatten())
        .map(|status| format!(" (the gateway exited during the probe: {status})"))
        .unwrap_or_default();
    let report = match output {
        Ok(Ok(out)) => {
            // Each probe's stderr (the clients' own logs), for a failing cell's story.
            let logs = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("client-matrix");
            let _ = std::fs::create_dir_all(&logs);
            let _ = std::fs::write(
                logs.join(format!("{}-{transport}.stderr", probe.id)),
                &out.stderr,
            );
            serde_json::from_slice::<Value>(&out.stdout).unwrap_or_else(|_| {
                let stderr = String::from_utf8_lossy(&out.stderr);
                failed(&format!("the probe printed no report: {}", tail(&stderr)))
            })
        }
        Ok(Err(e)) => failed(&format!("the probe did not start: {e}")),
        Err(_) => failed("the probe took longer than 300 s"),
    };
    eprintln!(
        "client matrix: {} over {transport}: {:.1} s{gateway_exit}",
        probe.id,
        started.elapsed().as_secs_f64()
    );
    report
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

fn failed(why: &str) -> Value {
    let cells: serde_json::Map<String, Value> = CELLS
        .iter()
        .map(|c| ((*c).to_owned(), json!({"status": "fail", "note": why})))
        .collect();
    json!({"client": "?", "cells": cells})
}

/// `{id: {transport: {cell: status}}}`: the expected statuses.
type Expected = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// The cells `expected` has passing for this probe and transport that `report` does not pass.
fn lost(expected: &Expected, id: &str, transport: &str, report: &Value) -> Vec<String> {
    let Some(cells) = expected.get(id).and_then(|t| t.get(transport)) else {
        return Vec::new();
    };
    cells
        .iter()
        .filter(|(cell, status)| {
            *status == "pass" && report["cells"][cell.as_str()]["status"] != "pass"
        })
        .map(|(cell, _)| cell.clone())
        .collect()
}

/// `{id: {transport: {cell: status}}}` of a matrix.
fn statuses(matrix: &[Value]) -> BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>> {
    let mut out: BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>> = BTreeMap::new();
    for row in matrix {
        let cells = CELLS
            .iter()
            .map(|c| {
                let status = row["cells"][*c]["status"].as_str().unwrap_or("fail");
                ((*c).to_owned(), status.to_owned())
            })
            .collect();
        out.entry(row["id"].as_str().unwrap_or("?").to_owned())
            .or_default()
            .insert(row["transport"].as_str().unwrap_or("?").to_owned(), cells);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_passes_the_cells_it_passed_before() {
    let _alone = crate::ONE_AT_A_TIME.lock().await;
    let started = Instant::now();
    let expected_path = repo().join("tests/clients/matrix.expected.json");
    let expected: Expected =
        serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap_or_default())
            .unwrap_or_default();
    let expected = Arc::new(expected);
    let limit = Arc::new(tokio::sync::Semaphore::new(PARALLEL));
    let mut runs = tokio::task::JoinSet::new();
    for (index, probe) in probes().into_iter().enumerate() {
        let probe = Arc::new(probe);
        for (t, transport) in TRANSPORTS.iter().enumerate() {
            let (probe, limit, expected) = (probe.clone(), limit.clone(), expected.clone());
            runs.spawn(async move {
                let _permit = limit.acquire_owned().await.expect("semaphore");
                let mut report = run(&probe, transport).await;
                // A loaded machine can starve a probe (an upstream slow to start): one more try
                // before a cell that passed before counts as failed.
                if !lost(&expected, probe.id, transport, &report).is_empty() {
                    eprintln!("client matrix: {} over {transport}: again", probe.id);
                    report = run(&probe, transport).await;
                }
                report["id"] = json!(probe.id);
                report["transport"] = json!(transport);
                (index * TRANSPORTS.len() + t, report)
            });
        }
    }
    let mut rows = Vec::new();
    while let Some(done) = runs.join_next().await {
        rows.push(done.expect("a probe task"));
    }
    rows.sort_by_key(|(order, _)| *order);
    let matrix: Vec<Value> = rows.into_iter().map(|(_, r)| r).collect();
    eprintln!(
        "client matrix: {:.1} s in all",
        started.elapsed().as_secs_f64()
    );

    let markdown = render::block(&matrix);
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        out.join("client-matrix.json"),
        serde_json::to_string_pretty(&matrix).unwrap(),
    )
    .expect("write client-matrix.json");
    std::fs::write(out.join("client-matrix.md"), &markdown).expect("write client-matrix.md");

    let docs_path = repo().join("docs/clients.md");
    let actual = statuses(&matrix);
    if std::env::var("UPDATE_MATRIX").as_deref() == Ok("1") {
        let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
        std::fs::write(&expected_path, text).expect("write matrix.expected.json");
        let doc = std::fs::read_to_string(&docs_path).unwrap_or_default();
        std::fs::write(&docs_path, render::splice(&doc, &markdown)).expect("write docs/clients.md");
        return;
    }
    assert!(
        !expected.is_empty(),
        "tests/clients/matrix.expected.json is missing (UPDATE_MATRIX=1 writes it)"
    );
    let mut regressions = Vec::new();
    for (id, transports) in expected.iter() {
        for (transport, cells) in transports {
            for (cell, status) in cells {
                let now = actual
                    .get(id)
                    .and_then(|t| t.get(transport))
                    .and_then(|c| c.get(cell))
                    .map_or("missing", String::as_str);
                if status == "pass" && now != "pass" {
                    regressions.push(format!("{id} over {transport}: {cell} is now {now}"));
                }
            }
        }
    }
    assert!(
        regressions.is_empty(),
        "cells that passed before do not pass now:\n{}\n\nthe run: {}",
        regressions.join("\n"),
        out.join("client-matrix.md").display()
    );
    // Regressions fail above. A cell that got better (or a known FAIL that
    // passed this time, on a quieter machine) only asks for a refresh: failing
    // on it would make the suite flaky without catching anything.
    let doc = std::fs::read_to_string(&docs_path).unwrap_or_default();
    if render::current(&doc) != Some(markdown.as_str()) {
        eprintln!(
            "note: the table in docs/clients.md differs from this run's ({}) without a \
             regression; rerun with UPDATE_MATRIX=1 to refresh it",
            out.join("client-matrix.md").display()
        );
    }
}
