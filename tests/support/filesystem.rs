//! The pinned `@modelcontextprotocol/server-filesystem` as an upstream.

use std::path::Path;

use serde_json::{Value, json};

use super::node_modules;

/// server-filesystem serving `root`, as an upstream entry of the config file.
pub fn filesystem(root: &Path) -> Value {
    let script = node_modules().join("@modelcontextprotocol/server-filesystem/dist/index.js");
    json!({"command": "node", "args": [script, root]})
}
