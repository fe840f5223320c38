//! What `serve --http` tells whoever runs it: `GET /healthz` (can it serve,
//! and which upstreams are down or still connecting) and `GET /metrics`
//! (the registry of `codemcp_base::metrics` in the OpenMetrics text format).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::origin::OriginCheck;
use crate::upstream::{Catalog, ServerStatus};

/// The paths beside `/mcp` and who may reach them.
pub struct Observing {
    pub health: Health,
    /// `CODEMCP_ALLOWED_HOSTS`.
    pub hosts: Vec<String>,
    /// The browser origins `/mcp` accepts.
    pub origins: Vec<String>,
    /// `CODEMCP_HEALTHZ_OPEN`.
    pub healthz_open: bool,
}

impl Observing {
    /// `/metrics`, and `/healthz` unless it is open, behind the Host and
    /// Origin rules rmcp applies to `/mcp`; the caller adds the bearer check.
    pub fn guarded(&self) -> axum::Router {
        let mut routes = metrics_route();
        if !self.healthz_open {
            routes = routes.merge(healthz_route(self.health.clone()));
        }
        with_check(routes, self.hosts.clone(), self.origins.clone())
    }

    /// `/healthz` for a load balancer when it is open: any Host (it asks by
    /// address), no token; a browser's Origin must still be allowed.
    pub fn open(&self) -> axum::Router {
        if !self.healthz_open {
            return axum::Router::new();
        }
        with_check(
            healthz_route(self.health.clone()),
            Vec::new(),
            self.origins.clone(),
        )
    }
}

/// `routes` answering only requests whose Host is in `hosts` (empty: any)
/// and whose Origin, when sent, is in `origins`.
fn with_check(routes: axum::Router, hosts: Vec<String>, origins: Vec<String>) -> axum::Router {
    let check = Arc::new(OriginCheck { hosts, origins });
    routes.layer(axum::middleware::from_fn(
        move |request: Request, next: Next| check.clone().check(request, next),
    ))
}

/// What the health answer looks at.
#[derive(Clone)]
pub struct Health {
    pub catalog: Catalog,
    /// Fired when the gateway begins to shut down: it stops being healthy.
    pub shutdown: CancellationToken,
}

/// The body of `GET /healthz`.
#[derive(Debug, Serialize)]
struct HealthReport {
    /// `ok`, or `shutting_down` (answered 503).
    status: &'static str,
    connected: Vec<String>,
    connecting: Vec<String>,
    down: Vec<DownUpstream>,
}

#[derive(Debug, Serialize)]
struct DownUpstream {
    name: String,
    error: Option<String>,
}

impl HealthReport {
    fn of(statuses: Vec<ServerStatus>, shutting_down: bool) -> Self {
        let mut report = Self {
            status: if shutting_down { "shutting_down" } else { "ok" },
            connected: Vec::new(),
            connecting: Vec::new(),
            down: Vec::new(),
        };
        for status in statuses {
            if status.connected {
                report.connected.push(status.name);
            } else if status.connecting {
                report.connecting.push(status.name);
            } else {
                report.down.push(DownUpstream {
                    name: status.name,
                    error: status.error,
                });
            }
        }
        report
    }
}

/// `GET /healthz`: 200 while the gateway serves (upstreams being down does
/// not stop it serving the others), 503 once it is shutting down.
fn healthz_route(health: Health) -> axum::Router {
    axum::Router::new()
        .route("/healthz", get(healthz))
        .with_state(health)
}

async fn healthz(State(health): State<Health>) -> Response {
    let shutting_down = health.shutdown.is_cancelled();
    let report = HealthReport::of(health.catalog.statuses(), shutting_down);
    let code = if shutting_down {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (code, Json(report)).into_response()
}

/// `GET /metrics`.
fn metrics_route() -> axum::Router {
    axum::Router::new().route("/metrics", get(metrics))
}

async fn metrics() -> Response {
    match codemcp_base::metrics::encode() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => {
            tracing::warn!(target: "codemcp::server", error = %e, "encoding the metrics failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(name: &str, connected: bool, connecting: bool) -> ServerStatus {
        ServerStatus {
            name: name.into(),
            connected,
            connecting,
            tools: 0,
            handshake_ms: None,
            error: (!connected && !connecting).then(|| "spawn failed".into()),
            retrying: false,
            remembered: false,
        }
    }

    #[tokio::test]
    async fn a_gateway_shutting_down_answers_503() {
        let limits = crate::upstream::UpstreamLimits {
            tool_timeout: std::time::Duration::from_secs(1),
            max_message: 1 << 20,
            policy_default: codemcp_sdk::policy::Decision::Allow,
            startup_wait: std::time::Duration::from_secs(1),
            startup_concurrency: 4,
            lazy_idle: std::time::Duration::from_secs(60),
            state_dir: None,
            description_budget: 8000,
        };
        let catalog = Catalog::start(&crate::config::UpstreamConfig::default(), limits);
        let health = Health {
            catalog,
            shutdown: CancellationToken::new(),
        };
        let serving = healthz(State(health.clone())).await;
        assert_eq!(serving.status(), StatusCode::OK);
        health.shutdown.cancel();
        let stopping = healthz(State(health)).await;
        assert_eq!(stopping.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[test]
    fn the_report_sorts_upstreams_by_state() {
        let report = HealthReport::of(
            vec![
                status("up", true, false),
                status("late", false, true),
                status("gone", false, false),
            ],
            false,
        );
        assert_eq!(report.status, "ok");
        assert_eq!(report.connected, ["up"]);
        assert_eq!(report.connecting, ["late"]);
        assert_eq!(report.down[0].name, "gone");
        assert_eq!(report.down[0].error.as_deref(), Some("spawn failed"));
    }
}
