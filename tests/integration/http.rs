//! `codemcp serve --http`: sessions, concurrency without crosstalk, DNS-rebinding
//! and Origin checks, the bearer token. Everything aims at loopback only.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use serde_json::json;
use support::{Setup, bin, everything, start_http as start};
use tokio::process::Command;

async fn connect(url: &str) -> support::HttpClient {
    support::http_connect(url).await
}

async fn exec(client: &support::HttpClient, code: &str) -> support::Ran {
    support::http_exec(client, code).await
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

async fn post_initialize(url: &str, headers: &[(&str, &str)]) -> u16 {
    support::init_tls();
    let client = reqwest::Client::new();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request
        .send()
        .await
        .expect("HTTP request to loopback")
        .status()
        .as_u16()
}

#[tokio::test]
async fn concurrent_calls_from_many_sessions_do_not_cross() {
    // One worker per session in pool mode: room for all twenty.
    let gateway = start(
        json!({"everything": everything()}),
        &[("CODEMCP_MONTY_WORKERS", "24")],
    )
    .await;
    let mut clients = Vec::new();
    for s in 0..20 {
        let client = connect(&gateway.url).await;
        let ran = exec(&client, &format!("me = {s}")).await;
        assert!(!ran.is_error, "{}", ran.text);
        clients.push(client);
    }
    let mut calls = Vec::new();
    for (s, client) in clients.iter().enumerate() {
        for c in 0..10 {
            let code =
                format!("print('token-{s}-{c}')\nr = everything_get_sum(a={s}, b={c})\n[me, r]");
            calls.push(async move {
                let started = std::time::Instant::now();
                let ran = exec(client, &code).await;
                (s, c, ran, started.elapsed())
            });
        }
    }
    let started = std::time::Instant::now();
    let results = futures::future::join_all(calls).await;
    let total = started.elapsed();
    assert_eq!(results.len(), 200);
    let mut latencies: Vec<_> = results.iter().map(|r| r.3).collect();
    latencies.sort();
    eprintln!(
        "load: 200 concurrent calls from 20 sessions in {total:.2?} (per call: median {:.1?}, max {:.1?})",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    for (s, c, ran, _) in results {
        assert!(!ran.is_error, "{}", ran.text);
        assert_eq!(ran.stdout(), format!("token-{s}-{c}\n"));
        assert_eq!(
            ran.result(),
            &json!([s, format!("The sum of {s} and {c} is {}.", s + c)])
        );
    }
}

#[tokio::test]
async fn state_is_per_session() {
    let gateway = start(json!({}), &[]).await;
    let a = connect(&gateway.url).await;
    let b = connect(&gateway.url).await;
    exec(&a, "secret = 'a-only'").await;
    assert_eq!(exec(&a, "secret").await.result(), "a-only");
    assert_eq!(exec(&b, "secret").await.error_type(), "NameError");
}

#[tokio::test]
async fn foreign_host_and_origin_headers_are_rejected() {
    let gateway = start(json!({}), &[]).await;
    let url = &gateway.url;
    assert_eq!(post_initialize(url, &[]).await, 200);
    assert_eq!(post_initialize(url, &[("host", "evil.example")]).await, 403);
    assert_eq!(
        post_initialize(url, &[("origin", "http://evil.example")]).await,
        403
    );
    assert_eq!(
        post_initialize(url, &[("origin", "http://localhost:1234")]).await,
        200
    );
}

#[tokio::test]
async fn a_configured_token_is_required() {
    let gateway = start(json!({}), &[("CODEMCP_HTTP_TOKEN", "s3cret")]).await;
    let url = &gateway.url;
    assert_eq!(post_initialize(url, &[]).await, 401);
    assert_eq!(
        post_initialize(url, &[("authorization", "Bearer wrong")]).await,
        401
    );
    assert_eq!(
        post_initialize(url, &[("authorization", "Bearer s3cret")]).await,
        200
    );
}

#[tokio::test]
async fn non_loopback_binding_without_a_token_is_refused() {
    // Refused before binding, so nothing ever listens on a public interface.
    let setup = Setup::new(json!({}));
    let output = Command::new(bin())
        .arg("--config")
        .arg(setup.config())
        .args(["serve", "--http", "0.0.0.0:0"])
        .env_remove("CODEMCP_HTTP_TOKEN")
        .output()
        .await
        .expect("run codemcp");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("CODEMCP_HTTP_TOKEN"), "{stderr}");
}
