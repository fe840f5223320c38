//! Sessions end to end, with real parts: the codemcp binary over stdio and
//! `serve --http`, real MCP clients (rmcp, PyPI `mcp`), the SQLite file store
//! on disk, `redis-server`, `kill -9`. Every gateway gets its own temporary
//! `XDG_STATE_HOME`; everything listens on loopback only.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::redis::Redis;
use support::{HttpClient, Ran, Setup, python1, python2};

/// The key every gateway of one test shares (`CODEMCP_SESSION_KEY`).
const KEY: &str = "sessions-e2e-test-key-0123456789abcdefghij";

mod fixture;

use fixture::{
    NEVER_MINTED, arguments, call, call_with, code_step, code_step_in, connect, drive, handle,
    monty_workers, normalized, refused, serve, sqlite_file, state_dir, two_on_redis, value,
    warnings,
};

// ================================================================= tests

#[tokio::test]
async fn modern_client_keeps_variables_by_passing_the_handle_back() {
    let state = state_dir();
    // The memory store too: its state lives only in the engine, which must
    // not let go of it when one stateless request ends.
    let memory = serve(state.path(), &[("CODEMCP_SESSION_STORE", "memory")]).await;
    let steps = json!([code_step("x = 41"), code_step_in("x + 1", 0)]);
    let report = drive(&python2(), &memory.url, "auto", &steps).await;
    let r = &report["results"];
    assert_eq!(
        r[1]["structuredContent"]["result"], 42,
        "memory store: {report}"
    );

    let gateway = serve(state.path(), &[]).await;
    // 2026-07-28 has no protocol session: the handle is the only thread.
    let steps = json!([
        code_step("x = 41"),
        code_step_in("x + 1", 0),
        code_step("x + 1"),
    ]);
    let report = drive(&python2(), &gateway.url, "auto", &steps).await;
    assert_eq!(report["protocol"], "2026-07-28", "{report}");
    let r = &report["results"];
    let first = r[0]["structuredContent"]["session"]
        .as_str()
        .expect("handle");
    assert_eq!(r[1]["isError"], false, "{report}");
    assert_eq!(r[1]["structuredContent"]["result"], 42, "{report}");
    assert_eq!(r[1]["structuredContent"]["session"], first, "{report}");
    assert_eq!(
        r[2]["structuredContent"]["error"]["type"], "NameError",
        "without the handle a stateless client lands in a new session: {report}"
    );
    assert_ne!(r[2]["structuredContent"]["session"], first, "{report}");

    // The initialize era keeps state without a handle (Mcp-Session-Id).
    let steps = json!([code_step("x = 41"), code_step("x + 1")]);
    for (python, mode) in [(python2(), "legacy"), (python1(), "auto")] {
        let report = drive(&python, &gateway.url, mode, &steps).await;
        let r = &report["results"];
        assert_eq!(r[1]["structuredContent"]["result"], 42, "{mode}: {report}");
        assert_eq!(
            r[0]["structuredContent"]["session"], r[1]["structuredContent"]["session"],
            "{report}"
        );
    }
}

#[tokio::test]
async fn stdio_keeps_state_without_a_handle_and_with_it() {
    let state = state_dir();
    let setup = Setup::new(json!({}));
    let xdg = state.path().display().to_string();
    let client = setup.stdio(&[("XDG_STATE_HOME", xdg.as_str())]).await;
    let first = client
        .exec("x = 41\ndef double(v):\n    return v * 2")
        .await;
    assert!(!first.is_error, "{}", first.text);
    let h = handle(&first);
    let implicit = client.exec("x + 1").await;
    assert_eq!(value(&implicit), 42);
    assert_eq!(handle(&implicit), h, "one stdio client, one session");
    let explicit = client
        .exec_args(json!({"code": "double(x)", "session": h}))
        .await;
    assert_eq!(value(&explicit), 82);
    assert_eq!(handle(&explicit), h);
    // The memory store is the stdio default: nothing is written to disk.
    assert!(!sqlite_file(state.path()).exists());
}

