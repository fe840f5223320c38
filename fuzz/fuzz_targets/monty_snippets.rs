//! Python built from a token vocabulary, run through the real Monty engine with
//! small limits and a host that answers tool calls. Must never panic, abort or hang.
//! An input that starts with `#!py` is Python source as it stands (the seeds of
//! known attacks are written that way; the fuzzer mutates them byte by byte).
#![no_main]

#[path = "limits.rs"]
mod limits;

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use arbitrary::{Arbitrary, Unstructured};
use codemcp_exec::monty::memory::CountingAllocator;
use codemcp_exec::monty::MontyEngine;
use codemcp_exec::{Engine, Run, RunControl, SessionId, ToolFailure, ToolHost};
use codemcp_sdk::Sdk;
use codemcp_sdk::tooldef::ToolDef;
use futures::future::BoxFuture;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[derive(Arbitrary, Debug)]
enum Token {
    Int(i16),
    Str(u8),
    Name(u8),
    Attr(u8),
    Op(u8),
    Keyword(u8),
    Newline,
    Indent,
    Dedent,
    Open(u8),
    Close(u8),
    Comma,
    Colon,
    Call(u8),
}

const NAMES: &[&str] = &["x", "y", "l", "d", "s", "i", "f", "result", "json", "re", "math", "asyncio", "fake_echo", "fake_fail", "search_tools", "describe_tool", "ToolError", "len", "range", "print", "sorted", "open", "__import__", "type", "getattr"];
const ATTRS: &[&str] = &["append", "pop", "keys", "items", "join", "split", "upper", "dumps", "loads", "sub", "gather", "sleep", "__class__", "__dict__", "format", "replace"];
const OPS: &[&str] = &["+", "-", "*", "/", "//", "%", "**", "==", "<", "and", "or", "not", "in", "=", "+=", ".", "[", "]", "@", "|", "&", "^", "<<", ">>"];
const KEYWORDS: &[&str] = &["if", "else", "elif", "for", "while", "def", "return", "lambda", "try", "except", "finally", "with", "as", "import", "from", "class", "await", "async", "yield", "del", "global", "pass", "break", "continue", "raise", "None", "True", "False", "match", "case"];
const OPENS: &[&str] = &["(", "[", "{"];
const CLOSES: &[&str] = &[")", "]", "}"];

fn pick<'a>(list: &[&'a str], i: u8) -> &'a str {
    list[usize::from(i) % list.len()]
}

fn render(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut indent = 0usize;
    for token in tokens {
        match token {
            Token::Int(n) => out.push_str(&format!(" {n}")),
            Token::Str(n) => out.push_str(&format!(" 's{n}'")),
            Token::Name(i) => out.push_str(&format!(" {}", pick(NAMES, *i))),
            Token::Attr(i) => out.push_str(&format!(".{}", pick(ATTRS, *i))),
            Token::Op(i) => out.push_str(&format!(" {} ", pick(OPS, *i))),
            Token::Keyword(i) => out.push_str(&format!(" {} ", pick(KEYWORDS, *i))),
            Token::Newline => {
                out.push('\n');
                out.push_str(&"    ".repeat(indent));
            }
            Token::Indent => {
                indent = (indent + 1).min(8);
                out.push_str("\n");
                out.push_str(&"    ".repeat(indent));
            }
            Token::Dedent => {
                indent = indent.saturating_sub(1);
                out.push('\n');
                out.push_str(&"    ".repeat(indent));
            }
            Token::Open(i) => out.push_str(pick(OPENS, *i)),
            Token::Close(i) => out.push_str(pick(CLOSES, *i)),
            Token::Comma => out.push_str(", "),
            Token::Colon => out.push(':'),
            Token::Call(i) => out.push_str(&format!("{}(value={})", pick(&["fake_echo", "fake_fail", "len", "print"], *i), i)),
        }
    }
    out
}

/// Two fake tools: `fake_echo(value)` answers with its arguments, `fake_fail()` fails.
struct EchoTools(Arc<Sdk>);

impl ToolHost for EchoTools {
    fn sdk(&self) -> Arc<Sdk> {
        self.0.clone()
    }

    fn call_tool(&self, _engine: &'static str, _server: &str, tool: &str, args: Map<String, Value>) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let fail = tool == "fail";
        Box::pin(async move {
            if fail { Err(ToolFailure { message: "fake failure".into() }) } else { Ok(Value::Object(args)) }
        })
    }
}

struct World {
    runtime: tokio::runtime::Runtime,
    /// Replaced when runaway runs make it retire, so fuzzing goes on.
    engine: Mutex<Arc<MontyEngine>>,
    tools: Arc<dyn ToolHost>,
}

impl World {
    fn engine(&self) -> Arc<MontyEngine> {
        let mut engine = self.engine.lock().unwrap_or_else(PoisonError::into_inner);
        if engine.retired().is_some() {
            *engine = Arc::new(MontyEngine::new(limits::small()));
        }
        engine.clone()
    }
}

/// Marks an input that is Python source rather than tokens.
const SOURCE_MARK: &[u8] = b"#!py";

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let tool = |name: &str| ToolDef {
            server: "fake".into(),
            name: name.into(),
            description: format!("{name} tool"),
            input_schema: json!({"type": "object", "properties": {"value": {}}}).into(),
            output_schema: None,
            read_only: true,
            destructive: false,
            policy: codemcp_sdk::policy::Decision::Allow,
        };
        let sdk = Arc::new(Sdk::build(&[tool("echo"), tool("fail")]));
        let engine = Mutex::new(Arc::new(MontyEngine::new(limits::small())));
        World { runtime, engine, tools: Arc::new(EchoTools(sdk)) }
    })
}

fn snippet(data: &[u8]) -> String {
    match data.strip_prefix(SOURCE_MARK) {
        Some(source) => String::from_utf8_lossy(source).into_owned(),
        None => {
            let tokens = Vec::<Token>::arbitrary_take_rest(Unstructured::new(data)).unwrap_or_default();
            render(&tokens)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let code = snippet(data);
    let world = world();
    let session = SessionId(1 + u64::from(code.len() as u8 % 3));
    let request = Run::new(code, limits::small().exec_timeout);
    let engine = world.engine();
    let started = std::time::Instant::now();
    let execution = world.runtime.block_on(engine.run(session, request, world.tools.clone(), RunControl::default()));
    assert!(execution.stdout.len() <= (64 << 10) + 100);
    // The 200 ms limit holds whatever the snippet, with the engine's grace.
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "took {:?}", started.elapsed());
});
