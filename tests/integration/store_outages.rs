//! A session store that stalls or restarts under a running gateway costs
//! bounded time, says what happened, and leaves nothing behind: a real
//! `codemcp serve --http` on a real `redis-server` that is paused with
//! `SIGSTOP`, resumed with `SIGCONT`, or killed and started again. The
//! gateway is never restarted. Figures are printed (`--nocapture`).
//!
//! Without `redis-server` on PATH these tests print a skip line, except under
//! `CI=true`, where they fail.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use support::redis::Redis;
use support::{HttpClient, HttpGateway, Ran, http_connect, start_http, unpack};

const KEY: &str = "store-outage-test-key-0123456789abcdefghij";
/// The default `CODEMCP_SESSION_STORE_TIMEOUT_MS`, which these tests keep.
const STORE_TIMEOUT: Duration = Duration::from_secs(5);
/// The default `CODEMCP_EXEC_TIMEOUT_MS`: how long a run waits for a busy session.
const WALL: Duration = Duration::from_secs(30);

async fn gateway(redis: &Redis) -> HttpGateway {
    let url = redis.url();
    let env = [
        ("CODEMCP_SESSION_STORE", url.as_str()),
        ("CODEMCP_SESSION_KEY", KEY),
        ("CODEMCP_MONTY", "inprocess"),
    ];
    start_http(json!({}), &env).await
}

/// One `execute_python` call in session `session`, and how long it took.
/// Never waits longer than the run's wall time plus a margin.
async fn call(client: &HttpClient, code: &str, session: Option<&str>) -> (Ran, Duration) {
    let mut args = json!({ "code": code });
    if let Some(session) = session {
        args["session"] = json!(session);
    }
    let args = args.as_object().cloned().unwrap_or_default();
    let started = Instant::now();
    let result = tokio::time::timeout(
        WALL + Duration::from_secs(15),
        client.call_tool(CallToolRequestParams::new("execute_python").with_arguments(args)),
    )
    .await
    .expect("the call answers at all")
    .expect("tools/call execute_python");
    (unpack(result), started.elapsed())
}

fn handle(ran: &Ran) -> String {
    ran.structured["session"]
        .as_str()
        .unwrap_or_else(|| panic!("no session handle: {}", ran.text))
        .to_owned()
}

