//! Failures that used to pass without a word are logged: an upstream that
//! completes the MCP handshake but never answers `tools/list` (a real stdio
//! server process written for it, and a real `codemcp serve --http`).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncBufReadExt;

/// Answers `initialize`, then reads requests and answers none of them.
const MUTE_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mute", "version": "0"}}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
"#;

#[tokio::test]
async fn upstream_that_never_lists_tools_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("mute.py");
    std::fs::write(&script, MUTE_SERVER).unwrap();
    let setup = support::Setup::new(json!({
        "mute": {"command": "python3", "args": [script], "timeout": 2},
    }));
    let mut child = tokio::process::Command::new(support::bin())
        .arg("--config")
        .arg(setup.config())
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("CODEMCP_MONTY_BIN", support::monty_bin())
        .env("CODEMCP_FALLBACK", "none")
        .env("XDG_STATE_HOME", setup.dir.path().join("state"))
        .env("CODEMCP_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn codemcp serve --http");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            let hit = line.contains("mute") && line.contains("tools/list");
            seen.push(line.clone());
            if hit {
                return Some(line);
            }
        }
        None
    })
    .await
    .ok()
    .flatten();
    let line = found.unwrap_or_else(|| {
        panic!(
            "no log line names the server and tools/list within 30 s:\n{}",
            seen.join("\n")
        )
    });
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("within 2 s"), "the reason: {line}");
}
