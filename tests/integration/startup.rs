//! Cold start: `initialize` is answered before any upstream finished its
//! handshake; the first `tools/list` waits for them only up to
//! `CODEMCP_STARTUP_WAIT_MS`; an upstream that comes up later joins (the
//! client is told with `tools/list_changed`), and calling its tools before
//! then says it is still starting. Real processes: the `everything` server,
//! one that never answers its handshake, one that starts late; stdio and HTTP.
//! The tests after those use tests/servers/slow_server.py, whose start-up
//! (slow, failing its first starts) a control file decides.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::time::{Duration, Instant};

use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};
use support::{Setup, everything, http_connect, start_http};

/// A stdio "server" that never says a word: its handshake never finishes.
fn silent() -> Value {
    json!({"command": "sleep", "args": ["600"]})
}

/// The `everything` server, started only after `delay_s` seconds.
fn late(delay_s: u32) -> Value {
    let server = everything();
    let script = server["args"][0].as_str().expect("script path");
    json!({"command": "sh", "args": ["-c", format!("sleep {delay_s}; exec node '{script}' stdio")]})
}

#[tokio::test]
async fn a_silent_upstream_delays_tools_list_only_by_the_startup_wait() {
    let setup = Setup::new(json!({"everything": everything(), "silent": silent()}));
    let launched = Instant::now();
    let client = setup.stdio(&[("CODEMCP_STARTUP_WAIT_MS", "3000")]).await;
    let initialized = launched.elapsed();
    assert!(
        initialized < Duration::from_secs(2),
        "initialize took {initialized:?}"
    );

    let description = client.description().await;
    let listed = launched.elapsed();
    assert!(
        listed >= Duration::from_millis(3000) && listed < Duration::from_secs(6),
        "tools/list answered after {listed:?}, expected about the 3 s startup wait"
    );
    assert!(description.contains("everything_echo"), "{description}");

    let ran = client.exec("everything_echo(message='hi')").await;
    assert!(!ran.is_error, "{}", ran.text);
    let ran = client.exec("silent_anything()").await;
    assert!(ran.is_error, "{}", ran.text);
    assert!(
        ran.error_message()
            .contains("server 'silent' is still starting: connecting"),
        "{}",
        ran.text
    );
}

#[tokio::test]
async fn a_late_upstream_joins_and_clients_are_told() {
    let setup = Setup::new(json!({"everything": everything(), "late": late(5)}));
    let launched = Instant::now();
    let client = setup.stdio(&[("CODEMCP_STARTUP_WAIT_MS", "3000")]).await;
    assert!(launched.elapsed() < Duration::from_secs(2));

    let description = client.description().await;
    assert!(description.contains("everything_echo"), "{description}");
    assert!(!description.contains("late_echo"), "{description}");

    let ran = client
        .exec(
            "try:\n    late_echo(message='hi')\n    first = None\nexcept Exception as e:\n    first = str(e)\n\
             try:\n    describe_tool('late_echo')\n    second = None\nexcept KeyError as e:\n    second = str(e)\n\
             [first, second]",
        )
        .await;
    assert!(!ran.is_error, "{}", ran.text);
    for message in ran.result().as_array().expect("a list") {
        let message = message.as_str().unwrap_or_default();
        assert!(
            message.contains("server 'late' is still starting: connecting (started")
                && message.contains("try again shortly"),
            "{}",
            ran.text
        );
    }

    // Another change (the other server's own) may be announced first.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut joined = false;
    while !joined && Instant::now() < deadline {
        assert!(
            client.wait_changed(Duration::from_secs(20)).await,
            "no tools/list_changed"
        );
        joined = client.description().await.contains("late_echo");
    }
    assert!(joined, "the late upstream never joined the description");

    let ran = client.exec("late_echo(message='now')").await;
    assert!(!ran.is_error, "{}", ran.text);
    assert!(ran.text.contains("now"), "{}", ran.text);
}

#[tokio::test]
async fn over_http_the_sdk_read_waits_for_the_startup_wait_only() {
    let launched = Instant::now();
    let servers = json!({"everything": everything(), "silent": silent()});
    let gateway = start_http(servers, &[("CODEMCP_STARTUP_WAIT_MS", "3000")]).await;
    let client = http_connect(&gateway.url).await;
    let initialized = launched.elapsed();
    assert!(
        initialized < Duration::from_secs(2),
        "serving and initialize took {initialized:?}"
    );

    let read = client
        .read_resource(ReadResourceRequestParams::new("codemcp://sdk.pyi"))
        .await
        .expect("resources/read");
    let read_after = launched.elapsed();
    assert!(
        read_after >= Duration::from_millis(3000) && read_after < Duration::from_secs(6),
        "the SDK was read after {read_after:?}, expected about the 3 s startup wait"
    );
    let text = serde_json::to_string(&read).expect("json");
    assert!(text.contains("def everything_echo("), "{text}");
}

