//! Hostile snippets against the limits, in whichever Monty placement
//! `CODEMCP_MONTY` picks (scripts/test.sh runs this file in both). Each attack
//! must end within its time limit + 1 s, leave its session usable at once,
//! keep the gateway's RSS under the memory budget + 256 MiB, and leave nothing
//! burning CPU after the answer. Each test prints its figures.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Client, Setup};

const LIMIT_MS: u64 = 2_000;
const BUDGET: u64 = 128 << 20;
/// How long the CPU of the gateway and its processes is watched after an answer.
const WATCH: Duration = Duration::from_secs(2);

async fn gateway(env: &[(&str, &str)]) -> Client {
    let limit = LIMIT_MS.to_string();
    let budget = BUDGET.to_string();
    let mut all = vec![
        ("CODEMCP_EXEC_TIMEOUT_MS", limit.as_str()),
        ("CODEMCP_MONTY_MEM_LIMIT", budget.as_str()),
    ];
    all.extend_from_slice(env);
    Setup::new(json!({})).stdio(&all).await
}

fn placement() -> String {
    match std::env::var("CODEMCP_ISOLATION") {
        Ok(isolation) if !isolation.eq_ignore_ascii_case("monty") => isolation,
        _ => std::env::var("CODEMCP_MONTY").unwrap_or_else(|_| "inprocess".into()),
    }
}

/// Under `CODEMCP_ISOLATION=DOCKER|HOST_SYSTEM` every run is CPython: only the
/// time attacks apply (Monty's memory amplifiers are bounded work there).
fn cpython() -> bool {
    placement() != "inprocess" && placement() != "pool"
}

/// CPU ticks used so far by `pid` and by each process below it.
fn cpu_ticks(pid: u32) -> HashMap<u32, u64> {
    let mut parents: HashMap<u32, u32> = HashMap::new();
    let mut ticks: HashMap<u32, u64> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name, which may hold spaces: state ppid ...
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(ppid), Some(utime), Some(stime)) = (
            fields.get(1).and_then(|f| f.parse().ok()),
            fields.get(11).and_then(|f| f.parse::<u64>().ok()),
            fields.get(12).and_then(|f| f.parse::<u64>().ok()),
        ) else {
            continue;
        };
        parents.insert(p, ppid);
        ticks.insert(p, utime + stime);
    }
    let below = |mut p: u32| loop {
        if p == pid {
            return true;
        }
        match parents.get(&p) {
            Some(&pp) if pp != 0 && pp != p => p = pp,
            _ => return false,
        }
    };
    ticks.retain(|p, _| below(*p));
    ticks
}

/// CPU seconds that the processes alive at `before` used since then (a process
/// started later, such as a fresh spare worker, is not the attack's).
fn cpu_seconds_since(pid: u32, before: &HashMap<u32, u64>) -> f64 {
    let now = cpu_ticks(pid);
    let burned: u64 = before
        .iter()
        .filter_map(|(p, t)| now.get(p).map(|n| n.saturating_sub(*t)))
        .sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    burned as f64 / hz
}

/// Runs `attack` in a session that holds a variable, then checks every promise.
async fn attack(name: &str, code: &str, expected: &[&str]) {
    let client = gateway(&[]).await;
    let pid = client.pid.expect("gateway pid");
    client.exec("kept = 41").await;
    let started = Instant::now();
    let ran = client.exec(code).await;
    let took = started.elapsed();
    let at_answer = cpu_ticks(pid);
    tokio::time::sleep(WATCH).await;
    let burned = cpu_seconds_since(pid, &at_answer);
    let peak = client.peak_rss_bytes().unwrap_or(0);
    println!(
        "{name} [{}]: {} after {} ms ({} ms over the limit), gateway peak RSS {} MiB ({} MiB budget), \
         {burned:.2} CPU s in the {} s after the answer",
        placement(),
        ran.error_type(),
        took.as_millis(),
        took.as_millis().saturating_sub(u128::from(LIMIT_MS)),
        peak >> 20,
        BUDGET >> 20,
        WATCH.as_secs(),
    );
    assert!(
        expected.contains(&ran.error_type()),
        "{name}: expected one of {expected:?}: {}",
        ran.text
    );
    assert_eq!(ran.error_kind(), "limit", "{name}: {}", ran.text);
    assert_eq!(
        ran.structured["error"]["session_reset"], true,
        "{name}: the result says the state is gone: {}",
        ran.text
    );
    assert!(
        took < Duration::from_millis(LIMIT_MS + 1_000),
        "{name}: answered after {took:?}"
    );
    assert!(
        peak < BUDGET + (256 << 20),
        "{name}: gateway peak RSS {} MiB",
        peak >> 20
    );
    assert!(
        burned < 0.5,
        "{name}: {burned:.2} CPU s burned after the answer"
    );
    let next = Instant::now();
    let after = client.exec("kept = 1\nkept + 1").await;
    assert_eq!(
        after.result(),
        2,
        "{name}: the next call works: {}",
        after.text
    );
    assert!(
        next.elapsed() < Duration::from_secs(2),
        "{name}: the next call waited {:?}",
        next.elapsed()
    );
}

const TIMEOUT: &[&str] = &["TimeoutError"];
const MEMORY: &[&str] = &["MemoryError"];
/// Either limit may fire first, depending on the machine's speed.
const EITHER: &[&str] = &["TimeoutError", "MemoryError"];

