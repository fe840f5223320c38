//! What `serve --http` tells whoever runs it: `/metrics` scraped and parsed
//! after real runs and upstream calls, `/healthz` with an upstream that is
//! down, both behind the token and Host/Origin rules of `/mcp` (and
//! `CODEMCP_HEALTHZ_OPEN`); a client's W3C trace context reaching a real
//! upstream's `_meta`; spans exported over OTLP/HTTP to a real collector
//! (rotel, from PyPI).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use serde_json::{Value, json};
use support::{everything, odd, python2, repo, start_http};

const TOKEN: &str = "s3cret-metrics";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{CLIENT_SPAN}-01")
}

fn meta_server() -> Value {
    json!({
        "command": python2(),
        "args": [repo().join("tests/servers/meta_server.py")],
    })
}

/// An upstream that can never start: it stays down.
fn missing_server() -> Value {
    json!({"command": "/nonexistent/codemcp-test-upstream"})
}

/// An MCP client over HTTP sending `token` as its bearer token.
async fn connect(url: &str, token: &str) -> support::HttpClient {
    support::init_tls();
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_owned(),
        )
        .auth_header(token.to_owned());
    ().serve(rmcp::transport::StreamableHttpClientTransport::from_config(
        config,
    ))
    .await
    .expect("MCP over HTTP")
}

/// `execute_python` with `meta` as the request's `_meta`.
async fn exec_with_meta(
    client: &support::HttpClient,
    code: &str,
    meta: Option<MetaObject>,
) -> support::Ran {
    let args = json!({"code": code}).as_object().cloned().unwrap();
    let mut params = CallToolRequestParams::new("execute_python").with_arguments(args);
    params.meta = meta.map(RequestMetaObject);
    support::unpack(client.call_tool(params).await.expect("tools/call"))
}

async fn exec(client: &support::HttpClient, code: &str) -> support::Ran {
    exec_with_meta(client, code, None).await
}

/// The base URL (`http://127.0.0.1:PORT`) of a gateway's `/mcp` URL.
fn base(url: &str) -> String {
    url.trim_end_matches("/mcp").to_owned()
}