/// `slow_server.py` with its control file `<dir>/<name>.json` set to `control`.
fn slow(setup_dir: &std::path::Path, name: &str, control: &Value) -> Value {
    let path = setup_dir.join(format!("{name}.json"));
    std::fs::write(&path, control.to_string()).expect("write control file");
    json!({
        "command": support::python2(),
        "args": [support::repo().join("tests/servers/slow_server.py"), path],
    })
}

/// Rewrites a slow server's control file (read at its next start).
fn control(setup: &Setup, name: &str, control: &Value) {
    let path = setup.dir.path().join(format!("{name}.json"));
    std::fs::write(path, control.to_string()).expect("write control file");
}

/// The pids of every start of a slow server so far.
fn starts(setup: &Setup, name: &str) -> Vec<u64> {
    let path = setup.dir.path().join(format!("{name}.json.starts"));
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A setup whose servers are slow servers with these controls.
fn slow_setup(servers: &[(&str, Value)], extra: &[(&str, Value)]) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut entries = serde_json::Map::new();
    for (name, c) in servers {
        let mut entry = slow(dir.path(), name, c);
        for (key, value) in extra {
            entry[*key] = value.clone();
        }
        entries.insert((*name).to_owned(), entry);
    }
    let config = json!({"mcpServers": entries});
    std::fs::write(dir.path().join("mcp.json"), config.to_string()).expect("write config");
    Setup { dir }
}

/// Waits until the description contains `needle`, re-listing on every
/// `tools/list_changed`.
async fn joined(client: &support::Client, needle: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if client.description().await.contains(needle) {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !client.wait_changed(left).await {
            return client.description().await.contains(needle);
        }
    }
}

#[tokio::test]
async fn server_that_misses_start_joins_later_and_clients_get_list_changed() {
    // Its first two starts fail: before, it was dropped for good.
    let setup = slow_setup(&[("flaky", json!({"fail_first": 2}))], &[]);
    let client = setup.stdio(&[("CODEMCP_STARTUP_WAIT_MS", "3000")]).await;
    let description = client.description().await;
    if !description.contains("flaky_ping") {
        assert!(
            description.contains("\nflaky (not listed yet)"),
            "the description does not name the missing server: {description}"
        );
    }
    // Retries after 1 s and 2 s; generous for a loaded machine.
    assert!(
        joined(&client, "flaky_ping", Duration::from_secs(40)).await,
        "the server never joined: {}",
        client.description().await
    );
    assert!(!client.description().await.contains("not listed yet"));
    let ran = client.exec("flaky_ping(text='late')").await;
    assert!(!ran.is_error, "{}", ran.text);
    assert!(ran.text.contains("ping late"), "{}", ran.text);
    assert!(starts(&setup, "flaky").len() >= 3);
}

#[tokio::test]
async fn call_to_a_starting_server_raises_a_clear_tool_error_not_name_error() {
    let setup = slow_setup(
        &[("down", json!({"fail_first": 1000})), ("up", json!({}))],
        &[],
    );
    let client = setup.stdio(&[("CODEMCP_STARTUP_WAIT_MS", "5000")]).await;
    let description = client.description().await;
    assert!(description.contains("up_ping"), "{description}");
    // Named, its state not: that is for the calls' errors and search_tools.
    assert!(
        description.contains("\ndown (not listed yet)") && !description.contains("retried"),
        "{description}"
    );
    let ran = client
        .exec(
            "try:\n    down_ping(text='x')\n    caught = None\nexcept ToolError as e:\n    caught = str(e)\n\
             hits = [h['name'] for h in search_tools('ping')]\n[caught, hits, up_ping(text='y')]",
        )
        .await;
    assert!(!ran.is_error, "{}", ran.text);
    let result = ran.result();
    let caught = result[0].as_str().unwrap_or_default();
    assert!(
        caught.contains("server 'down' is still starting: its last attempt failed (")
            && caught.contains("retried in the background"),
        "{}",
        ran.text
    );
    let hits = result[1].as_array().expect("hits");
    assert!(hits.iter().any(|h| h == "down_*"), "{}", ran.text);
    assert_eq!(result[2], "ping y", "{}", ran.text);
}

