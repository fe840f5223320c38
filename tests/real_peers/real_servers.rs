//! 36 real MCP servers from npm and PyPI (`tests/real_servers/servers.json`, pinned in
//! `scripts/test-deps/servers/`) behind one gateway, with no network: every one joins, every
//! tool is a function, the stub passes `mypy --strict`, `describe_tool` answers for every tool,
//! offline calls give what a direct call through the PyPI `mcp` client gives, and calls their
//! schema rules out never reach the server.
//!
//! `tests/real_servers/suite.py` does the driving (once for all the tests here, a few minutes on
//! a loaded 2-core machine) and writes a JSON report; these tests judge it. They skip with a
//! message when `.deps/servers` is not installed (`scripts/test-deps.sh servers`) unless
//! `CI=true`. `CODEMCP_REAL_SERVERS_REPORT=FILE` keeps the report.

use crate::support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// Where the pinned servers are, or `None` (and why) when they are not installed.
fn servers_dir() -> Result<PathBuf, String> {
    let dir = std::env::var_os("CODEMCP_TEST_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| support::repo().join(".deps/servers"));
    if dir.join("py").is_dir() && dir.join("node/node_modules").is_dir() {
        Ok(dir)
    } else {
        Err(format!(
            "{} is not installed: run scripts/test-deps.sh servers",
            dir.display()
        ))
    }
}

/// The suite's report, made once; `None` when the servers are not installed outside CI.
fn report() -> Option<&'static Value> {
    static REPORT: OnceLock<Option<Value>> = OnceLock::new();
    REPORT
        .get_or_init(|| {
            let dir = match servers_dir() {
                Ok(dir) => dir,
                Err(why) if std::env::var("CI").as_deref() == Ok("true") => panic!("{why}"),
                Err(why) => {
                    eprintln!("skipping the real-server suite: {why}");
                    return None;
                }
            };
            let _alone = crate::ONE_AT_A_TIME.blocking_lock();
            let started = std::time::Instant::now();
            let out = Command::new(support::python2())
                .arg(support::repo().join("tests/real_servers/suite.py"))
                .arg("--codemcp")
                .arg(support::bin())
                .arg("--servers")
                .arg(&dir)
                .arg("--peers")
                .arg(support::node_modules())
                .env("CODEMCP_MONTY_BIN", support::monty_bin())
                .stderr(std::process::Stdio::inherit())
                .output()
                .expect("run tests/real_servers/suite.py");
            assert!(out.status.success(), "suite.py failed: {}", out.status);
            if let Some(keep) = std::env::var_os("CODEMCP_REAL_SERVERS_REPORT") {
                std::fs::write(keep, &out.stdout).expect("keep the report");
            }
            let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
            eprintln!(
                "real-server suite: {:.0} s (isolation: {}, direct {} s, gateway {} s, joined after {} s)",
                started.elapsed().as_secs_f64(),
                report["isolation"],
                report["direct_s"],
                report["gateway_s"],
                report["gateway"]["join"]["joined_s"]
            );
            Some(report)
        })
        .as_ref()
}

/// The suite's servers with what each side saw of them.
fn servers(report: &Value) -> Vec<(&str, &Value, &Value)> {
    report["servers"]
        .as_array()
        .expect("server names")
        .iter()
        .filter_map(Value::as_str)
        .map(|name| {
            (
                name,
                &report["direct"][name],
                &report["gateway"]["servers"][name],
            )
        })
        .collect()
}

#[test]
fn every_real_server_starts_offline_and_joins_the_gateway() {
    let Some(report) = report() else { return };
    assert!(servers(report).len() >= 20, "{}", report["servers"]);
    for (name, direct, _) in servers(report) {
        assert!(
            direct["error"].is_null(),
            "{name} directly: {}",
            direct["error"]
        );
        assert!(
            direct["tools"].as_array().is_some_and(|t| !t.is_empty()),
            "{name} lists no tools"
        );
    }
    let join = &report["gateway"]["join"];
    assert!(
        join["joined_s"].is_number(),
        "not every server joined: {}",
        join["description_tail"]
    );
}

#[test]
fn every_tool_of_every_real_server_is_a_function() {
    let Some(report) = report() else { return };
    let defs: Vec<&str> = report["gateway"]["stub"]["defs"]
        .as_array()
        .expect("the stub's functions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut total = 0;
    for (name, direct, gateway) in servers(report) {
        let tools = direct["tools"].as_array().expect("tools");
        let described = gateway["described"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {}", gateway["describe_error"]));
        let functions = gateway["functions"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: a function is missing: {}", gateway["functions"]));
        assert_eq!(described.len(), tools.len(), "{name}");
        assert_eq!(functions.len(), tools.len(), "{name}: {described:?}");
        assert!(functions.iter().all(|f| f == true), "{name}: {functions:?}");
        for d in described {
            let function = d["name"].as_str().unwrap_or_default();
            assert!(defs.contains(&function), "{name}: {d} is not in the stub");
        }
        total += tools.len();
    }
    eprintln!("{total} tools, each a function");
}

#[test]
fn the_stub_of_every_real_server_passes_mypy_strict() {
    let Some(report) = report() else { return };
    let stub = &report["gateway"]["stub"];
    assert!(
        stub["mypy_status"].is_number(),
        "mypy did not run (scripts/test-deps.sh servers installs it): {stub}"
    );
    assert_eq!(
        stub["mypy_status"],
        0,
        "mypy --strict on sdk.pyi:\n{}",
        stub["mypy_output"].as_str().unwrap_or_default()
    );
}

#[test]
fn describe_tool_answers_for_every_real_tool() {
    let Some(report) = report() else { return };
    for (name, _, gateway) in servers(report) {
        for d in gateway["described"].as_array().expect("described") {
            assert!(
                d["name"].is_string() && d["signature"].is_string(),
                "{name}: describe_tool({}) gave {d}",
                d["tool"]
            );
        }
    }
}

/// The value (or the error text) a call gives through the gateway and directly.
fn same_answer(direct: &Value, gateway: &Value) -> bool {
    match (direct.get("value"), direct.get("error")) {
        (Some(value), _) => gateway.get("value") == Some(value),
        (None, Some(Value::String(text))) => gateway["error"]
            .as_str()
            .is_some_and(|g| g.contains(text.trim())),
        _ => false,
    }
}

#[test]
fn offline_calls_through_the_gateway_match_direct_calls() {
    let Some(report) = report() else { return };
    let mut count = 0;
    for (name, direct, gateway) in servers(report) {
        let want = direct["calls"].as_array().expect("direct calls");
        let got = gateway["calls"].as_array().expect("gateway calls");
        assert_eq!(want.len(), got.len(), "{name}");
        for (i, (w, g)) in want.iter().zip(got).enumerate() {
            assert!(
                same_answer(w, g),
                "{name} call {i}:\n direct:  {w}\n gateway: {g}"
            );
            count += 1;
        }
    }
    assert!(count >= 40, "only {count} calls");
}

#[test]
fn calls_a_real_schema_rules_out_never_reach_the_server() {
    let Some(report) = report() else { return };
    let mut count = 0;
    for (name, _, gateway) in servers(report) {
        for case in gateway["invalid"].as_array().expect("invalid calls") {
            assert!(
                case["is_error"] == true && case["tool_calls"] == 0,
                "{name}: {case} reached the server"
            );
            count += 1;
        }
    }
    assert!(count >= 300, "only {count} invalid calls");
}