/// GETs `path` with the given headers; the status and the body.
async fn get(url: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    support::init_tls();
    let mut request = reqwest::Client::new().get(format!("{}{path}", base(url)));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("HTTP to loopback");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

async fn scrape(url: &str) -> HashMap<String, f64> {
    support::scrape_metrics(url, Some(TOKEN)).await
}

fn moved(before: &HashMap<String, f64>, after: &HashMap<String, f64>, sample: &str) -> f64 {
    after.get(sample).copied().unwrap_or(0.0) - before.get(sample).copied().unwrap_or(0.0)
}

#[tokio::test]
async fn metrics_count_runs_and_tool_calls_by_engine_server_and_outcome() {
    let gateway = start_http(
        json!({"everything": everything(), "odd": odd(json!({}))}),
        &[
            ("CODEMCP_HTTP_TOKEN", TOKEN),
            ("CODEMCP_TOOL_TIMEOUT_MS", "2500"),
        ],
    )
    .await;
    let client = connect(&gateway.url, TOKEN).await;
    // Warm up: the first call waits for the upstreams' handshakes.
    let warm = exec(&client, "odd_add_numbers(a=0, b=0)").await;
    assert!(!warm.is_error, "{}", warm.text);
    let engine = warm.structured["engine"].as_str().unwrap().to_owned();
    let before = scrape(&gateway.url).await;

    let ok = exec(
        &client,
        "a = everything_get_sum(a=1, b=2)\nb = everything_echo(message='hi')\na",
    )
    .await;
    assert!(!ok.is_error, "{}", ok.text);
    let failed = exec(&client, "odd_fail(message='no')").await;
    assert_eq!(failed.error_type(), "ToolError", "{}", failed.text);
    let slow = exec(
        &client,
        "try:\n    odd_slow(ms=5000)\nexcept ToolError as e:\n    pass\n1",
    )
    .await;
    assert!(!slow.is_error, "{}", slow.text);
    let bad = exec(&client, "1/0").await;
    assert_eq!(bad.error_type(), "ZeroDivisionError", "{}", bad.text);

    let after = scrape(&gateway.url).await;
    let runs = |outcome: &str| {
        let sample = format!("codemcp_runs_total{{engine=\"{engine}\",outcome=\"{outcome}\"}}");
        moved(&before, &after, &sample)
    };
    assert_eq!(runs("ok"), 2.0, "{after:?}");
    assert_eq!(runs("python_error"), 2.0, "{after:?}");
    let run_count = format!("codemcp_run_duration_seconds_count{{engine=\"{engine}\"}}");
    assert_eq!(moved(&before, &after, &run_count), 4.0);
    let calls = |server: &str, outcome: &str| {
        let sample =
            format!("codemcp_tool_calls_total{{server=\"{server}\",outcome=\"{outcome}\"}}");
        moved(&before, &after, &sample)
    };
    assert_eq!(calls("everything", "ok"), 2.0, "{after:?}");
    assert_eq!(calls("odd", "error"), 1.0, "{after:?}");
    assert_eq!(calls("odd", "timeout"), 1.0, "{after:?}");
    let count = |server: &str| {
        let sample = format!("codemcp_tool_call_duration_seconds_count{{server=\"{server}\"}}");
        moved(&before, &after, &sample)
    };
    assert_eq!(count("everything"), 2.0);
    assert_eq!(count("odd"), 2.0);
    // The timed-out call waited its full 2.5 s: above the 2.048 s bucket.
    let slow_bucket = "codemcp_tool_call_duration_seconds_bucket{le=\"2.048\",server=\"odd\"}";
    assert_eq!(
        moved(&before, &after, slow_bucket),
        1.0,
        "only odd_fail is fast"
    );
    assert!(after["codemcp_sessions"] >= 1.0, "{after:?}");
    if engine == "monty-pool" {
        assert!(after["codemcp_pool_workers"] >= 1.0, "{after:?}");
    }
    assert!(after.contains_key("codemcp_containers"));
    assert!(after.contains_key("codemcp_escalations_total"));
}

#[tokio::test]
async fn healthz_is_200_and_names_the_upstream_that_is_down() {
    let gateway = start_http(
        json!({"everything": everything(), "gone": missing_server()}),
        &[("CODEMCP_HTTP_TOKEN", TOKEN)],
    )
    .await;
    let client = connect(&gateway.url, TOKEN).await;
    exec(&client, "1").await; // waits for both first connection attempts
    let (status, body) = get(&gateway.url, "/healthz", &[("authorization", &bearer())]).await;
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).expect("JSON body");
    assert_eq!(health["status"], "ok");
    assert_eq!(health["connected"], json!(["everything"]), "{health}");
    assert_eq!(health["down"][0]["name"], "gone", "{health}");
    assert!(
        health["down"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("gone")),
        "{health}"
    );
}

#[tokio::test]
async fn metrics_leak_without_token_is_refused() {
    let gateway = start_http(json!({}), &[("CODEMCP_HTTP_TOKEN", TOKEN)]).await;
    for path in ["/metrics", "/healthz"] {
        let (status, body) = get(&gateway.url, path, &[]).await;
        assert_eq!(status, 401, "{path} without a token: {body}");
        assert!(!body.contains("codemcp_"), "{body}");
        let wrong = [("authorization", "Bearer guessed")];
        assert_eq!(get(&gateway.url, path, &wrong).await.0, 401, "{path}");
        let right = [("authorization", bearer())];
        let right: Vec<(&str, &str)> = right.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(get(&gateway.url, path, &right).await.0, 200, "{path}");
    }
}

