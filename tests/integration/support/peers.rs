//! The real peers' catalogs, listed with the gateway's own conversion
//! (`ToolDef::from_mcp`) by a client that advertises what the gateway's does
//! (no capabilities): a catalog depends on that.

use codemcp_sdk::tooldef::ToolDef;
use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

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
    let script = super::node_modules()
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    tokio::process::Command::new("node").configure(|c| {
        c.arg(script).args(args);
    })
}

fn python_peer(script: &str) -> tokio::process::Command {
    let script = super::repo().join("tests/servers").join(script);
    tokio::process::Command::new(super::python2()).configure(|c| {
        c.arg(script).env("ODD_LOG_LEVEL", "WARNING");
    })
}

/// The tools of every peer the tests run (server-everything as `everything`,
/// -filesystem as `fs`, -memory as `memory`, `odd_server.py` as `odd` and
/// `broken_server.py` as `broken`), as the gateway holds them.
pub fn catalog() -> Vec<ToolDef> {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let scratch = tempfile::tempdir().expect("tempdir");
    let memory = tokio::process::Command::new("node").configure(|c| {
        c.arg(super::node_modules().join("@modelcontextprotocol/server-memory/dist/index.js"))
            .env("MEMORY_FILE_PATH", scratch.path().join("memory.jsonl"));
    });
    runtime.block_on(async {
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
    })
}
