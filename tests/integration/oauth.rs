//! OAuth 2.1 remote upstreams, end to end through the real CLI.
//!
//! The official conformance suite (`@modelcontextprotocol/conformance`) runs
//! its `auth/*` client scenarios: for each it starts a real authorization
//! server and a protected MCP server on loopback and launches
//! `tests/oauth/conformance-client.mjs`, which drives `codemcp auth login`
//! (playing the browser by following the printed URL back to codemcp's
//! loopback callback) and then `codemcp exec`, calling the server's tool with
//! the stored token. The other tests check what a user sees before and after
//! a login, and what a broken authorization server gets.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// The `auth/*` client scenarios codemcp passes (README "Conformance" lists
/// the others and why they fail).
const PASSING: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
];

/// Runs one client scenario; returns its checks, the suite's output, and
/// whether it exited 0.
async fn run_scenario(scenario: &str, extra_env: &[(&str, &Path)]) -> (Vec<Value>, String, bool) {
    let (node, cli) = support::conformance_suite();
    let out = tempfile::tempdir().expect("tempdir");
    let client = support::repo().join("tests/oauth/conformance-client.mjs");
    let mut command = tokio::process::Command::new(&node);
    command
        .arg(&cli)
        .args([
            "client",
            "--scenario",
            scenario,
            "--timeout",
            "60000",
            "--command",
        ])
        .arg(format!("{} {}", node.display(), client.display()))
        .arg("-o")
        .arg(out.path())
        .env("CODEMCP_BIN", support::bin())
        .env("CODEMCP_LOG", "warn")
        .kill_on_drop(true);
    for (name, value) in extra_env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .unwrap_or_else(|_| panic!("{scenario}: no result within 120 s"))
        .expect("run the conformance suite");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut checks = Vec::new();
    collect_checks(out.path(), &mut checks);
    (checks, text, output.status.success())
}

/// The suite names its result directory after the scenario, so `auth/x`
/// lands in `OUT/auth/x-<time>/checks.json`.
fn collect_checks(dir: &Path, checks: &mut Vec<Value>) {
    for entry in std::fs::read_dir(dir).expect("results").flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_checks(&path, checks);
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            let body = std::fs::read_to_string(&path).expect("checks.json");
            let parsed: Value = serde_json::from_str(&body).expect("checks.json is JSON");
            checks.extend(parsed.as_array().cloned().unwrap_or_default());
        }
    }
}

#[tokio::test]
async fn conformance_auth_client_scenarios_pass() {
    let mut failures = Vec::new();
    for scenario in PASSING {
        let (checks, text, exited_ok) = run_scenario(scenario, &[]).await;
        let count = |status: &str| checks.iter().filter(|c| c["status"] == status).count();
        let (passed, failed, warnings) = (count("SUCCESS"), count("FAILURE"), count("WARNING"));
        eprintln!("conformance: {scenario}: {passed} passed, {failed} failed, {warnings} warnings");
        if !exited_ok || failed > 0 || warnings > 0 || passed == 0 {
            failures.push(format!(
                "{scenario}: {passed} passed, {failed} failed, {warnings} warnings\n{text}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What the client script recorded about each CLI step it ran.
fn transcript(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the client wrote its transcript");
    serde_json::from_str(&text).expect("transcript is JSON")
}

#[tokio::test]
async fn an_upstream_that_needs_a_login_is_skipped_until_auth_login_refreshes_itself_and_logout_forgets_it()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    let record = dir.path().join("transcript.json");
    let (_, text, exited_ok) = run_scenario(
        "auth/metadata-default",
        &[("CODEMCP_OAUTH_TRANSCRIPT", &record)],
    )
    .await;
    assert!(exited_ok, "{text}");
    let steps = transcript(&record);
    let step = |name: &str| steps[name]["out"].as_str().unwrap_or_default().to_owned();
    let before = step("check_before");
    assert!(
        before.contains("needs an OAuth login") && before.contains("codemcp auth login conf"),
        "check names the command to run:\n{before}"
    );
    assert!(
        step("status_before").contains("needs login: codemcp auth login conf"),
        "{}",
        step("status_before")
    );
    assert_eq!(steps["login"]["code"], 0, "{steps}");
    assert!(
        step("login").contains("logged in; token saved in"),
        "{steps}"
    );
    assert!(step("exec").contains("test"), "the tool answered: {steps}");
    assert!(
        step("status_after").contains("logged in (access token valid for"),
        "{}",
        step("status_after")
    );
    assert_eq!(steps["refresh_exec"]["code"], 0, "{steps}");
    let refreshed = &steps["refreshed"];
    assert_ne!(
        refreshed["before"], refreshed["after"],
        "the refreshed token was stored back: {steps}"
    );
    assert!(
        refreshed["received_at"].as_u64().unwrap_or(0) > 1,
        "{steps}"
    );
    assert!(
        step("status_expired").contains("expired; log in again: codemcp auth login conf"),
        "{}",
        step("status_expired")
    );
    let expired = steps["expired_exec"]["err"].as_str().unwrap_or_default();
    assert!(
        expired.contains("log in again: codemcp auth login conf"),
        "an expired login says what to do:\n{expired}"
    );
    let token_file = steps["token_file"].as_str().expect("token file path");
    assert!(step("logout").contains("logged out"), "{}", step("logout"));
    assert!(
        !Path::new(token_file).exists(),
        "logout deleted {token_file}"
    );
    assert!(
        step("status_after_logout").contains("needs login"),
        "{}",
        step("status_after_logout")
    );
}

/// An authorization server that answers its metadata requests with garbage.
async fn garbage_server() -> String {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let challenge =
        format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || {
                let challenge = challenge.clone();
                async move {
                    (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, challenge)],
                        "",
                    )
                        .into_response()
                }
            }),
        )
        .fallback(|| async { (StatusCode::OK, "{{{ not json \u{0}") });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("{base}/mcp")
}

