//! Our own FastMCP upstream, `tests/servers/odd_server.py`, and the Python
//! with `mcp` 2.x it runs on.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{dep, repo};

/// Python with `mcp` 2.x (also runs our FastMCP test server).
pub fn python2() -> PathBuf {
    dep("CODEMCP_TEST_PY2", ".deps/py2/bin/python")
}

/// `odd_server.py` as an upstream entry of the config file; `extra_env` adds
/// to its environment.
pub fn odd(extra_env: Value) -> Value {
    let mut env = json!({"ODD_LOG_LEVEL": "WARNING"});
    if let (Some(env), Some(extra)) = (env.as_object_mut(), extra_env.as_object()) {
        env.extend(extra.clone());
    }
    json!({"command": python2(), "args": [repo().join("tests/servers/odd_server.py")], "env": env})
}
