//! `search_tools` ranking on a 1,000-tool catalog: the generated `ODD_TOOLS=1000` catalog of
//! our FastMCP test server, listed over MCP, indexed by the SDK, and asked the 30
//! natural-language queries of `tests/servers/catalog_queries.json`.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use codemcp_sdk::Sdk;
use codemcp_sdk::tooldef::ToolDef;
use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::Value;

/// The bar: the intended tool in the top 3 for at least 27 of the 30 queries.
const REQUIRED_TOP3: usize = 27;

async fn catalog_1000() -> Vec<ToolDef> {
    let script = support::repo().join("tests/servers/odd_server.py");
    let command = tokio::process::Command::new(support::python2()).configure(|c| {
        c.arg(&script)
            .env("ODD_TOOLS", "1000")
            .env("ODD_LOG_LEVEL", "WARNING");
    });
    let client =
        ().serve(TokioChildProcess::new(command).expect("spawn odd_server"))
            .await
            .expect("MCP handshake with odd_server");
    let tools = client.list_all_tools().await.expect("tools/list");
    let _ = client.cancel().await;
    tools
        .into_iter()
        .map(|t| ToolDef::from_mcp("odd", t))
        .collect()
}

#[tokio::test]
async fn intended_tool_in_top_three_for_27_of_30_queries() {
    let tools = catalog_1000().await;
    assert!(tools.len() >= 1_000, "{} tools", tools.len());
    let sdk = Sdk::build(&tools);
    let queries: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(support::repo().join("tests/servers/catalog_queries.json"))
            .expect("read catalog_queries.json"),
    )
    .expect("catalog_queries.json is a JSON list");
    assert_eq!(queries.len(), 30);

    let mut report = Vec::new();
    let mut hits = 0;
    for q in &queries {
        let (query, tool) = (q["query"].as_str().unwrap(), q["tool"].as_str().unwrap());
        let expected = &sdk
            .lookup(tool)
            .expect("the intended tool is in the catalog")
            .py_name;
        let top: Vec<String> = sdk.search(query, 3).into_iter().map(|h| h.name).collect();
        let found = top.contains(expected);
        hits += usize::from(found);
        report.push(format!(
            "{} {query:?} → want {expected}, got {top:?}",
            if found { "ok  " } else { "MISS" }
        ));
    }
    println!("{hits}/30 in the top 3\n{}", report.join("\n"));
    assert!(
        hits >= REQUIRED_TOP3,
        "{hits}/30 in the top 3:\n{}",
        report.join("\n")
    );
}

#[tokio::test]
async fn describe_tool_gives_signature_docs_and_schema() {
    let tools = catalog_1000().await;
    let sdk = Sdk::build(&tools);
    let d = sdk
        .describe("billing_refund_invoice")
        .expect("billing_refund_invoice is described");
    let signature = d["signature"].as_str().unwrap();
    assert!(
        signature.starts_with("odd_billing_refund_invoice("),
        "{signature}"
    );
    assert!(d["description"].as_str().unwrap().len() > 40, "{d}");
    assert_eq!(d["input_schema"]["type"], "object", "{d}");
    assert!(
        d["parameters"].as_array().is_some_and(|p| !p.is_empty()),
        "{d}"
    );
}
