//! Asking a remote server, without credentials, whether it wants an OAuth
//! login: an MCP `initialize` that a protected server answers 401 with a
//! `WWW-Authenticate: Bearer` challenge (pointing at its OAuth metadata).

use std::time::Duration;

use http::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};

/// How long the question may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the unauthenticated request showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// 401 with a Bearer challenge: the header, for rmcp's discovery.
    NeedsLogin { challenge: String },
    /// Anything else: the status it answered.
    NoLogin { status: u16 },
}

pub async fn probe(url: &str) -> Result<Probe, String> {
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "codemcp", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let response = client
        .post(url)
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {e}"))?;
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"))
        .map(str::to_owned);
    Ok(match (status, challenge) {
        (401, Some(challenge)) => Probe::NeedsLogin { challenge },
        _ => Probe::NoLogin { status },
    })
}