#[tokio::test]
async fn killed_gateway_restarts_with_its_sessions() {
    for placement in ["pool", "inprocess"] {
        let state = state_dir();
        // No CODEMCP_SESSION_KEY: the key file in the state dir must survive too.
        let env = [("CODEMCP_MONTY", placement)];
        let gateway = serve(state.path(), &env).await;
        let client = connect(&gateway.url, None).await;
        let ran = call(
            &client,
            "x = 41\ndata = {'k': [1, 2, 3]}\ndef f(v):\n    return v + len(data['k'])",
            None,
        )
        .await;
        assert!(!ran.is_error, "{placement}: {}", ran.text);
        let h = handle(&ran);
        assert_eq!(
            value(&call(&client, "x = x + 1", Some(&h)).await),
            &Value::Null
        );
        let pid = gateway.pid();
        let workers_before = monty_workers(pid);
        gateway.kill9().await;
        drop(client);
        let key = state.path().join("codemcp/session.key");
        let mode = std::fs::metadata(&key).expect("key file").permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );

        let gateway = serve(state.path(), &env).await;
        let client = connect(&gateway.url, None).await;
        let ran = call(&client, "f(x)", Some(&h)).await;
        assert_eq!(value(&ran), 45, "{placement}: {}", gateway.log());
        assert_eq!(handle(&ran), h);
        // Workers of the killed gateway do not linger.
        let deadline = Instant::now() + Duration::from_secs(10);
        while workers_before
            .iter()
            .any(|w| support::process_alive(u64::from(*w)))
        {
            assert!(
                Instant::now() < deadline,
                "{placement}: workers {workers_before:?} of the killed gateway outlived it"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Variables JSON holds exactly survive; functions, classes and objects do not.
const CPYTHON_STATE: &str = "import statistics\nx = 41\nm = statistics.mean([1, 2, 3])\n\
    pair = (1, 2)\nnested = {'a': [1.5, None, True]}\ndef f(v):\n    return v + 1\n\
    class C:\n    pass\nobj = C()";
const CPYTHON_CHECK: &str = "[x + 1, m, pair, nested, [n in globals() for n in ('f', 'C', 'obj')]]";

#[tokio::test]
async fn cpython_sessions_keep_their_json_variables_across_a_restart() {
    let python = support::worker_python();
    let python = python.to_str().expect("utf-8 path");
    let host = [
        ("CODEMCP_ISOLATION", "HOST_SYSTEM"),
        ("CODEMCP_PYTHON", python),
    ];
    let escalating = [("CODEMCP_FALLBACK", "host"), ("CODEMCP_PYTHON", python)];
    for env in [&host[..], &escalating[..]] {
        let state = state_dir();
        let gateway = serve(state.path(), env).await;
        let client = connect(&gateway.url, None).await;
        let ran = call(&client, CPYTHON_STATE, None).await;
        assert!(!ran.is_error, "{env:?}: {}", ran.text);
        assert!(warnings(&ran).is_empty(), "{env:?}: {}", ran.text);
        let h = handle(&ran);
        gateway.kill9().await;

        let gateway = serve(state.path(), env).await;
        let client = connect(&gateway.url, None).await;
        let ran = call(&client, CPYTHON_CHECK, Some(&h)).await;
        let expected = json!([42, 2, [1, 2], {"a": [1.5, null, true]}, [false, false, false]]);
        assert_eq!(value(&ran), &expected, "{env:?}: {}", ran.text);
        assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
        assert_eq!(handle(&ran), h);
        gateway.kill9().await;
    }
    // A gateway without CPython cannot load that state: it says so.
    let state = state_dir();
    let gateway = serve(state.path(), &escalating).await;
    let client = connect(&gateway.url, None).await;
    let h = handle(&call(&client, CPYTHON_STATE, None).await);
    gateway.kill9().await;
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    let ran = call(&client, "1 + 1", Some(&h)).await;
    assert_eq!(ran.result(), 2, "{}", ran.text);
    let said = warnings(&ran).join("\n");
    assert!(said.contains("saved by CPython"), "{}", ran.text);
}

#[tokio::test]
async fn two_gateways_on_one_redis_serve_each_others_handles() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let state = state_dir();
    let (a, b) = two_on_redis(&redis, state.path()).await;
    let on_a = connect(&a.url, None).await;
    let on_b = connect(&b.url, None).await;
    let set = call(&on_a, "x = 1\nseen = ['a']", None).await;
    assert!(!set.is_error, "{}", set.text);
    let h = handle(&set);
    assert_eq!(
        value(&call(&on_b, "[x, seen]", Some(&h)).await),
        &json!([1, ["a"]])
    );
    let update = call(&on_b, "x = x + 10\nseen.append('b')", Some(&h)).await;
    assert!(!update.is_error, "{}", update.text);
    // A still holds version 1 in its worker; the store has B's newer one.
    assert_eq!(
        value(&call(&on_a, "[x, seen]", Some(&h)).await),
        &json!([11, ["a", "b"]])
    );
    // And back again, through A's own (now current) worker.
    assert_eq!(value(&call(&on_a, "x = x * 2\nx", Some(&h)).await), 22);
    assert_eq!(value(&call(&on_b, "x", Some(&h)).await), 22);
}

#[tokio::test]
async fn handle_from_another_token_is_refused_like_an_unknown_one() {
    // No CODEMCP_HTTP_TOKEN on loopback: any bearer token is let in, and the
    // token a client presents decides whose sessions it may use.
    let state = state_dir();
    let gateway = serve(state.path(), &[]).await;
    let alice = connect(&gateway.url, Some("alice-token")).await;
    let mallory = connect(&gateway.url, Some("mallory-token")).await;
    let anonymous = connect(&gateway.url, None).await;

    let ran = call(&alice, "secret = 'alice-only'", None).await;
    assert!(!ran.is_error, "{}", ran.text);
    let h = handle(&ran);

    let stolen = call(&mallory, "print(secret)\nsecret", Some(&h)).await;
    let new_m = refused(&stolen, &h);
    let unknown = call(&mallory, "print(secret)\nsecret", Some(NEVER_MINTED)).await;
    let new_u = refused(&unknown, NEVER_MINTED);
    assert_eq!(
        normalized(&stolen, &[&h, &new_m]),
        normalized(&unknown, &[NEVER_MINTED, &new_u]),
        "a foreign handle is refused exactly like an unknown one"
    );
    let by_nobody = call(&anonymous, "secret", Some(&h)).await;
    refused(&by_nobody, &h);
    assert_eq!(
        normalized(
            &by_nobody,
            &[&h, by_nobody.structured["session"].as_str().unwrap_or("")]
        ),
        normalized(&unknown, &[NEVER_MINTED, &new_u]),
    );
    // Alice's handle against a session someone else holds: refused as well.
    let reverse = call(&alice, "1", Some(&new_m)).await;
    refused(&reverse, &new_m);

    // The refusals cost Alice nothing, and Mallory's new session is his own.
    assert_eq!(value(&call(&alice, "secret", Some(&h)).await), "alice-only");
    assert_eq!(value(&call(&mallory, "'mine'", Some(&new_m)).await), "mine");

    // While Alice's run holds the session, a foreign caller that gives up
    // waiting must still be told "unknown", not "busy".
    let long = call(&alice, "import time\ntime.sleep(1.5)\n'done'", Some(&h));
    let probe = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        call_with(&mallory, arguments("secret", Some(&h), Some(300))).await
    };
    let (long, probe) = tokio::join!(long, probe);
    assert_eq!(value(&long), "done");
    let new_p = refused(&probe, &h);
    assert_eq!(
        normalized(&probe, &[&h, &new_p]),
        normalized(&unknown, &[NEVER_MINTED, &new_u]),
        "a foreign caller cannot tell that the session is in use"
    );
}

#[tokio::test]
async fn tampered_snapshot_is_refused_and_the_run_starts_fresh() {
    let state = state_dir();
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    let first = call(&client, "x = 'precious'", None).await;
    let second = call(&client, "y = 'other'", Some(NEVER_MINTED)).await;
    let h = handle(&first);
    let other = refused(&second, NEVER_MINTED);
    assert!(!call(&client, "y = 'other'", Some(&other)).await.is_error);

    let db = rusqlite::Connection::open(sqlite_file(state.path())).expect("open the store file");
    db.busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    let record = |handle: &str| -> Vec<u8> {
        db.query_row(
            "SELECT record FROM records WHERE handle = ?1",
            [handle],
            |r| r.get(0),
        )
        .expect("the session's record")
    };
    let put = |handle: &str, bytes: &[u8]| {
        let n = db
            .execute(
                "UPDATE records SET record = ?2 WHERE handle = ?1",
                rusqlite::params![handle, bytes],
            )
            .expect("update");
        assert_eq!(n, 1);
    };

    // One flipped byte in the middle of the record.
    let mut bytes = record(&h);
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    put(&h, &bytes);
    // A gateway that still holds the session does not read the store again;
    // a restarted one (or another replica) must, and refuses the record.
    gateway.kill9().await;
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    let ran = call(&client, "x", Some(&h)).await;
    assert_eq!(ran.error_type(), "NameError", "{}", ran.text);
    assert!(
        warnings(&ran).iter().any(|w| w.contains("refused")),
        "{}",
        ran.text
    );
    assert_eq!(handle(&ran), h, "the same session goes on, fresh");
    // A new state is saved over the refused one and works as usual.
    assert!(!call(&client, "x = 'fresh'", Some(&h)).await.is_error);
    assert_eq!(value(&call(&client, "x", Some(&h)).await), "fresh");

    // A genuine record moved under another handle is refused as well.
    let genuine = record(&h);
    put(&other, &genuine);
    gateway.kill9().await;
    let mut gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    let ran = call(&client, "[x, y]", Some(&other)).await;
    assert_eq!(ran.error_type(), "NameError", "{}", ran.text);
    assert!(
        warnings(&ran).iter().any(|w| w.contains("refused")),
        "{}",
        ran.text
    );
    // Both sessions still work, and so does the gateway.
    assert_eq!(value(&call(&client, "x", Some(&h)).await), "fresh");
    assert_eq!(value(&call(&client, "1 + 1", None).await), 2);
    gateway.assert_alive();
}

/// Runs `code` on `h` from every client at once; returns the results.
async fn at_once(clients: &[&HttpClient], h: &str, code: &str) -> Vec<Ran> {
    futures::future::join_all(clients.iter().map(|c| call(c, code, Some(h)))).await
}

const INCREMENT: &str = "import time\nbefore = n\ntime.sleep(0.5)\nn = before + 1\nn";

#[tokio::test]
async fn concurrent_runs_on_one_handle_never_interleave() {
    // One gateway, two MCP sessions of the same (anonymous) caller.
    let state = state_dir();
    let gateway = serve(state.path(), &[]).await;
    let c1 = connect(&gateway.url, None).await;
    let c2 = connect(&gateway.url, None).await;
    let h = handle(&call(&c1, "n = 0", None).await);
    let started = Instant::now();
    let results = at_once(&[&c1, &c2], &h, INCREMENT).await;
    for ran in &results {
        assert!(!ran.is_error, "the second run waits its turn: {}", ran.text);
    }
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "the runs overlapped"
    );
    let mut seen: Vec<_> = results.iter().map(|r| r.result().clone()).collect();
    seen.sort_by_key(|v| v.as_i64());
    assert_eq!(seen, [json!(1), json!(2)]);
    assert_eq!(value(&call(&c2, "n", Some(&h)).await), 2);

    // A caller that will not wait long enough is told so; nothing is lost.
    let long = call(&c1, INCREMENT, Some(&h));
    let short = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        call_with(&c2, arguments(INCREMENT, Some(&h), Some(200))).await
    };
    let (long, short) = tokio::join!(long, short);
    assert_eq!(value(&long), 3);
    assert!(short.is_error, "{}", short.text);
    assert!(
        short.error_message().contains("session busy"),
        "{}",
        short.text
    );
    assert_eq!(handle(&short), h);
    assert_eq!(value(&call(&c2, "n", Some(&h)).await), 3);

    // Two gateways on one Redis: runs on both, at once, count every one.
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let (a, b) = two_on_redis(&redis, state.path()).await;
    let a1 = connect(&a.url, None).await;
    let a2 = connect(&a.url, None).await;
    let b1 = connect(&b.url, None).await;
    let b2 = connect(&b.url, None).await;
    let h = handle(&call(&a1, "n = 0", None).await);
    let started = Instant::now();
    let results = at_once(&[&a1, &b1, &a2, &b2], &h, INCREMENT).await;
    for ran in &results {
        if ran.is_error {
            assert!(ran.error_message().contains("session busy"), "{}", ran.text);
        } else {
            // A run whose state was not saved would be a lost update too.
            assert!(warnings(ran).is_empty(), "{}", ran.text);
        }
    }
    let done = results.iter().filter(|r| !r.is_error).count() as i64;
    assert_eq!(done, 4, "every run waited its turn (30 s wall time each)");
    assert!(
        started.elapsed() >= Duration::from_millis(2000),
        "the runs overlapped"
    );
    assert_eq!(value(&call(&b1, "n", Some(&h)).await), done);
    assert_eq!(value(&call(&a1, "n", Some(&h)).await), done);
}

