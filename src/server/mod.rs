//! Serving the gateway over stdio and Streamable HTTP.

mod connections;
mod handler;
mod health;
mod http_sessions;
mod listen;
mod origin;
mod render;
mod request_body;
mod session_guard;
mod stdin;
mod stdio;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::authority::identity;

pub use self::handler::{Caller, Gateway, GatewayState, SDK_URI, TOOL_NAME};
pub use self::render::{render, render_text};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    #[error("MCP session failed: {0}")]
    Session(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "refusing to serve on non-loopback address {0} without a bearer token: set CODEMCP_HTTP_TOKEN, \
         or CODEMCP_HTTP_TOKENS to a file of principals (codemcp token add NAME) \
         (clients then send 'Authorization: Bearer <token>')"
    )]
    TokenRequired(SocketAddr),
    #[error("HTTP server failed: {0}")]
    Http(std::io::Error),
}

/// Serves one MCP session on stdin/stdout until the client closes it.
pub async fn serve_stdio(shared: Arc<GatewayState>) -> Result<(), ServerError> {
    let catalog = shared.catalog.clone();
    let gateway = Gateway::new_session(shared);
    let upstreams_ready = Box::pin(async move { catalog.settled().await });
    let input = stdin::WatchedStdin::new(gateway.closing(), upstreams_ready);
    let running = gateway
        .serve((input, stdio::output()))
        .await
        .map_err(|e| ServerError::Session(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServerError::Session(e.to_string()))?;
    Ok(())
}

/// Who may talk to the HTTP endpoint.
#[derive(Debug, Clone)]
pub struct HttpAccess {
    /// `Host` header values accepted (DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted from browsers; empty = derived from the hosts.
    pub allowed_origins: Vec<String>,
    /// Required as `Authorization: Bearer <token>` when set.
    pub token: Option<String>,
    /// Principals, each with its own token (`CODEMCP_HTTP_TOKENS`).
    pub principals: Option<Arc<crate::authority::principals::Principals>>,
    /// `CODEMCP_HEALTHZ_OPEN`: `/healthz` without token and Host checks.
    pub healthz_open: bool,
    /// What one client may hold of the gateway.
    pub limits: HttpLimits,
}

/// Bounds on connections and MCP sessions, so that neighbours cannot lock
/// each other out.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// `CODEMCP_HTTP_HEADER_TIMEOUT_MS`.
    pub header_timeout: Duration,
    /// `CODEMCP_HTTP_BODY_TIMEOUT_MS`.
    pub body_timeout: Duration,
    /// `CODEMCP_HTTP_MAX_CONNECTIONS`, before the open-files limit caps it.
    pub max_connections: usize,
    /// `CODEMCP_HTTP_MAX_SESSIONS`.
    pub max_sessions: usize,
    /// `CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL`.
    pub max_sessions_per_principal: usize,
    /// `CODEMCP_SESSION_IDLE_SECS`: an MCP session with no traffic this long ends.
    pub session_idle: Duration,
}

impl HttpLimits {
    pub fn from_settings(settings: &crate::config::Settings) -> Self {
        let http = &settings.http;
        Self {
            header_timeout: http.http_header_timeout,
            body_timeout: http.http_body_timeout,
            max_connections: http.http_max_connections,
            max_sessions: http.http_max_sessions,
            max_sessions_per_principal: http.http_max_sessions_per_principal,
            session_idle: settings.sessions.session_idle,
        }
    }

    /// At most half the open-files limit: the rest is for upstreams,
    /// workers, the store and the log.
    fn connections(&self) -> usize {
        let fds = codemcp_base::process::open_file_limit().unwrap_or(1024);
        let half = usize::try_from(fds / 2).unwrap_or(usize::MAX);
        self.max_connections.min(half).max(16)
    }
}

/// Serves `http://ADDR/mcp` with stateful sessions until `shutdown` fires.
pub async fn serve_http(
    shared: Arc<GatewayState>,
    addr: SocketAddr,
    access: HttpAccess,
    shutdown: CancellationToken,
) -> Result<(), ServerError> {
    let authenticator = Arc::new(identity::Authenticator {
        token: access.token.clone().map(Into::into),
        principals: access.principals.clone(),
    });
    if !addr.ip().is_loopback() && authenticator.is_open() {
        return Err(ServerError::TokenRequired(addr));
    }
    let origins = if access.allowed_origins.is_empty() {
        origins_for(&access.allowed_hosts)
    } else {
        access.allowed_origins.clone()
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(access.allowed_hosts.clone())
        .with_allowed_origins(origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(shutdown.child_token())
        .with_sse_keep_alive(Some(Duration::from_secs(15)));
    let observing = health::Observing {
        health: health::Health {
            catalog: shared.catalog.clone(),
            shutdown: shutdown.clone(),
        },
        hosts: access.allowed_hosts.clone(),
        origins: origins.clone(),
        healthz_open: access.healthz_open,
    };
    let limits = access.limits.clone();
    let sessions = Arc::new(http_sessions::HttpSessions::new(limits.session_idle));
    let ended = sessions.clone();
    let guard = Arc::new(session_guard::SessionGuard {
        sessions: sessions.clone(),
        per_principal: limits.max_sessions_per_principal,
        total: limits.max_sessions,
    });
    let service = StreamableHttpService::new(
        move || Ok(Gateway::new_session(shared.clone()).with_http_sessions(ended.clone())),
        sessions,
        config,
    );
    let body_timeout = limits.body_timeout;
    let mcp = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            move |request: Request, next: Next| guard.clone().check(request, next),
        ))
        .layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                request_body::read_within(body_timeout, request, next)
            },
        ));
    // A request that reaches `passed` needed no token or passed the bearer
    // check (the outer layer, when tokens are configured).
    let mut app = mcp
        .merge(observing.guarded())
        .layer(axum::middleware::from_fn(connections::passed));
    if !authenticator.is_open() {
        app = app.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| authenticator.clone().check(request, next),
        ));
    }
    app = app.merge(observing.open());
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })?;
    let local = listener.local_addr().unwrap_or(addr);
    let connections = connections::Connections::new(limits.connections());
    tracing::info!(
        target: "codemcp::server",
        max_connections = connections.max(),
        header_timeout_ms = limits.header_timeout.as_millis(),
        max_sessions = limits.max_sessions,
        max_sessions_per_principal = limits.max_sessions_per_principal,
        "HTTP limits"
    );
    tracing::info!(target: "codemcp::server", "serving MCP on http://{local}/mcp");
    listen::serve(listener, app, connections, limits.header_timeout, shutdown).await;
    Ok(())
}

/// Browser origins matching the allowed hosts, any port.
fn origins_for(hosts: &[String]) -> Vec<String> {
    hosts
        .iter()
        .flat_map(|host| {
            let host = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]")
            } else {
                host.clone()
            };
            [
                format!("http://{host}:*"),
                format!("https://{host}:*"),
                format!("http://{host}"),
                format!("https://{host}"),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_cover_each_host_with_any_port() {
        let o = origins_for(&["localhost".into(), "::1".into()]);
        assert!(o.contains(&"http://localhost:*".to_owned()));
        assert!(o.contains(&"http://[::1]:*".to_owned()));
    }
}