fn warnings(ran: &Ran) -> String {
    ran.structured["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Pause Redis: the call during the pause fails its store calls within the
/// store timeout and says so; once Redis resumes, the very next call runs
/// (its lease taken before the pause does not make it "busy"), and its state
/// is saved again.
#[tokio::test]
async fn redis_sigstop_costs_bounded_time_and_recovers() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let gw = gateway(&redis).await;
    let client = http_connect(&gw.url).await;
    let (ran, _) = call(&client, "x = 1\nx", None).await;
    assert!(!ran.is_error, "{}", ran.text);
    let h = handle(&ran);

    redis.signal(libc::SIGSTOP);
    let (ran, stalled) = call(&client, "x = x + 1\nx", Some(&h)).await;
    // Resume before asserting, so a failure leaves no frozen redis-server.
    redis.signal(libc::SIGCONT);
    assert!(!ran.is_error, "the run still runs: {}", ran.text);
    assert_eq!(ran.result(), 2, "{}", ran.text);
    let said = warnings(&ran);
    assert!(
        said.contains(&format!(
            "session store did not answer within {} s",
            STORE_TIMEOUT.as_secs()
        )) && said.contains(&redis.url()),
        "the warning says what happened and where: {}",
        ran.text
    );
    // One store timeout for the whole call: the saved helpers' read, the
    // lease and the load share it (the load is not even tried on a store that
    // just did not answer); plus the run and a loaded machine's margin.
    assert!(
        stalled < STORE_TIMEOUT + Duration::from_millis(1_500),
        "a call during the stall took {stalled:?}, over the {STORE_TIMEOUT:?} store timeout"
    );

    let (ran, after) = call(&client, "x = x + 1\nx", Some(&h)).await;
    println!(
        "FIGURE redis SIGSTOP: the call during the stall took {stalled:?}; the first call after SIGCONT took {after:?}"
    );
    assert!(!ran.is_error, "not busy after the stall: {}", ran.text);
    assert_eq!(ran.result(), 3, "{}", ran.text);
    assert!(
        after < STORE_TIMEOUT,
        "the first call after SIGCONT took {after:?}"
    );
    assert_eq!(warnings(&ran), "", "the store answers again: {}", ran.text);

    // Saved again: a second gateway on the same Redis sees the latest state.
    let other = gateway(&redis).await;
    let other_client = http_connect(&other.url).await;
    let (ran, _) = call(&other_client, "x", Some(&h)).await;
    assert_eq!(ran.result(), 3, "{}", ran.text);
}

/// Kill Redis and start it again on the same port (empty: no persistence):
/// the gateway reconnects by itself and its sessions go on from what it holds.
#[tokio::test]
async fn redis_restart_recovers_without_gateway_restart() {
    let Some(mut redis) = Redis::start_or_skip() else {
        return;
    };
    let gw = gateway(&redis).await;
    let client = http_connect(&gw.url).await;
    let (ran, _) = call(&client, "x = 1\nx", None).await;
    let h = handle(&ran);

    // Restarted while paused: the gateway's connection hears nothing, then
    // the process is gone.
    redis.signal(libc::SIGSTOP);
    let (ran, stalled) = call(&client, "x = x + 1\nx", Some(&h)).await;
    assert_eq!(ran.result(), 2, "{}", ran.text);
    redis.stop();
    redis.start();
    let (ran, first) = call(&client, "x = x + 1\nx", Some(&h)).await;
    println!(
        "FIGURE redis restart: the call during the stall took {stalled:?}; the first call after the restart took {first:?}"
    );
    assert!(!ran.is_error, "{}", ran.text);
    assert_eq!(ran.result(), 3, "{}", ran.text);
    assert!(
        first < STORE_TIMEOUT,
        "the first call after the restart took {first:?}"
    );
    assert_eq!(
        warnings(&ran),
        "",
        "the first call after the restart reaches the new Redis: {}",
        ran.text
    );
    let other = gateway(&redis).await;
    let other_client = http_connect(&other.url).await;
    let (ran, _) = call(&other_client, "x", Some(&h)).await;
    assert_eq!(ran.result(), 3, "saved in the new Redis: {}", ran.text);
}

/// `CODEMCP_MAX_SESSION_BYTES`: a session state over the limit is not saved
/// (the file store here), the result says so and names the setting, and the
/// state goes on in this gateway's memory; one under it is saved as usual.
#[tokio::test]
async fn a_session_over_max_session_bytes_is_not_saved_and_says_so() {
    let limit = 64 * 1024;
    let env = [
        ("CODEMCP_MAX_SESSION_BYTES", "64KiB"),
        ("CODEMCP_MONTY", "inprocess"),
    ];
    let gw = start_http(json!({}), &env).await;
    let client = http_connect(&gw.url).await;
    let (ran, _) = call(&client, "x = 'a' * 1000\nlen(x)", None).await;
    assert_eq!(warnings(&ran), "", "under the limit: saved: {}", ran.text);
    let h = handle(&ran);
    let code = format!("x = 'a' * {}\nlen(x)", limit * 2);
    let (ran, _) = call(&client, &code, Some(&h)).await;
    assert!(!ran.is_error, "{}", ran.text);
    let said = warnings(&ran);
    assert!(
        said.contains(&format!("over the {limit}-byte limit"))
            && said.contains("CODEMCP_MAX_SESSION_BYTES"),
        "the warning names the limit: {}",
        ran.text
    );
    let (ran, _) = call(&client, "len(x)", Some(&h)).await;
    assert_eq!(ran.result(), limit * 2, "kept in memory: {}", ran.text);
}
