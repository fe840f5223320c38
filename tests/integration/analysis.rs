//! A snippet is analysed once per run: the pre-flight check's parse gives
//! the router its outline and every engine its call sites, so nothing on a
//! run's path parses the snippet again. The parse counter is process-wide,
//! so the runs are counted in a child process running only that test.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use codemcp_exec::helpers::Assembly;
use codemcp_exec::monty::pool::{PoolEngine, find_worker_binary};
use codemcp_exec::monty::{MontyEngine, MontyLimits};
use codemcp_exec::router::Router;
use codemcp_exec::worker::{WorkerEngine, WorkerLimits, find_python};
use codemcp_exec::{Engine, Executor, RunChecks, RunControl, RunRequest};
use codemcp_snippet::facts::parses;
use codemcp_store::Owner;
use serde_json::{Value, json};

use crate::support;

fn monty_limits() -> MontyLimits {
    MontyLimits {
        exec_timeout: Duration::from_secs(30),
        max_output_bytes: 1 << 20,
        max_result_bytes: 1 << 20,
        max_tool_calls: 100,
        max_recursion_depth: 200,
        max_sleep_total: Duration::from_secs(1),
        memory_limit: 256 << 20,
        session_idle: Duration::from_secs(60),
        max_sessions: 8,
    }
}

fn worker_limits() -> WorkerLimits {
    WorkerLimits {
        exec_timeout: Duration::from_secs(30),
        max_output_bytes: 1 << 20,
        max_result_bytes: 1 << 20,
        max_tool_calls: 100,
        session_idle: Duration::from_secs(60),
        max_sessions: 8,
        max_state_bytes: 16 << 20,
    }
}

fn executor(engine: Arc<dyn Engine>) -> Executor {
    let checks = RunChecks {
        exec_timeout: Duration::from_secs(30),
        max_source_bytes: 1 << 20,
    };
    Executor::in_memory(engine, checks).expect("a memory store")
}

/// Runs `code` in a new session and returns its value and engine, and how
/// many parses the run made.
async fn counted(executor: &Executor, code: &str) -> (Option<Value>, &'static str, u64) {
    let tools = support::no_tools();
    let request = RunRequest {
        code: code.to_owned(),
        session: None,
        timeout: None,
    };
    let before = parses();
    let ran = executor
        .run(
            Owner::anonymous(),
            request,
            Assembly::tools(tools),
            RunControl::default(),
        )
        .await;
    let parsed = parses() - before;
    assert!(ran.error.is_none(), "{:?}", ran.error);
    (ran.result, ran.engine, parsed)
}

/// Async code: the engines need its call sites, the router its imports.
const ASYNC: &str = "async def double(x):\n    return 2 * x\nawait double(21)";
/// Async code Monty cannot run (it lacks `statistics`): the router sends it
/// to CPython.
const ESCALATING: &str = "import statistics\nasync def mean(xs):\n    return statistics.mean(xs)\n\
                          await mean([1, 2, 3])";

/// Runs only as the child of `an_async_snippet_is_parsed_once_per_run`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counted_runs_child() {
    if !support::in_child() {
        return;
    }
    let python = find_python(
        std::env::var_os("CODEMCP_PYTHON")
            .map(std::path::PathBuf::from)
            .as_deref(),
    );
    let cpython = WorkerEngine::start_host(worker_limits(), python)
        .await
        .expect("CODEMCP_PYTHON: a host CPython worker");
    let monty: Arc<dyn Engine> = Arc::new(MontyEngine::new(monty_limits()));
    let routed = executor(Arc::new(Router::new(monty, Some(cpython), String::new())));
    assert_eq!(counted(&routed, ASYNC).await, (Some(json!(42)), "monty", 1));
    let (value, engine, parsed) = counted(&routed, ESCALATING).await;
    assert_eq!((value, engine), (Some(json!(2)), "cpython-host"));
    assert_eq!(parsed, 1, "router and CPython share the pre-flight's parse");
    let binary = std::env::var_os("CODEMCP_MONTY_BIN").map(std::path::PathBuf::from);
    let binary = find_worker_binary(binary.as_deref()).expect("CODEMCP_MONTY_BIN");
    let pool = PoolEngine::start(monty_limits(), binary, 1)
        .await
        .expect("a Monty pool");
    let pooled = executor(Arc::new(pool));
    assert_eq!(
        counted(&pooled, ASYNC).await,
        (Some(json!(42)), "monty-pool", 1)
    );
    println!("COUNTED");
}