#[tokio::test]
async fn a_loop_of_search_tools_calls_stops_at_the_time_limit() {
    attack(
        "search_tools loop",
        "while True:\n    search_tools('x')",
        TIMEOUT,
    )
    .await;
}

#[tokio::test]
async fn a_loop_of_describe_tool_calls_stops_at_the_time_limit() {
    let code = "while True:\n    try:\n        describe_tool('nothing_here')\n    except Exception:\n        pass";
    attack("describe_tool loop", code, TIMEOUT).await;
}

#[tokio::test]
async fn a_loop_of_prints_and_zero_sleeps_stops_at_the_time_limit() {
    let code = "import time\nwhile True:\n    print('x')\n    time.sleep(0)";
    attack("print and sleep loop", code, TIMEOUT).await;
}

#[tokio::test]
async fn a_regex_substitution_with_an_empty_pattern_stops_at_the_time_limit() {
    if cpython() {
        return;
    }
    let code = "import re\nlen(re.sub('', 'x' * 2000, 'a' * 10**6))";
    attack("re.sub empty pattern", code, EITHER).await;
}

#[tokio::test]
async fn a_big_integer_power_stops_at_the_time_limit() {
    if cpython() {
        return;
    }
    // About five times the work 7 ** 10**7 takes: that one finished just inside
    // the limit on a fast machine (then str() refused its digits), so the
    // test measured the machine, not the limit.
    attack("big integer power", "len(str(7 ** (3 * 10**7)))", EITHER).await;
}

#[tokio::test]
async fn a_nested_big_integer_chain_stops_at_the_time_limit() {
    if cpython() {
        return;
    }
    let code = "x = 3\nfor _ in range(40):\n    x = x * x\nlen(str(x))";
    attack("squaring chain", code, EITHER).await;
}

#[tokio::test]
async fn sorting_a_huge_repeated_sequence_stops_cleanly() {
    if cpython() {
        return;
    }
    let code = "x = sorted(list(range(10**6)) * 100, key=lambda v: -v)\nlen(x)";
    attack("sort huge sequence", code, EITHER).await;
}

#[tokio::test]
async fn json_dumps_with_a_huge_indent_is_held_by_the_memory_budget() {
    if cpython() {
        return;
    }
    let code = "import json\nlen(json.dumps([[1]] * 1000, indent=10**5))";
    attack("json.dumps indent 10**5", code, MEMORY).await;
}

#[tokio::test]
async fn json_dumps_with_an_indent_of_gigabytes_is_held_by_the_memory_budget() {
    if cpython() {
        return;
    }
    let code = "import json\nlen(json.dumps([[1]] * 1000, indent=10**7))";
    attack("json.dumps indent 10**7", code, MEMORY).await;
}

#[tokio::test]
async fn json_dumps_with_a_long_separator_is_held_by_the_memory_budget() {
    if cpython() {
        return;
    }
    let code = "import json\nlen(json.dumps(list(range(100000)), separators=(' ' * 10**4, ':')))";
    attack("json.dumps separators", code, MEMORY).await;
}

#[tokio::test]
async fn joining_huge_strings_is_held_by_the_memory_budget() {
    if cpython() {
        return;
    }
    let code = "len(''.join(['y' * 30_000_000] * 100))";
    attack("str.join", code, MEMORY).await;
}

#[tokio::test]
async fn a_big_separator_join_is_held_by_the_memory_budget() {
    if cpython() {
        return;
    }
    let code = "len(('z' * 10**7).join(['a'] * 1000))";
    attack("separator join", code, MEMORY).await;
}

#[tokio::test]
async fn catastrophic_regex_backtracking_stops_at_the_time_limit() {
    if !cpython() {
        return; // Monty's regex engine bounds backtracking itself
    }
    let code = "import re\nre.match('(a+)+$', 'a' * 40 + 'b')";
    attack("regex backtracking", code, TIMEOUT).await;
}

/// Three runs stuck inside one builtin: enough frozen threads to retire the
/// in-process engine.
async fn three_stuck_runs(client: &Client) -> Vec<support::Ran> {
    let mut runs = Vec::new();
    for _ in 0..3 {
        let code = "import re\nlen(re.sub('', 'x' * 2000, 'a' * 10**6))";
        runs.push(client.exec(code).await);
    }
    runs
}

/// In-process only: overrunning threads are frozen, and after a few the engine
/// hands runs to worker processes (the binary is installed for the tests).
#[tokio::test]
async fn after_three_frozen_runs_in_process_runs_move_to_worker_processes() {
    if placement() != "inprocess" {
        return;
    }
    let client = gateway(&[]).await;
    for ran in three_stuck_runs(&client).await {
        assert_eq!(ran.error_kind(), "limit", "{}", ran.text);
    }
    let ran = client.exec("1 + 1").await;
    assert_eq!(ran.result(), 2, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "monty-pool", "{}", ran.text);
}

#[tokio::test]
async fn without_a_worker_binary_a_retired_engine_refuses_with_the_reason() {
    if placement() != "inprocess" {
        return;
    }
    let client = gateway(&[
        ("CODEMCP_MONTY_BIN", "/nonexistent/monty"),
        ("PATH", "/usr/bin:/bin"),
    ])
    .await;
    three_stuck_runs(&client).await;
    let ran = client.exec("1 + 1").await;
    assert!(
        ran.error_message().contains("no longer takes runs"),
        "{}",
        ran.text
    );
    assert!(ran.text.contains("restart the gateway"), "{}", ran.text);
}
