#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::time::Duration;

use serde_json::json;

use super::*;
use codemcp_snippet::Facts;
use codemcp_snippet::facts::parses;
use codemcp_store::{SealKey, StoreSpec};

/// A caller with no upstream tools: `save_helper` needs none.
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

fn helpers() -> Arc<Helpers> {
    let store = super::super::LibraryStore::open(
        &StoreSpec::Memory,
        SealKey::ephemeral(),
        None,
        1 << 20,
        Duration::from_secs(5),
    )
    .expect("a memory store");
    let bounds = super::super::Bounds {
        max_count: 10,
        max_bytes: 4096,
        max_total_bytes: 1 << 20,
    };
    Arc::new(Helpers::new(store, bounds, None))
}

const CHILD: &str = "CODEMCP_TEST_SAVE_PARSES_CHILD";

/// Runs only as the child of `save_helper_cuts_from_the_runs_analysis_without_parsing`,
/// alone in its process, so the parse count is its own.
#[tokio::test]
async fn save_helper_parse_count_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let code = "import json\n\ndef f(x: int) -> str:\n    return json.dumps(x)\n\nsave_helper(f)\n";
    let tools: Arc<dyn ToolHost> = Arc::new(NoTools(Arc::new(Sdk::build(&[]))));
    let owner = Owner::anonymous();
    let helpers = helpers();
    let assembly = assemble(Some(&helpers), owner, Snippet::New(code), tools).await;
    // What the executor does with the pre-flight check's parse.
    assembly.snippet.fill(code, Arc::new(Facts::of(code)));
    let before = parses();
    let call = HelperCall {
        function: "save_helper".into(),
        args: vec![json!("f")],
        kwargs: Map::new(),
    };
    let saved = assembly.tools.helper_call("monty", call).await;
    assert_eq!(saved.expect("saved")["name"], "f");
    assert_eq!(parses() - before, 0, "save_helper parsed the snippet again");
    println!("SAVED WITHOUT PARSING");
}

#[test]
fn save_helper_cuts_from_the_runs_analysis_without_parsing() {
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "helpers::host::tests::save_helper_parse_count_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("SAVED WITHOUT PARSING"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
