//! What every test binary needs to start a gateway: where the codemcp binary,
//! the repository and the pinned test peers and workers are, the config file a
//! test gateway reads, and the settings test gateways share.

use std::path::PathBuf;

use serde_json::{Value, json};

/// How long a test gateway's first call waits for its upstreams: far more
/// than the default 5 s, since a loaded 2-core machine starting several
/// gateways with Python and Node peers at once can take that long; tests
/// of the wait itself set their own.
pub const STARTUP_WAIT_MS: &str = "60000";

/// Room for every signature of a test catalog: tests find a tool's function in the
/// description (the default, 2,048, shows the servers and only the first signatures).
pub const DESCRIPTION_BUDGET: &str = "8000";

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codemcp"))
}

/// A pinned test peer or worker: the path in `var`, else `default` under the
/// repository; it must exist.
pub fn dep(var: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(var).map_or_else(|| repo().join(default), PathBuf::from);
    assert!(
        path.exists(),
        "{} is missing: run scripts/test.sh (or scripts/test-deps.sh) to install the test peers",
        path.display()
    );
    path
}

pub fn node_modules() -> PathBuf {
    dep("CODEMCP_TEST_NODE_MODULES", ".deps/node/node_modules")
}

/// The worker binary for pool mode: `CODEMCP_MONTY_BIN` when set (the PyPI
/// worker, scripts/install-monty-worker.sh), else codemcp itself when it is
/// built as its own worker (feature `self-worker`).
pub fn monty_bin() -> PathBuf {
    if cfg!(feature = "self-worker") && std::env::var_os("CODEMCP_MONTY_BIN").is_none() {
        return bin();
    }
    dep("CODEMCP_MONTY_BIN", ".deps/monty-runtime/bin/monty")
}

/// A temp dir holding `mcp.json` with the given servers.
pub struct Setup {
    pub dir: tempfile::TempDir,
}

impl Setup {
    pub fn new(servers: Value) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = json!({"mcpServers": servers});
        std::fs::write(dir.path().join("mcp.json"), config.to_string()).expect("write config");
        Self { dir }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("mcp.json")
    }
}