/// One gateway run that lists a slow server's tools (and so remembers them),
/// then the server made to take `sleep_s` at its next start; the description
/// that run gave.
async fn remember_then_slow(setup: &Setup, sleep_s: u32) -> String {
    let first = setup.stdio(&[]).await;
    let description = first.description().await;
    assert!(description.contains("slow_ping"));
    drop(first);
    control(setup, "slow", &json!({"sleep_s": sleep_s}));
    description
}

#[tokio::test]
async fn remembered_catalog_serves_description_at_once() {
    let setup = slow_setup(&[("slow", json!({}))], &[]);
    let live = remember_then_slow(&setup, 60).await;
    let launched = Instant::now();
    let client = setup
        .stdio(&[
            ("CODEMCP_STARTUP_WAIT_MS", "20000"),
            ("CODEMCP_TOOL_TIMEOUT_MS", "2000"),
        ])
        .await;
    let description = client.description().await;
    let listed = launched.elapsed();
    assert!(
        description.contains("slow_ping") && description.contains("slow_pid"),
        "{description}"
    );
    // Byte for byte what the live server gave: nothing says it is starting.
    assert_eq!(description, live);
    assert!(listed < Duration::from_secs(5), "listed after {listed:?}");
    // Known but not up: a bounded wait, then a clear error.
    let started = Instant::now();
    let ran = client
        .exec("try:\n    r = slow_ping(text='x')\nexcept ToolError as e:\n    r = str(e)\nr")
        .await;
    assert!(!ran.is_error, "{:?}", ran.structured);
    assert!(
        ran.result()
            .as_str()
            .unwrap_or_default()
            .starts_with("server 'slow' is still starting: connecting for "),
        "{}",
        ran.text
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn initialize_and_tools_list_do_not_wait_for_a_slow_server() {
    let setup = slow_setup(&[("slow", json!({}))], &[]);
    remember_then_slow(&setup, 60).await;
    let launched = Instant::now();
    let client = setup.stdio(&[("CODEMCP_STARTUP_WAIT_MS", "15000")]).await;
    let initialized = launched.elapsed();
    let description = client.description().await;
    let listed = launched.elapsed();
    assert!(
        initialized < Duration::from_secs(3),
        "initialize took {initialized:?}"
    );
    assert!(
        listed < Duration::from_secs(4),
        "tools/list answered after {listed:?}: it waited for the slow server"
    );
    assert!(description.contains("slow_ping"), "{description}");
}

#[tokio::test]
async fn lazy_server_starts_on_first_call() {
    let setup = slow_setup(&[("slow", json!({}))], &[("start", json!("lazy"))]);
    let env = [("CODEMCP_LAZY_IDLE_MS", "1500")];
    // Never seen: it starts once to list its tools.
    let first = setup.stdio(&env).await;
    assert!(first.description().await.contains("slow_ping"));
    drop(first);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = starts(&setup, "slow").len();
    assert_eq!(before, 1, "the first run starts it once");

    let client = setup.stdio(&env).await;
    let description = client.description().await;
    assert!(description.contains("slow_ping"), "{description}");
    assert!(!description.contains("Still starting"), "{description}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(starts(&setup, "slow").len(), 1, "started before any call");

    let ran = client.exec("[slow_ping(text='a'), slow_pid()]").await;
    assert!(!ran.is_error, "{}", ran.text);
    assert_eq!(ran.result()[0], "ping a", "{}", ran.text);
    let pid: u64 = ran.result()[1]
        .as_str()
        .and_then(|p| p.parse().ok())
        .expect("a pid");
    assert_eq!(starts(&setup, "slow"), vec![starts(&setup, "slow")[0], pid]);

    // Idle for longer than CODEMCP_LAZY_IDLE_MS: stopped, and started again by a call.
    let deadline = Instant::now() + Duration::from_secs(20);
    while support::process_alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!support::process_alive(pid), "still running after idling");
    let ran = client.exec("slow_ping(text='b')").await;
    assert!(!ran.is_error, "{}", ran.text);
    assert_eq!(starts(&setup, "slow").len(), 3);
}

#[tokio::test]
async fn many_servers_all_join() {
    // Twelve real servers on a loaded machine, half failing their first start
    // and half slow: every one joins.
    let servers: Vec<(String, Value)> = (0..12)
        .map(|i| {
            let control = if i % 2 == 0 {
                json!({"fail_first": 1})
            } else {
                json!({"sleep_s": 1})
            };
            (format!("s{i}"), control)
        })
        .collect();
    let named: Vec<(&str, Value)> = servers
        .iter()
        .map(|(n, c)| (n.as_str(), c.clone()))
        .collect();
    let setup = slow_setup(&named, &[]);
    let client = setup.stdio(&[("CODEMCP_STARTUP_WAIT_MS", "2000")]).await;
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut missing: Vec<String> = Vec::new();
    while Instant::now() < deadline {
        let description = client.description().await;
        missing = (0..12)
            .map(|i| format!("s{i}_ping"))
            .filter(|name| !description.contains(name.as_str()))
            .collect();
        if missing.is_empty() {
            break;
        }
        client.wait_changed(Duration::from_secs(5)).await;
    }
    assert!(missing.is_empty(), "never joined: {missing:?}");
    let calls: Vec<String> = (0..12).map(|i| format!("s{i}_ping(text='{i}')")).collect();
    let ran = client.exec(&format!("[{}]", calls.join(", "))).await;
    assert!(!ran.is_error, "{}", ran.text);
    let expected: Vec<String> = (0..12).map(|i| format!("ping {i}")).collect();
    assert_eq!(ran.result(), &json!(expected));
}

#[tokio::test]
async fn a_server_slower_than_its_timeout_joins_on_a_more_patient_retry() {
    // Real servers (pydantic/FastMCP ones) take 30 s and more to start on a loaded 2-core
    // machine: each retry killed them at the same 30 s. Here: a 2 s timeout, a 3 s start.
    let setup = slow_setup(
        &[("sluggish", json!({"sleep_s": 3}))],
        &[("timeout", json!(2))],
    );
    let client = setup.stdio(&[("CODEMCP_STARTUP_WAIT_MS", "1000")]).await;
    assert!(
        joined(&client, "sluggish_ping", Duration::from_secs(90)).await,
        "the server never joined: {}",
        client.description().await
    );
    assert!(starts(&setup, "sluggish").len() >= 2);
}

/// When each start of a slow server began, in seconds since the epoch.
fn start_times(setup: &Setup, name: &str) -> Vec<f64> {
    let path = setup.dir.path().join(format!("{name}.json.times"));
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// The first starts of `names`, earliest first, as offsets from the first.
fn first_starts(setup: &Setup, names: &[&str]) -> Vec<f64> {
    let mut firsts: Vec<f64> = names
        .iter()
        .map(|n| start_times(setup, n).first().copied().expect("it started"))
        .collect();
    firsts.sort_by(f64::total_cmp);
    firsts.iter().map(|t| t - firsts[0]).collect()
}

#[tokio::test]
async fn handshakes_run_at_most_startup_concurrency_at_once() {
    // CODEMCP_STARTUP_CONCURRENCY (default 4): three servers that take 1.5 s
    // each to answer start one after the other with 1, together with 3.
    let names = ["c1", "c2", "c3"];
    let servers: Vec<(&str, Value)> = names
        .iter()
        .map(|n| (*n, json!({"sleep_s": 1.5})))
        .collect();
    let one = slow_setup(&servers, &[]);
    let client = one.stdio(&[("CODEMCP_STARTUP_CONCURRENCY", "1")]).await;
    assert!(client.description().await.contains("c3_ping"));
    let serial = first_starts(&one, &names);
    let together = slow_setup(&servers, &[]);
    let client = together
        .stdio(&[("CODEMCP_STARTUP_CONCURRENCY", "3")])
        .await;
    assert!(client.description().await.contains("c3_ping"));
    let parallel = first_starts(&together, &names);
    println!("FIGURE startup concurrency: starts at {serial:?} s with 1, {parallel:?} s with 3");
    for pair in serial.windows(2) {
        assert!(
            pair[1] - pair[0] >= 1.4,
            "overlapping handshakes: {serial:?}"
        );
    }
    // All three began before the first could have answered.
    assert!(parallel[2] < 1.4, "serialized with 3 slots: {parallel:?}");
}

// ---- a byte-stable description (issue 37) ----

/// Business domains for generated catalogs: one server each.
const DOMAINS: &[&str] = &[
    "billing",
    "calendar",
    "crm",
    "helpdesk",
    "inventory",
    "shipping",
    "analytics",
    "hr",
    "storage",
    "mail",
    "wiki",
    "payroll",
];

/// `tools` generated tools over `servers` slow servers, in `order`; every
/// other server says what it is for, the slow one among them; `slow` takes
/// `sleep_s` to start.
fn catalog_config(
    setup: &Setup,
    tools: usize,
    servers: usize,
    order: &[usize],
    sluggish: (usize, u32),
) -> Vec<String> {
    let mut entries = serde_json::Map::new();
    for &i in order {
        let name = DOMAINS[i];
        let count = tools / servers + usize::from(i < tools % servers);
        let mut control = json!({"catalog": {"domain": name, "count": count}});
        if i % 2 == 0 {
            control["instructions"] = json!(format!(
                "# {name}\n\nThe {name} system of record: read and change its records. Use get_* before update_*."
            ));
        }
        if i == sluggish.0 {
            control["sleep_s"] = json!(sluggish.1);
        }
        entries.insert(name.to_owned(), slow(setup.dir.path(), name, &control));
    }
    let config = json!({"mcpServers": entries});
    std::fs::write(setup.config(), config.to_string()).expect("write config");
    order.iter().map(|&i| DOMAINS[i].to_owned()).collect()
}

/// The instructions and the description one client was given.
async fn texts(client: &support::Client) -> (String, String) {
    let instructions = client
        .service
        .peer_info()
        .and_then(|info| info.instructions.clone())
        .unwrap_or_default();
    (instructions, client.description().await)
}

fn fingerprint(text: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256 {} ({} bytes)", &hex[..16], text.len())
}

/// The same bytes from four starts of one catalog: live (nothing remembered),
/// remembered and listed while its slowest server still starts, the config
/// order reversed with another server slow (live again, so it connects in
/// another order), and a plain restart after which every server joins again.
async fn description_is_byte_stable(tools: usize, servers: usize) {
    let setup = Setup::new(json!({}));
    let state = |name: &str| setup.dir.path().join(name).display().to_string();
    let (first, last) = (0, servers - 1);
    let order: Vec<usize> = (0..servers).collect();
    let env = |state_dir: &str| -> Vec<(String, String)> {
        vec![("XDG_STATE_HOME".into(), state_dir.to_owned())]
    };
    let start = |env: Vec<(String, String)>| {
        let setup = &setup;
        async move {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            setup.stdio(&env).await
        }
    };

    // 1. Live: nothing remembered, so the first tools/list waits for every server.
    let names = catalog_config(&setup, tools, servers, &order, (last, 0));
    let client = start(env(&state("a"))).await;
    let live = client.description().await;
    drop(client);

    // 2. Remembered: the last server now takes 30 s; listed at once.
    catalog_config(&setup, tools, servers, &order, (last, 30));
    let launched = Instant::now();
    let client = start(env(&state("a"))).await;
    let (instructions, remembered) = texts(&client).await;
    let listed = launched.elapsed();
    assert!(listed < Duration::from_secs(10), "listed after {listed:?}");
    drop(client);

    // 3. The config reversed, the first server slow, nothing remembered.
    let reversed: Vec<usize> = order.iter().rev().copied().collect();
    catalog_config(&setup, tools, servers, &reversed, (first, 2));
    let client = start(env(&state("b"))).await;
    let reordered = client.description().await;
    drop(client);

    // 4. A restart: remembered, then every server joins; clients are not told
    //    (nothing they see changed), and the description is still the same.
    catalog_config(&setup, tools, servers, &order, (last, 0));
    let client = start(env(&state("a"))).await;
    let (restarted_instructions, restarted) = texts(&client).await;
    let calls: Vec<String> = names
        .iter()
        .map(|n| format!("{n}_get_invoice(invoice_id='1')"))
        .collect();
    let ran = client.exec(&format!("[{}]", calls.join(", "))).await;
    assert!(!ran.is_error, "every server joined: {}", ran.text);
    let rejoined = client.description().await;
    let told = client.wait_changed(Duration::from_millis(500)).await;

    for (start, text) in [
        ("remembered", &remembered),
        ("reversed", &reordered),
        ("restarted", &restarted),
        ("rejoined", &rejoined),
    ] {
        assert_eq!(text, &live, "{start} differs from live at {tools} tools");
    }
    assert_eq!(restarted_instructions, instructions);
    assert!(
        !told,
        "tools/list_changed after servers joined as they were remembered"
    );
    let head: String = live.chars().take(codemcp_sdk::HEAD_CHARS).collect();
    for name in &names {
        assert!(
            head.contains(&format!("{name} (")),
            "{name} not in the head: {head}"
        );
    }
    if servers <= 6 {
        // What a server says it is for, remembered with its tools.
        assert!(head.contains("): The billing system of record"), "{head}");
    }
    println!(
        "FIGURE description at {tools} tools, {servers} servers, four starts: {}; instructions {}",
        fingerprint(&live),
        fingerprint(&instructions)
    );
}

#[tokio::test]
async fn description_is_byte_stable_at_13_tools() {
    description_is_byte_stable(13, 3).await;
}

#[tokio::test]
async fn description_is_byte_stable_at_100_tools() {
    description_is_byte_stable(100, 6).await;
}

#[tokio::test]
async fn description_is_byte_stable_at_1000_tools() {
    description_is_byte_stable(1000, 12).await;
}
