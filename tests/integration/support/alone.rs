//! Engines run by hand in this test process, without a gateway: a tool host
//! with no upstreams, and a way to run a test in a child process of its own
//! when what it measures is process-wide (the memory counter, parse counts).

use std::process::Command;
use std::sync::Arc;

use codemcp_exec::{ToolFailure, ToolHost};
use codemcp_sdk::Sdk;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// Set in the child process `run_alone` starts: only there do the tests it
/// names do their work (`in_child`); elsewhere they return at once.
const CHILD: &str = "CODEMCP_TEST_ALONE_CHILD";

/// A gateway with no upstreams: plain Python only.
struct NoTools(Arc<Sdk>);

impl ToolHost for NoTools {
    fn sdk(&self) -> Arc<Sdk> {
        self.0.clone()
    }

    fn call_tool(
        &self,
        _engine: &'static str,
        _server: &str,
        _tool: &str,
        _args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        Box::pin(async {
            Err(ToolFailure {
                message: "no upstreams".into(),
            })
        })
    }
}

/// A tool host with no tools at all.
pub fn no_tools() -> Arc<dyn ToolHost> {
    Arc::new(NoTools(Arc::new(Sdk::build(&[]))))
}

/// Whether this process is a child started by `run_alone`.
pub fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs the test at `path` (`module::name`) alone in a child process of this
/// test binary, and fails with its output unless it passed and printed
/// `marker` (so a test that returned early, or was not found, fails too).
pub fn run_alone(path: &str, marker: &str) {
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args([path, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(marker),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