#[test]
fn an_async_snippet_is_parsed_once_per_run() {
    support::run_alone("analysis::counted_runs_child", "COUNTED");
}

/// Monty's own test programs (`test_cases/` of the monty crate, found
/// through `cargo metadata`), when the registry holds them.
fn monty_test_programs() -> Vec<(String, String)> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let Ok(out) = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
    else {
        return Vec::new();
    };
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let Some(manifest) = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "monty")
        .and_then(|p| p["manifest_path"].as_str())
    else {
        return Vec::new();
    };
    let dir = std::path::Path::new(manifest).with_file_name("test_cases");
    let mut programs: Vec<(String, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            Some((name, std::fs::read_to_string(&p).ok()?))
        })
        .collect();
    programs.sort();
    programs
}

/// The snippets of the differential corpus (`# === name` starts one).
fn corpus_snippets() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("tests/differential")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for part in text.split("\n# === ").skip(1) {
            let (name, code) = part.split_once('\n').unwrap_or((part, ""));
            out.push((name.to_owned(), code.to_owned()));
        }
    }
    out
}

/// The programs whose outline says they must not run on Monty (lazy
/// iteration), and those routed to CPython when there is a fallback.
fn judged(programs: &[(String, String)]) -> (Vec<String>, Vec<String>) {
    let (mut lazy, mut routed) = (Vec::new(), Vec::new());
    for (name, code) in programs {
        let outline = codemcp_snippet::facts::Facts::of(code).outline;
        if let Some(what) = outline.needs_laziness {
            lazy.push(format!("{name}: {what}"));
        } else if outline.differs_on_monty.is_some() {
            routed.push(name.clone());
        }
    }
    (lazy, routed)
}

#[test]
fn the_laziness_rule_keeps_montys_own_programs_and_eager_idioms_on_monty() {
    let programs = monty_test_programs();
    let corpus = corpus_snippets();
    let (lazy, routed) = judged(&programs);
    println!(
        "Monty's own programs: {} in all, {} need laziness, {} routed for other silent differences; {lazy:#?}",
        programs.len(),
        lazy.len(),
        routed.len()
    );
    let (corpus_lazy, _) = judged(&corpus);
    println!(
        "differential corpus: {} snippets, {} need laziness",
        corpus.len(),
        corpus_lazy.len()
    );
    // Monty's programs test Monty's eager generators on purpose in a few
    // places; every other program stays (skipped when the registry copy of
    // the crate is not there).
    assert!(
        programs.is_empty() || lazy.len() * 100 <= programs.len() * 2,
        "{lazy:#?}"
    );
    // Outside the laziness corpus, no snippet of the differential corpus
    // is taken off Monty by the rule.
    let outside: Vec<&String> = corpus_lazy
        .iter()
        .filter(|what| {
            !LAZY_SNIPPETS
                .iter()
                .any(|s| what.starts_with(&format!("{s}:")))
        })
        .collect();
    assert!(outside.is_empty(), "{outside:#?}");
}

/// The snippets of the corpus that depend on laziness.
const LAZY_SNIPPETS: &[&str] = &[
    "first_match_filter",
    "any_with_tool_calls_stops_early",
    "all_with_side_effect_stops_early",
    "in_over_calls",
    "for_break_over_map",
    "zip_shorter_partner",
    "islice_over_count",
    "takewhile_over_calls",
    "returned_generator",
    "next_of_zip_and_enumerate",
    "next_of_a_function_returning_a_generator",
    // tests/differential/agent_tasks.py
    "first_profile_with_email",
    "any_expensive_check_stops",
];
