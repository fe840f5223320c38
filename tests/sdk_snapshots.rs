//! What the model sees of the real peers' catalogs: the `execute_python` description (at the
//! default budget and at a small one), the `sdk.pyi` stub, and a few `search_tools` answers,
//! for the peers the other tests run (server-everything, -filesystem and -memory, and our own
//! `odd_server.py` and `broken_server.py`), pinned as `insta` snapshots in `tests/snapshots/`.
//!
//! A change in what the model sees fails here and shows up in review as a diff of those files.
//! To accept an intended change: `cargo insta review` (from `cargo install cargo-insta`), or
//! rerun with `INSTA_UPDATE=always` and read `git diff tests/snapshots/`. With `CI=true` insta
//! writes nothing and a mismatch fails.
//!
//! The peers are listed with the gateway's own conversion (`ToolDef::from_mcp`) by a client
//! that advertises what the gateway's does (no capabilities): a catalog depends on that.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

mod support;

use std::sync::OnceLock;

use codemcp::sdk::Sdk;
use codemcp::tooldef::ToolDef;
use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

/// `CODEMCP_DESCRIPTION_BUDGET`'s default.
const DEFAULT_BUDGET: usize = 8_000;
/// Small enough for the compact index by topics.
const SMALL_BUDGET: usize = 1_600;

/// The client side of the listing, as the gateway introduces itself upstream.
#[derive(Clone)]
struct Lister;

impl rmcp::ClientHandler for Lister {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("codemcp", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A peer's tools, as the gateway would hold them.
async fn list(server: &str, command: tokio::process::Command) -> Vec<ToolDef> {
    let transport = TokioChildProcess::new(command).expect("spawn the peer");
    let client = Lister
        .serve(transport)
        .await
        .unwrap_or_else(|e| panic!("MCP handshake with {server}: {e}"));
    let tools = client.list_all_tools().await.expect("tools/list");
    let _ = client.cancel().await;
    tools
        .into_iter()
        .map(|t| ToolDef::from_mcp(server, t))
        .collect()
}

/// `node <package>/dist/index.js args…` for one of the pinned node peers.
fn node(package: &str, args: &[&std::ffi::OsStr]) -> tokio::process::Command {
    let script = support::node_modules()
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    tokio::process::Command::new("node").configure(|c| {
        c.arg(script).args(args);
    })
}

fn python_peer(script: &str) -> tokio::process::Command {
    let script = support::repo().join("tests/servers").join(script);
    tokio::process::Command::new(support::python2()).configure(|c| {
        c.arg(script).env("ODD_LOG_LEVEL", "WARNING");
    })
}

/// The SDK over every peer, built once for all the tests here.
fn sdk() -> &'static Sdk {
    static SDK: OnceLock<Sdk> = OnceLock::new();
    SDK.get_or_init(|| {
        let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
        let scratch = tempfile::tempdir().expect("tempdir");
        let memory = tokio::process::Command::new("node").configure(|c| {
            c.arg(
                support::node_modules().join("@modelcontextprotocol/server-memory/dist/index.js"),
            )
            .env("MEMORY_FILE_PATH", scratch.path().join("memory.jsonl"));
        });
        let tools = runtime.block_on(async {
            let lists = futures::future::join_all([
                list("everything", node("server-everything", &["stdio".as_ref()])),
                list(
                    "fs",
                    node("server-filesystem", &[scratch.path().as_os_str()]),
                ),
                list("memory", memory),
                list("odd", python_peer("odd_server.py")),
                list("broken", python_peer("broken_server.py")),
            ])
            .await;
            lists.concat()
        });
        Sdk::build(&tools)
    })
}

#[test]
fn description_at_the_default_budget() {
    insta::assert_snapshot!(sdk().description(DEFAULT_BUDGET));
}

#[test]
fn description_at_a_small_budget() {
    insta::assert_snapshot!(sdk().description(SMALL_BUDGET));
}

#[test]
fn stub() {
    insta::assert_snapshot!(sdk().stub());
}

#[test]
fn search_answers() {
    let queries = [
        "add two numbers",
        "read a file",
        "create entities in the knowledge graph",
        "send an email",
        "long running operation with progress",
        "",
    ];
    let answers: Vec<String> = queries
        .iter()
        .map(|query| {
            let hits: Vec<String> = sdk()
                .search(query, 3)
                .into_iter()
                .map(|h| format!("  {}  # {}", h.signature, h.summary))
                .collect();
            format!("{query:?}\n{}", hits.join("\n"))
        })
        .collect();
    insta::assert_snapshot!(answers.join("\n\n"));
}
