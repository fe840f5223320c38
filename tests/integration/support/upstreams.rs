//! Test peers only the integration suite starts: the `mcp` 1.x Python,
//! server-memory, the official conformance suite, and `odd_server.py` over
//! Streamable HTTP on a free loopback port.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::{dep, node_modules, python2, repo};

/// Python with `mcp` 1.x.
pub fn python1() -> PathBuf {
    dep("CODEMCP_TEST_PY1", ".deps/py1/bin/python")
}

/// server-memory keeping its graph in `file`, as an upstream entry.
pub fn memory(file: &Path) -> Value {
    let script = node_modules().join("@modelcontextprotocol/server-memory/dist/index.js");
    json!({"command": "node", "args": [script], "env": {"MEMORY_FILE_PATH": file}})
}

/// Node 22 and the official conformance suite's entry point, from the pinned
/// test peers (`tests/integration/conformance.rs` runs its server scenarios, `tests/integration/oauth.rs`
/// its client auth scenarios).
pub fn conformance_suite() -> (PathBuf, PathBuf) {
    let modules = node_modules();
    let node = std::env::var_os("CODEMCP_TEST_NODE22")
        .map_or_else(|| modules.join(".bin/node"), PathBuf::from);
    let cli = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "node 22 or the conformance suite is missing: run scripts/test-deps.sh"
    );
    (node, cli)
}

/// `odd_server.py` serving Streamable HTTP on a free loopback port: the process
/// (killed on drop) and its MCP URL.
pub async fn odd_over_http() -> (tokio::process::Child, String) {
    let port = free_port();
    let server = tokio::process::Command::new(python2())
        .arg(repo().join("tests/servers/odd_server.py"))
        .args(["--http", &port.to_string()])
        .env("ODD_LOG_LEVEL", "WARNING")
        .kill_on_drop(true)
        .spawn()
        .expect("start odd_server over HTTP");
    wait_for_port(port, Duration::from_secs(30)).await;
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("addr").port()
}

pub async fn wait_for_port(port: u16, within: Duration) {
    let deadline = std::time::Instant::now() + within;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on 127.0.0.1:{port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