#[tokio::test]
async fn dns_rebinding_host_is_refused_on_metrics_and_healthz() {
    let gateway = start_http(json!({}), &[("CODEMCP_HTTP_TOKEN", TOKEN)]).await;
    let auth = bearer();
    for path in ["/metrics", "/healthz"] {
        let rebound = [
            ("authorization", auth.as_str()),
            ("host", "attacker.example"),
        ];
        let (status, body) = get(&gateway.url, path, &rebound).await;
        assert_eq!(status, 403, "{path} with a foreign Host: {body}");
        let cross = [
            ("authorization", auth.as_str()),
            ("origin", "http://attacker.example"),
        ];
        assert_eq!(get(&gateway.url, path, &cross).await.0, 403, "{path}");
        let own = [
            ("authorization", auth.as_str()),
            ("origin", "http://localhost:5173"),
        ];
        assert_eq!(get(&gateway.url, path, &own).await.0, 200, "{path}");
    }
}

#[tokio::test]
async fn open_healthz_answers_a_load_balancer_but_metrics_stay_guarded() {
    let gateway = start_http(
        json!({}),
        &[
            ("CODEMCP_HTTP_TOKEN", TOKEN),
            ("CODEMCP_HEALTHZ_OPEN", "true"),
        ],
    )
    .await;
    // A load balancer: no token, the backend's address as Host.
    let balancer = [("host", "10.1.2.3:8080")];
    let (status, body) = get(&gateway.url, "/healthz", &balancer).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["status"],
        "ok"
    );
    assert_eq!(get(&gateway.url, "/metrics", &[]).await.0, 401);
    assert_eq!(get(&gateway.url, "/metrics", &balancer).await.0, 401);
}

/// The `_meta` the upstream saw on the call the snippet made.
fn seen_meta(ran: &support::Ran) -> Value {
    assert!(!ran.is_error, "{}", ran.text);
    ran.result()["meta"].clone()
}

#[tokio::test]
async fn the_clients_trace_context_reaches_the_upstream_call() {
    let gateway = start_http(json!({"meta": meta_server()}), &[]).await;
    let client = connect(&gateway.url, "unused").await;
    let mut meta = MetaObject::new();
    meta.set_traceparent(traceparent());
    meta.set_tracestate("codemcp=test");
    let ran = exec_with_meta(&client, "meta_seen_meta()", Some(meta)).await;
    let seen = seen_meta(&ran);
    assert_eq!(seen["traceparent"], traceparent(), "{seen}");
    assert_eq!(seen["tracestate"], "codemcp=test", "{seen}");
    // A call without a trace context sends none upstream.
    let plain = exec(&client, "meta_seen_meta()").await;
    assert!(
        seen_meta(&plain).get("traceparent").is_none(),
        "{}",
        plain.text
    );
    // Nor does one whose traceparent is malformed.
    let mut bad = MetaObject::new();
    bad.set_traceparent("00-not-a-trace-01");
    let ran = exec_with_meta(&client, "meta_seen_meta()", Some(bad)).await;
    assert!(seen_meta(&ran).get("traceparent").is_none(), "{}", ran.text);
}

#[tokio::test]
async fn upstream_calls_carry_no_progress_token_over_stdio_or_http() {
    let port = support::free_port();
    let _http_upstream = tokio::process::Command::new(python2())
        .arg(repo().join("tests/servers/meta_server.py"))
        .args(["--http", &port.to_string()])
        .kill_on_drop(true)
        .spawn()
        .expect("start meta_server over HTTP");
    support::wait_for_port(port, Duration::from_secs(30)).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let gateway = start_http(json!({"meta": meta_server(), "remote": {"url": url}}), &[]).await;
    let client = connect(&gateway.url, "unused").await;
    // Even a client that asks the gateway for progress: that token is ours.
    let mut meta = MetaObject::new();
    meta.insert("progressToken".into(), json!("client-token"));
    for code in ["meta_seen_meta()", "remote_seen_meta()"] {
        let ran = exec_with_meta(&client, code, Some(meta.clone())).await;
        let seen = seen_meta(&ran);
        // The Python SDK hands the token to the tool as `progress_token`.
        for key in ["progressToken", "progress_token"] {
            assert!(seen.get(key).is_none(), "{code}: {seen}");
        }
    }
}

