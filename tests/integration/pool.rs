//! Pool placement (the default for `serve --http`): one agent's crash or runaway
//! code costs only its own session; the others keep their state, and the
//! gateway's memory stays flat. Everything aims at loopback only.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{HttpGateway, start_http};

async fn connect(url: &str) -> support::HttpClient {
    support::http_connect(url).await
}

async fn exec(client: &support::HttpClient, code: &str) -> support::Ran {
    support::http_exec(client, code).await
}

fn pid(gateway: &HttpGateway) -> u32 {
    gateway.child.id().expect("gateway pid")
}

fn rss_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .expect("field");
    line.split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse::<u64>().ok())
        .expect("number")
        * 1024
}

/// Pids of the gateway's `monty` worker children.
fn workers(gateway_pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let after_name = stat.rsplit(')').next().unwrap_or_default();
            let ppid = after_name
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u32>().ok());
            ppid == Some(gateway_pid) && stat.contains("(monty)")
        })
        .collect()
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[tokio::test]
async fn one_sessions_crash_or_runaway_does_not_touch_the_others() {
    let gateway = start_http(
        json!({}),
        &[
            ("CODEMCP_EXEC_TIMEOUT_MS", "3000"),
            ("CODEMCP_MONTY", "pool"),
        ],
    )
    .await;
    let mut bystanders = Vec::new();
    for i in 0..3 {
        let client = connect(&gateway.url).await;
        assert!(!exec(&client, &format!("mine = {i}")).await.is_error);
        bystanders.push(client);
    }
    let attacker = connect(&gateway.url).await;
    let base_rss = rss_bytes(pid(&gateway), "VmRSS:");
    let attacks = [
        (
            "import json\njson.dumps([[1]] * 1000, indent=10**7)",
            &["MemoryError", "RuntimeError"][..],
        ),
        ("''.join(['y' * 60_000_000] * 100)", &["MemoryError"][..]),
        (
            "def f(n):\n    return f(n + 1)\nf(0)",
            &["RecursionError"][..],
        ),
        (
            "import json\nx = []\nfor i in range(100_000):\n    x = [x]\njson.dumps(x)",
            &["RecursionError", "ValueError"][..],
        ),
        ("while True:\n    pass", &["TimeoutError"][..]),
    ];
    for (code, expected) in attacks {
        exec(&attacker, "state = 1").await;
        let started = Instant::now();
        let ran = exec(&attacker, code).await;
        assert!(ran.is_error, "{code}: {}", ran.text);
        assert!(expected.contains(&ran.error_type()), "{code}: {}", ran.text);
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{code} took {:?}",
            started.elapsed()
        );
        for (i, client) in bystanders.iter().enumerate() {
            let ran = exec(client, "mine").await;
            assert_eq!(ran.result(), i, "bystander {i} after {code}: {}", ran.text);
        }
        // The attacker's session keeps working, with fresh state when its worker was lost.
        assert_eq!(exec(&attacker, "2 + 2").await.result(), 4);
    }
    let rss = rss_bytes(pid(&gateway), "VmRSS:");
    assert!(
        rss < base_rss + (64 << 20),
        "gateway RSS grew from {} to {} MiB",
        base_rss >> 20,
        rss >> 20
    );
    let peak = rss_bytes(pid(&gateway), "VmHWM:");
    assert!(peak < 200 << 20, "gateway peak RSS {} MiB", peak >> 20);
}

#[tokio::test]
async fn a_worker_killed_from_outside_is_replaced() {
    let gateway = start_http(json!({}), &[("CODEMCP_MONTY", "pool")]).await;
    let a = connect(&gateway.url).await;
    let b = connect(&gateway.url).await;
    exec(&a, "x = 'a'").await;
    exec(&b, "x = 'b'").await;
    let before = workers(pid(&gateway));
    assert!(before.len() >= 2, "workers: {before:?}");
    for worker in &before {
        let _ = std::process::Command::new("kill")
            .args(["-9", &worker.to_string()])
            .status();
    }
    let ran = exec(&a, "x").await;
    assert!(ran.is_error, "{}", ran.text);
    assert!(
        ran.error_message().contains("state was lost"),
        "{}",
        ran.text
    );
    assert_eq!(
        exec(&a, "1 + 1").await.result(),
        2,
        "the session gets a new worker"
    );
    assert_eq!(exec(&connect(&gateway.url).await, "3").await.result(), 3);
}

#[tokio::test]
async fn sequential_sessions_leak_neither_workers_nor_file_descriptors() {
    let gateway = start_http(json!({}), &[("CODEMCP_MONTY", "pool")]).await;
    let gateway_pid = pid(&gateway);
    // Warm up: the pool and the HTTP server reach their steady state, with
    // every worker held by an idle session (sessions outlive their clients;
    // the least recently used gives its worker up to a new one).
    for _ in 0..20 {
        let client = connect(&gateway.url).await;
        exec(&client, "1").await;
        let _ = client.cancel().await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let fds_before = open_fds(gateway_pid);
    for i in 0..200 {
        let client = connect(&gateway.url).await;
        let ran = exec(&client, &format!("v = {i}\nv * 2")).await;
        assert_eq!(ran.result(), i * 2, "{}", ran.text);
        let _ = client.cancel().await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let live = workers(gateway_pid).len();
    assert!(live <= 16, "{live} workers alive after 200 sessions");
    let fds_after = open_fds(gateway_pid);
    assert!(
        fds_after <= fds_before + 8,
        "fds {fds_before} -> {fds_after}"
    );
}
