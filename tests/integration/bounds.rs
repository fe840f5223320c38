//! Numbers the docs promise that no other test held (issue 37: the bounds we
//! state are the bounds we keep): the saved helpers' limits and the default
//! recursion depth. Each is exercised end to end through a stdio gateway.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use serde_json::json;
use support::Setup;

/// `CODEMCP_HELPERS_MAX_COUNT`, `CODEMCP_HELPERS_MAX_BYTES` and
/// `CODEMCP_HELPERS_MAX_TOTAL_BYTES`: a save past each is refused, naming the
/// setting, and what was saved before stays.
#[tokio::test]
async fn helper_limits_refuse_the_save_that_passes_them() {
    let client = Setup::new(json!({}))
        .stdio(&[
            ("CODEMCP_HELPERS_SAVE", "allow"),
            ("CODEMCP_HELPERS_MAX_COUNT", "2"),
            ("CODEMCP_HELPERS_MAX_BYTES", "1KiB"),
        ])
        .await;
    let save = |name: &str, body: &str| {
        format!(
            "def {name}(x):\n    {body}\n\ntry:\n    save_helper({name})\n    r = 'saved'\nexcept Exception as e:\n    r = str(e)\nr"
        )
    };
    for name in ["first", "second"] {
        let ran = client.exec(&save(name, "return x")).await;
        assert_eq!(ran.result(), "saved", "{}", ran.text);
    }
    let ran = client.exec(&save("third", "return x")).await;
    let said = ran.result().as_str().unwrap_or_default().to_owned();
    assert!(
        said.contains("CODEMCP_HELPERS_MAX_COUNT") && said.contains("you keep 2 helpers"),
        "{}",
        ran.text
    );
    // Replacing one of the two is not a third.
    let ran = client.exec(&save("first", "return x + 1")).await;
    assert_eq!(ran.result(), "saved", "{}", ran.text);
    // A string literal: comments may not count as source.
    let long = format!("return x if '{}' else 0", "y".repeat(1100));
    let ran = client.exec(&save("second", &long)).await;
    let said = ran.result().as_str().unwrap_or_default().to_owned();
    assert!(
        said.contains("CODEMCP_HELPERS_MAX_BYTES") && said.contains("the limit is 1024 bytes"),
        "{}",
        ran.text
    );
    let ran = client.exec("[first(1), second(1)]").await;
    assert_eq!(ran.result(), &json!([2, 1]), "{}", ran.text);

    let client = Setup::new(json!({}))
        .stdio(&[
            ("CODEMCP_HELPERS_SAVE", "allow"),
            ("CODEMCP_HELPERS_MAX_TOTAL_BYTES", "2KiB"),
        ])
        .await;
    let mut said = String::new();
    for i in 0..8 {
        let ran = client
            .exec(&save(
                &format!("h{i}"),
                &format!("return x if '{}' else 0", "z".repeat(400)),
            ))
            .await;
        said = ran.result().as_str().unwrap_or_default().to_owned();
        if said != "saved" {
            break;
        }
    }
    assert!(
        said.contains("CODEMCP_HELPERS_MAX_TOTAL_BYTES")
            && said.contains("over the 2048 bytes allowed"),
        "{said}"
    );
}

/// `CODEMCP_MAX_RECURSION` (default 200): recursion well under it runs, well
/// over it is a catchable `RecursionError`.
#[tokio::test]
async fn recursion_stops_near_the_default_depth() {
    let client = Setup::new(json!({})).stdio(&[]).await;
    let depth = |n: u32| {
        format!(
            "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\ntry:\n    r = f({n})\nexcept RecursionError:\n    r = 'RecursionError'\nr"
        )
    };
    let ran = client.exec(&depth(150)).await;
    assert_eq!(ran.result(), 150, "{}", ran.text);
    let ran = client.exec(&depth(260)).await;
    assert_eq!(ran.result(), "RecursionError", "{}", ran.text);
    let client = Setup::new(json!({}))
        .stdio(&[("CODEMCP_MAX_RECURSION", "400")])
        .await;
    let ran = client.exec(&depth(260)).await;
    assert_eq!(ran.result(), 260, "raised, the limit moves: {}", ran.text);
}

/// `CODEMCP_AUDIT_KEEP_FILES`: rotation keeps that many older files
/// (`PATH.1` … `PATH.N`) and no more. Every write rotates here (1-byte files).
#[tokio::test]
async fn audit_rotation_keeps_exactly_the_files_it_says() {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("audit.jsonl");
    let path = audit.to_str().expect("utf-8");
    let client = Setup::new(json!({"everything": support::everything()}))
        .stdio(&[
            ("CODEMCP_AUDIT_LOG", path),
            ("CODEMCP_AUDIT_MAX_BYTES", "1"),
            ("CODEMCP_AUDIT_KEEP_FILES", "2"),
        ])
        .await;
    let ran = client
        .exec("[everything_echo(message=str(i)) for i in range(6)]")
        .await;
    assert!(!ran.is_error, "{}", ran.text);
    let rotated = |n: u32| dir.path().join(format!("audit.jsonl.{n}")).exists();
    assert!(
        audit.exists() && rotated(1) && rotated(2),
        "kept files missing"
    );
    assert!(!rotated(3), "more than CODEMCP_AUDIT_KEEP_FILES kept");
}

/// docs/sessions.md: in Redis, a lease whose gateway died frees itself after
/// `CODEMCP_EXEC_TIMEOUT_MS` + 30 s. Read from Redis itself while a run
/// holds its session: the lease key's time to live.
#[tokio::test]
async fn a_redis_lease_lives_the_exec_timeout_plus_30_s() {
    let Some(redis) = support::redis::Redis::start_or_skip() else {
        return;
    };
    let url = redis.url();
    let env = [
        ("CODEMCP_SESSION_STORE", url.as_str()),
        (
            "CODEMCP_SESSION_KEY",
            "bounds-test-key-0123456789abcdefghijklmn",
        ),
        ("CODEMCP_MONTY", "inprocess"),
        ("CODEMCP_EXEC_TIMEOUT_MS", "5000"),
    ];
    let gw = support::start_http(json!({}), &env).await;
    let client = support::http_connect(&gw.url).await;
    let run = support::http_exec(&client, "import time\ntime.sleep(2)\n1");
    let port = redis.port.to_string();
    let ttl = async {
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        let cli = |args: &[&str]| {
            let out = std::process::Command::new("redis-cli")
                .args(["-p", &port])
                .args(args)
                .output()
                .expect("redis-cli runs");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        let key = cli(&["--scan", "--pattern", "codemcp:l:*"]);
        assert!(!key.is_empty(), "no lease held during the run");
        cli(&["PTTL", key.lines().next().unwrap_or_default()])
    };
    let (ran, ttl) = tokio::join!(run, ttl);
    assert!(!ran.is_error, "{}", ran.text);
    let ms: u64 = ttl.parse().unwrap_or_else(|_| panic!("PTTL {ttl:?}"));
    assert!(
        (30_000..=35_000).contains(&ms),
        "the lease lives {ms} ms, not 5 s + 30 s"
    );
}