/// rotel's collector binary: `CODEMCP_TEST_ROTEL`, else the one the `rotel`
/// package installed into the mcp 2.x venv (scripts/test-deps.sh).
fn rotel_agent() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("CODEMCP_TEST_ROTEL") {
        return path.into();
    }
    let found = std::process::Command::new(python2())
        .args([
            "-c",
            "import os, rotel; print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))",
        ])
        .output()
        .expect("run the mcp 2.x venv's python");
    let path = std::path::PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
    assert!(
        found.status.success() && path.exists(),
        "rotel (an OpenTelemetry collector) is missing: run scripts/test-deps.sh py2, \
         or set CODEMCP_TEST_ROTEL to a rotel-agent binary"
    );
    path
}

#[tokio::test]
async fn spans_reach_a_real_otlp_collector_in_the_clients_trace() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rotel.log");
    let (http, grpc) = (support::free_port(), support::free_port());
    let out = std::fs::File::create(&log).unwrap();
    let _collector = tokio::process::Command::new(rotel_agent())
        .args(["start", "--exporter", "blackhole"])
        .args(["--otlp-http-endpoint", &format!("127.0.0.1:{http}")])
        .args(["--otlp-grpc-endpoint", &format!("127.0.0.1:{grpc}")])
        .args(["--debug-log", "traces", "--debug-log-verbosity", "detailed"])
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .kill_on_drop(true)
        .spawn()
        .expect("start rotel");
    support::wait_for_port(http, Duration::from_secs(30)).await;
    let endpoint = format!("http://127.0.0.1:{http}");
    let gateway = start_http(
        json!({"meta": meta_server()}),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    )
    .await;
    let client = connect(&gateway.url, "unused").await;
    let mut meta = MetaObject::new();
    meta.set_traceparent(traceparent());
    let ran = exec_with_meta(&client, "meta_seen_meta()", Some(meta)).await;
    let seen = seen_meta(&ran);
    let call_span = seen["traceparent"]
        .as_str()
        .unwrap()
        .split('-')
        .nth(2)
        .unwrap()
        .to_owned();
    // The collector prints each span it received: its trace, parent, id and name.
    let mut printed = String::new();
    for _ in 0..150 {
        printed = std::fs::read_to_string(&log).unwrap_or_default();
        if printed.contains("Name           : execute_python")
            && printed.contains("Name           : tools/call")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans: Vec<&str> = printed.split("Span #").skip(1).collect();
    let field = |span: &str, name: &str| {
        span.lines()
            .find_map(|line| {
                line.trim()
                    .strip_prefix(name)?
                    .trim()
                    .strip_prefix(':')
                    .map(|v| v.trim().to_owned())
            })
            .unwrap_or_default()
    };
    let named = |name: &str| {
        spans
            .iter()
            .copied()
            .find(|span| field(span, "Name") == name)
            .unwrap_or_else(|| panic!("the collector got no {name} span:\n{printed}"))
    };
    let (run, call) = (named("execute_python"), named("tools/call"));
    assert_eq!(field(run, "Trace ID"), TRACE_ID);
    assert_eq!(field(run, "Parent ID"), CLIENT_SPAN);
    assert_eq!(field(call, "Trace ID"), TRACE_ID);
    assert_eq!(field(call, "Parent ID"), field(run, "ID"));
    assert_eq!(
        field(call, "ID"),
        call_span,
        "the upstream's parent is the call span"
    );
    assert!(call.contains("SPAN_KIND_CLIENT"), "{call}");
}

#[tokio::test]
async fn an_escalation_is_counted_and_the_run_under_the_fallback_engine() {
    let gateway = start_http(json!({}), &[("CODEMCP_FALLBACK", "host")]).await;
    let client = connect(&gateway.url, "unused").await;
    let before = support::scrape_metrics(&gateway.url, None).await;
    let ran = exec(&client, "import statistics\nstatistics.mean([2, 4])").await;
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
    let after = support::scrape_metrics(&gateway.url, None).await;
    assert_eq!(moved(&before, &after, "codemcp_escalations_total"), 1.0);
    let runs = "codemcp_runs_total{engine=\"cpython-host\",outcome=\"ok\"}";
    assert_eq!(moved(&before, &after, runs), 1.0, "{after:?}");
}
