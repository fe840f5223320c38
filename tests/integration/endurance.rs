//! 10,000 sequential runs through the real binary: the gateway's resident
//! memory stays bounded. (`memory_accounting.rs` checks Monty's own counter;
//! this checks the process as the OS sees it.)

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Setup, odd};

const RUNS: usize = 10_000;
/// Runs before the baseline, so allocator arenas and caches have settled.
const WARM_UP: usize = 300;

/// The mix: printing, an upstream call, a Python error (caught by the gateway).
fn snippet(i: usize) -> (String, &'static str) {
    match i % 3 {
        0 => (format!("print('run', {i})\n{i} * 2"), "print"),
        1 => (format!("odd_add_numbers(a={i}, b=1)"), "tool"),
        _ => (format!("x = {{'k': {i}}}\nx['missing']"), "error"),
    }
}

fn check(i: usize, ran: &support::Ran) {
    match snippet(i).1 {
        "print" => {
            assert_eq!(ran.stdout(), format!("run {i}\n"), "run {i}: {}", ran.text);
            assert_eq!(ran.result(), i * 2, "run {i}: {}", ran.text);
        }
        "tool" => assert_eq!(ran.result(), (i + 1) as f64, "run {i}: {}", ran.text),
        _ => assert_eq!(ran.error_type(), "KeyError", "run {i}: {}", ran.text),
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn ten_thousand_sequential_runs_over_stdio_keep_memory_bounded() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[]).await;
    let pid = client.pid.expect("gateway pid");
    for i in 0..WARM_UP {
        check(i, &client.exec(&snippet(i).0).await);
    }
    let before = rss_kib(pid);
    let started = Instant::now();
    let mut samples = Vec::new();
    for i in 0..RUNS {
        check(i, &client.exec(&snippet(i).0).await);
        if i % 1000 == 999 {
            samples.push(rss_kib(pid) >> 10);
        }
    }
    let took = started.elapsed();
    let after = rss_kib(pid);
    let growth = after.saturating_sub(before);
    eprintln!(
        "{RUNS} sequential runs over stdio (print / tool call / error) in {took:?} \
         ({:.2} ms per run): gateway RSS {} MiB before, {} MiB after (+{} KiB); MiB every 1000 runs: {samples:?}",
        took.as_secs_f64() * 1000.0 / RUNS as f64,
        before >> 10,
        after >> 10,
        growth
    );
    // Measured: about +5 MiB, nearly all of it the session's own interpreter
    // state (Monty's REPL keeps each fed snippet's code, ~300 bytes a run,
    // charged to the session's memory budget and freed with the session).
    assert!(
        growth < 16 << 10,
        "RSS grew by {growth} KiB over {RUNS} runs"
    );
    assert!(took < Duration::from_secs(600), "{took:?}");
}

/// Over HTTP, runs are slower in a debug build (about 8 ms each on two busy
/// cores), so fewer of them, in more sessions: what grows here is per session.
const HTTP_SESSIONS: usize = 20;
const HTTP_RUNS_PER_SESSION: usize = 150;

#[tokio::test]
async fn sequential_runs_in_many_http_sessions_keep_memory_bounded() {
    // Each session is closed (DELETE) after its runs: what the gateway process
    // keeps must not grow with the number of runs or sessions.
    let gateway =
        support::start_http(json!({"odd": odd(json!({}))}), &[("CODEMCP_MONTY", "pool")]).await;
    let pid = gateway.child.id().expect("gateway pid");
    let warm = support::http_connect(&gateway.url).await;
    for i in 0..WARM_UP {
        check(i, &support::http_exec(&warm, &snippet(i).0).await);
    }
    warm.cancel().await.expect("close the session");
    let before = rss_kib(pid);
    let started = Instant::now();
    let mut samples = Vec::new();
    for session in 0..HTTP_SESSIONS {
        let client = support::http_connect(&gateway.url).await;
        let first = session * HTTP_RUNS_PER_SESSION;
        for i in first..first + HTTP_RUNS_PER_SESSION {
            check(i, &support::http_exec(&client, &snippet(i).0).await);
        }
        client.cancel().await.expect("close the session");
        samples.push(rss_kib(pid) >> 10);
    }
    let took = started.elapsed();
    let after = rss_kib(pid);
    let growth = after.saturating_sub(before);
    let runs = HTTP_SESSIONS * HTTP_RUNS_PER_SESSION;
    eprintln!(
        "{runs} sequential runs over HTTP ({HTTP_SESSIONS} sessions, pool workers) in {took:?} ({:.2} ms per run): \
         gateway RSS {} MiB before, {} MiB after (+{} KiB); MiB after each session: {samples:?}",
        took.as_secs_f64() * 1000.0 / runs as f64,
        before >> 10,
        after >> 10,
        growth
    );
    assert!(
        growth < 8 << 10,
        "RSS grew by {growth} KiB over {runs} runs"
    );
}