#[tokio::test]
async fn an_authorization_server_that_returns_garbage_gets_a_clear_error() {
    let url = garbage_server().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"bad": {"url": url}}}).to_string(),
    )
    .expect("config");
    let run = tokio::process::Command::new(support::bin())
        .arg("--config")
        .arg(&config)
        .args(["auth", "login", "bad", "--no-browser", "--timeout", "5"])
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("login gives up in time")
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("codemcp: 'bad': "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        !dir.path().join("data/codemcp/oauth").exists()
            || std::fs::read_dir(dir.path().join("data/codemcp/oauth"))
                .expect("dir")
                .next()
                .is_none(),
        "nothing was stored"
    );
}

/// A protected server whose authorization server refuses every refresh
/// token (`invalid_grant`), as one does once a refresh token expired or was
/// revoked. Returns the MCP URL and the issuer.
async fn refusing_server() -> (String, String) {
    use axum::Json;
    use axum::http::{StatusCode, header};
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let prm = format!("{base}/.well-known/oauth-protected-resource/mcp");
    let challenge = format!("Bearer resource_metadata=\"{prm}\"");
    let resource =
        serde_json::json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]});
    let metadata = serde_json::json!({
        "issuer": base, "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"), "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"]
    });
    let app = axum::Router::new()
        .route(
            "/mcp",
            post(move || {
                let challenge = challenge.clone();
                async move { (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)]) }
            }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(move || async move { Json(resource) }),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || async move { Json(metadata) }),
        )
        .route(
            "/token",
            post(|| async {
                (
                    StatusCode::BAD_REQUEST,
                    Json(serde_json::json!({"error": "invalid_grant", "error_description": "refresh token expired"})),
                )
            }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("{base}/mcp"), base)
}

#[tokio::test]
async fn an_expired_refresh_token_asks_to_log_in_again() {
    use codemcp::upstream::oauth::TokenStore;
    use rmcp::transport::auth::{CredentialStore, StoredCredentials};
    let (url, issuer) = refusing_server().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let store = TokenStore::in_dir(&data.join("codemcp/oauth"), "r", &url);
    // A login whose access token ran out long ago.
    let token = serde_json::from_value(serde_json::json!({
        "access_token": "stale", "token_type": "Bearer", "expires_in": 3600,
        "refresh_token": "expired-refresh"
    }))
    .expect("token");
    let saved = StoredCredentials::new("client-1".into(), Some(token), vec![], Some(1))
        .with_issuer(Some(issuer));
    store.save(saved).await.expect("saved");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"r": {"url": url, "timeout": 20}}}).to_string(),
    )
    .expect("config");
    let codemcp = |args: &[&str]| {
        let mut command = tokio::process::Command::new(support::bin());
        command
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("XDG_DATA_HOME", &data)
            .env("CODEMCP_LOG", "warn")
            .kill_on_drop(true);
        command
    };
    let checked = tokio::time::timeout(Duration::from_secs(60), codemcp(&["check"]).output())
        .await
        .expect("check finishes")
        .expect("runs");
    let out = String::from_utf8_lossy(&checked.stdout);
    assert!(
        out.contains("log in again: codemcp auth login r"),
        "check says what to do:\n{out}\n{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let file = store.read().expect("reads").expect("kept");
    assert!(file.refresh_rejected, "the refusal is recorded");
    assert_eq!(
        file.credentials.map(|c| c.client_id).as_deref(),
        Some("client-1"),
        "the client registration is kept for the next login"
    );
    let status = codemcp(&["auth", "status"]).output().await.expect("status");
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains(
            "expired (the refresh token was refused); log in again: codemcp auth login r"
        ),
        "{status}"
    );
}
