//! The pre-flight check on hostile snippets: source built from a few shapes
//! repeated or nested thousands of times (10,000 calls, 1,000-deep brackets,
//! operator chains), checked against a small catalog. Must never panic, and
//! must stay within the fuzzer's time and memory limits. An input that starts
//! with `#!py` is Python source as it stands.
#![no_main]

use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use codemcp_snippet::preflight;
use codemcp_sdk::Sdk;
use codemcp_sdk::tooldef::ToolDef;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// Source no larger than a generous `CODEMCP_MAX_SOURCE_BYTES`.
const MAX_SOURCE: usize = 1 << 20;

#[derive(Arbitrary, Debug)]
enum Shape {
    Text(String),
    /// `unit` `times` times: many calls, a long operator chain.
    Repeat { unit: String, times: u16 },
    /// `open` `depth` times, `inner`, `close` `depth` times.
    Nest { open: String, inner: String, close: String, depth: u16 },
    /// A call of a catalog tool (or a near miss) with some arguments.
    Call { tool: u8, args: String },
}

const TOOLS: &[&str] = &["everything_get_sum", "everything_echo", "everything_get_summ", "everything_raw", "evrything_echo", "f"];

impl Shape {
    fn write(&self, out: &mut String) {
        match self {
            Shape::Text(text) => out.push_str(text),
            Shape::Repeat { unit, times } => repeat(out, unit, usize::from(*times)),
            Shape::Nest { open, inner, close, depth } => {
                repeat(out, open, usize::from(*depth));
                out.push_str(inner);
                repeat(out, close, usize::from(*depth));
            }
            Shape::Call { tool, args } => {
                let name = TOOLS[usize::from(*tool) % TOOLS.len()];
                out.push_str(&format!("{name}({args})\n"));
            }
        }
    }
}

fn repeat(out: &mut String, unit: &str, times: usize) {
    for _ in 0..times {
        if out.len() + unit.len() > MAX_SOURCE {
            return;
        }
        out.push_str(unit);
    }
}

fn tool(name: &str, input_schema: Value) -> ToolDef {
    ToolDef::with_schema("everything", name, input_schema)
}

fn sdk() -> Arc<Sdk> {
    static SDK: OnceLock<Arc<Sdk>> = OnceLock::new();
    SDK.get_or_init(|| {
        Arc::new(Sdk::build(&[
            tool("get-sum", json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]})),
            tool("echo", json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})),
            tool("raw", json!("not a schema")),
        ]))
    })
    .clone()
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Runtime::new().expect("tokio runtime"))
}

fn source(data: &[u8]) -> Option<String> {
    if let Some(raw) = data.strip_prefix(b"#!py") {
        return Some(String::from_utf8_lossy(raw).into_owned());
    }
    let shapes = Vec::<Shape>::arbitrary_take_rest(Unstructured::new(data)).ok()?;
    let mut code = String::new();
    for shape in &shapes {
        shape.write(&mut code);
    }
    Some(code)
}

fuzz_target!(|data: &[u8]| {
    let Some(code) = source(data) else {
        return;
    };
    let earlier = vec!["everything_total".to_owned()];
    let checked = runtime().block_on(preflight::check_safely(code, sdk(), earlier));
    assert!(checked.findings.len() <= checked.total);
    if let Some(error) = checked.rejection().map(codemcp_exec::RunError::from) {
        assert!(error.message.len() <= codemcp_exec::MAX_ERROR_MESSAGE_BYTES + 100);
    }
});
