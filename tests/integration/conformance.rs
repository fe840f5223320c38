//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in scripts/test-deps) against `codemcp serve --http`: every server
//! scenario that applies to our capabilities must pass.
//!
//! The suite's other scenarios call its own fixture tools, prompts and
//! resources (`test_*`, `test://...`) and so do not apply to a gateway whose one
//! tool is `execute_python`. Which optional scenarios apply is read from the
//! capabilities codemcp declares, so declaring a capability switches its
//! scenario on.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::PathBuf;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::ServerCapabilities;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

/// Scenarios for any MCP server with tools over Streamable HTTP.
const ALWAYS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// A scenario per optional capability, as `conformance list --server` names them.
fn optional(caps: &ServerCapabilities) -> Vec<&'static str> {
    let mut scenarios = Vec::new();
    if caps.logging.is_some() {
        scenarios.push("logging-set-level");
    }
    if let Some(resources) = &caps.resources {
        scenarios.push("resources-list");
        if resources.subscribe == Some(true) {
            scenarios.extend(["resources-subscribe", "resources-unsubscribe"]);
        }
    }
    if caps.prompts.is_some() {
        scenarios.push("prompts-list");
    }
    scenarios
}

async fn capabilities(url: &str) -> ServerCapabilities {
    support::init_tls();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    let client = ().serve(transport).await.expect("MCP over HTTP");
    let caps = client
        .peer_info()
        .expect("server info after initialize")
        .capabilities
        .clone();
    let _ = client.cancel().await;
    caps
}

/// Runs one scenario; returns its checks (from `checks.json`), the suite's output and whether it exited 0.
async fn run_scenario(
    node: &PathBuf,
    cli: &PathBuf,
    url: &str,
    scenario: &str,
) -> (Vec<Value>, String, bool) {
    let out = tempfile::tempdir().expect("tempdir");
    let run = tokio::process::Command::new(node)
        .arg(cli)
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(out.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .unwrap_or_else(|_| panic!("{scenario}: no result within 120 s"))
        .expect("run the conformance suite");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut checks = Vec::new();
    for entry in std::fs::read_dir(out.path())
        .expect("results dir")
        .flatten()
    {
        let file = entry.path().join("checks.json");
        if let Ok(body) = std::fs::read_to_string(&file) {
            let parsed: Value = serde_json::from_str(&body).expect("checks.json is JSON");
            checks.extend(parsed.as_array().cloned().unwrap_or_default());
        }
    }
    (checks, text, output.status.success())
}

#[tokio::test]
async fn every_applicable_conformance_scenario_passes() {
    let (node, cli) = support::conformance_suite();
    let gateway = support::start_http(json!({}), &[]).await;
    let caps = capabilities(&gateway.url).await;
    let scenarios: Vec<&str> = ALWAYS.iter().copied().chain(optional(&caps)).collect();
    let mut failures = Vec::new();
    for scenario in &scenarios {
        let (checks, text, exited_ok) = run_scenario(&node, &cli, &gateway.url, scenario).await;
        let count = |status: &str| checks.iter().filter(|c| c["status"] == status).count();
        let (passed, failed, warnings) = (count("SUCCESS"), count("FAILURE"), count("WARNING"));
        eprintln!("conformance: {scenario}: {passed} passed, {failed} failed, {warnings} warnings");
        if !exited_ok || failed > 0 || passed == 0 {
            failures.push(format!(
                "{scenario}: {passed} passed, {failed} failed\n{text}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "conformance failures:\n{}",
        failures.join("\n")
    );
}
