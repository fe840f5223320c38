//! The pinned `@modelcontextprotocol/server-everything` as an upstream.

use serde_json::{Value, json};

use super::node_modules;

/// server-everything over stdio, as an upstream entry of the config file.
pub fn everything() -> Value {
    let script = node_modules().join("@modelcontextprotocol/server-everything/dist/index.js");
    json!({"command": "node", "args": [script, "stdio"]})
}
