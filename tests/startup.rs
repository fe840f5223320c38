//! Cold start: `initialize` is answered before any upstream finished its
//! handshake; the first `tools/list` waits for them only up to
//! `CODEMCP_STARTUP_WAIT_MS`; an upstream that comes up later joins (the
//! client is told with `tools/list_changed`), and calling its tools before
//! then says it is still connecting. Real processes: the `everything` server,
//! one that never answers its handshake, one that starts late; stdio and HTTP.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

mod support;

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
            .contains("server 'silent' is still connecting"),
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
            message.contains("server 'late' is still connecting (started")
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