#[tokio::test]
async fn calls_at_once_in_one_mcp_session_share_its_state() {
    // A 2025-era client that names no handle: its first two calls overlap.
    let state = state_dir();
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    let first = call(
        &client,
        "import time\nn = 1\ntime.sleep(0.5)\nn = 2\nn",
        None,
    );
    let second = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        call(&client, "n", None).await
    };
    let (first, second) = tokio::join!(first, second);
    assert_eq!(value(&first), 2);
    assert_eq!(value(&second), 2, "the second call waited for the first");
    assert_eq!(handle(&first), handle(&second));

    // The client leaves; the state stays reachable through its handle.
    let h = handle(&first);
    client.cancel().await.expect("close the MCP session");
    let other = connect(&gateway.url, None).await;
    assert_eq!(value(&call(&other, "n + 1", Some(&h)).await), 3);
}

#[tokio::test]
async fn redis_stopped_mid_session_warns_and_recovers() {
    let Some(mut redis) = Redis::start_or_skip() else {
        return;
    };
    let state = state_dir();
    let (a, b) = two_on_redis(&redis, state.path()).await;
    let owner = connect(&a.url, Some("owner-token")).await;
    let mallory = connect(&a.url, Some("mallory-token")).await;
    let ran = call(&owner, "x = 1", None).await;
    let h = handle(&ran);
    assert!(warnings(&ran).is_empty(), "{}", ran.text);

    redis.stop();
    let ran = call(&owner, "x = x + 1\nx", Some(&h)).await;
    assert!(!ran.is_error, "the run still runs: {}", ran.text);
    assert_eq!(ran.result(), 2);
    assert_eq!(handle(&ran), h);
    let said = warnings(&ran).join("\n");
    assert!(
        said.contains("not persist") || said.contains("unavailable"),
        "{}",
        ran.text
    );
    // No store to check owners against: another token still gets nothing.
    let stolen = call(&mallory, "x", Some(&h)).await;
    assert!(stolen.is_error, "{}", stolen.text);
    assert_eq!(stolen.error_type(), "LookupError", "{}", stolen.text);
    assert_ne!(stolen.result(), 2);

    redis.start(); // the same port, empty
    // Persistence resumes: B (which never saw this session) gets A's state.
    let deadline = Instant::now() + Duration::from_secs(20);
    let ran = loop {
        let ran = call(&owner, "x = x + 1\nx", Some(&h)).await;
        assert!(!ran.is_error, "{}", ran.text);
        if warnings(&ran).is_empty() || Instant::now() > deadline {
            break ran;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(
        warnings(&ran).is_empty(),
        "the store never came back: {}",
        ran.text
    );
    let x = ran.result().as_i64().expect("x");
    assert!(x >= 3, "{}", ran.text);
    let on_b = connect(&b.url, Some("owner-token")).await;
    assert_eq!(value(&call(&on_b, "x", Some(&h)).await), x);
    drop(b);
}

#[tokio::test]
async fn a_thousand_sessions_keep_their_values_with_bounded_workers() {
    const SESSIONS: usize = 1000;
    const CLIENTS: usize = 4;
    let state = state_dir();
    let gateway = serve(
        state.path(),
        &[("CODEMCP_MONTY", "pool"), ("CODEMCP_MONTY_WORKERS", "4")],
    )
    .await;
    let pid = gateway.pid();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(connect(&gateway.url, None).await);
    }
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let watching = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watcher = {
        let (peak, watching) = (peak.clone(), watching.clone());
        tokio::spawn(async move {
            while watching.load(std::sync::atomic::Ordering::Relaxed) {
                let n = monty_workers(pid).len();
                peak.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let started = Instant::now();
    // Each session is new: a run without a handle, then one more naming it
    // (an initialize-era client otherwise continues its implicit session).
    let handles: Vec<String> = {
        let jobs = clients.iter().enumerate().map(|(k, client)| async move {
            let mut mine = Vec::new();
            for i in (k..SESSIONS).step_by(CLIENTS) {
                let ran = call(client, &format!("v = {i}"), Some("new-session!")).await;
                let fresh = refused(&ran, "new-session!");
                let ran = call(client, &format!("v = {i}"), Some(&fresh)).await;
                assert!(!ran.is_error, "{}", ran.text);
                mine.push((i, fresh));
            }
            mine
        });
        let mut all: Vec<(usize, String)> = futures::future::join_all(jobs)
            .await
            .into_iter()
            .flatten()
            .collect();
        all.sort();
        all.into_iter().map(|(_, h)| h).collect()
    };
    let written = started.elapsed();
    let jobs = clients.iter().enumerate().map(|(k, client)| {
        let handles = &handles;
        async move {
            for i in (k..SESSIONS).step_by(CLIENTS) {
                let ran = call(client, "v", Some(&handles[i])).await;
                assert_eq!(value(&ran), i, "session {i}");
            }
        }
    });
    futures::future::join_all(jobs).await;
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    let _ = watcher.await;
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{SESSIONS} sessions: written in {written:.1?}, read back in {:.1?}; peak {peak} monty workers",
        started.elapsed() - written
    );
    assert!(peak <= 4, "{peak} monty workers at once");
    assert!(monty_workers(pid).len() <= 4);
}

#[tokio::test]
async fn unknown_handle_starts_a_new_session_and_says_so() {
    let state = state_dir();
    let setup = Setup::new(json!({}));
    let xdg = state.path().display().to_string();
    let client = setup.stdio(&[("XDG_STATE_HOME", xdg.as_str())]).await;
    let mine = client.exec("kept = 'yes'").await;
    let h = handle(&mine);
    for given in [NEVER_MINTED, "not a handle!", "x"] {
        let ran = client
            .exec_args(json!({"code": "ran = True\nprint('ran')", "session": given}))
            .await;
        let new = refused(&ran, given);
        assert_ne!(new, h);
        assert!(
            ran.text.contains(&new),
            "the text names the new handle: {}",
            ran.text
        );
        // The code did not run in the new session, which exists and is empty.
        let check = client
            .exec_args(json!({"code": "ran", "session": new}))
            .await;
        assert_eq!(check.error_type(), "NameError", "{}", check.text);
        assert!(warnings(&check).is_empty(), "{}", check.text);
        assert_eq!(handle(&check), new);
    }
    // The session this client had before is untouched.
    let back = client
        .exec_args(json!({"code": "kept", "session": h}))
        .await;
    assert_eq!(value(&back), "yes");

    // An expired handle is answered the same way. Idle for 1 s, a session
    // is gone from the store at once and from memory within the gateway's
    // 5 s sweep (until then this gateway still serves it from memory).
    let client = setup
        .stdio(&[
            ("XDG_STATE_HOME", xdg.as_str()),
            ("CODEMCP_SESSION_IDLE_SECS", "1"),
        ])
        .await;
    let h = handle(&client.exec("kept = 'yes'").await);
    tokio::time::sleep(Duration::from_secs(7)).await;
    let ran = client
        .exec_args(json!({"code": "kept", "session": h}))
        .await;
    let new = refused(&ran, &h);
    let check = client
        .exec_args(json!({"code": "kept", "session": new}))
        .await;
    assert_eq!(check.error_type(), "NameError", "{}", check.text);
}

/// A session saved by the in-process engine goes on in a pool worker (codemcp
/// itself when built as its own worker, else `CODEMCP_MONTY_BIN`), and back:
/// both run the same Monty, so one's dump is the other's state.
#[tokio::test]
async fn a_session_moves_between_the_in_process_engine_and_a_pool_worker() {
    let state = state_dir();
    let steps = [
        ("inprocess", "x = 41\ndef f(v):\n    return v + 1", None),
        ("pool", "y = f(x)\ny", Some(42)),
        ("inprocess", "f(y) + x", Some(84)),
    ];
    let mut h: Option<String> = None;
    for (placement, code, expected) in steps {
        let gateway = serve(state.path(), &[("CODEMCP_MONTY", placement)]).await;
        let client = connect(&gateway.url, None).await;
        let ran = call(&client, code, h.as_deref()).await;
        assert!(
            !ran.is_error,
            "{placement}: {}\n{}",
            ran.text,
            gateway.log()
        );
        if let Some(expected) = expected {
            assert_eq!(value(&ran), expected, "{placement}: {}", ran.text);
        }
        let handle = handle(&ran);
        assert!(
            h.as_ref().is_none_or(|h| *h == handle),
            "{placement}: a new session"
        );
        h = Some(handle);
        drop(client);
        gateway.kill9().await;
    }
}
