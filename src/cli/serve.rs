//! `codemcp serve`: one client on stdin/stdout, or Streamable HTTP at an
//! address, with the principals file when one is set.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::admin;
use crate::assemble::{self, Transport};
use crate::authority::Authority;
use crate::authority::principals::Principals;
use crate::config::Settings;
use crate::server::{self, GatewayState, HttpAccess};
use crate::upstream::Catalog;

/// How long a stdio gateway waits for its client's first request before it
/// starts the upstream servers anyway.
const LAUNCH_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

/// Serves one client on stdin/stdout; `admin` is this gateway's entry in
/// `codemcp instances` (and its admin socket) while it serves.
pub(super) async fn stdio(
    settings: &Settings,
    catalog: Catalog,
    admin: admin::Running,
) -> Result<(), String> {
    admin::signals::exit_on_signal(admin.socket_file());
    let executor = assemble::build(settings, Transport::Stdio)
        .await
        .map_err(|e| e.to_string())?;
    let shared = GatewayState::new(
        catalog,
        executor,
        settings.description_budget,
        settings.output,
        Authority::from_settings(settings).map_err(|e| e.to_string())?,
    );
    // The servers start now, when nothing but the client is left to wait for.
    // Starting dozens of servers takes the CPU (each is a fork and exec, then
    // their own start): they start once the client's `initialize` is
    // answered, or after a short grace when it does not come first.
    shared.catalog.launch_after(LAUNCH_GRACE);
    let served = server::serve_stdio(shared.clone()).await;
    shared.executor.shutdown().await;
    served.map_err(|e| e.to_string())?;
    Ok(())
}

/// Serves Streamable HTTP at `addr` until a signal; `_admin` is held, as
/// for stdio, while it serves.
pub(super) async fn http(
    settings: &Settings,
    catalog: Catalog,
    addr: SocketAddr,
    _admin: admin::Running,
) -> Result<(), String> {
    let executor = assemble::build(settings, Transport::Http)
        .await
        .map_err(|e| e.to_string())?;
    let shared = GatewayState::new(
        catalog,
        executor,
        settings.description_budget,
        settings.output,
        Authority::from_settings(settings).map_err(|e| e.to_string())?,
    );
    let access = HttpAccess {
        allowed_hosts: settings.http.allowed_hosts.clone(),
        allowed_origins: settings.http.allowed_origins.clone(),
        token: settings.http.http_token.clone(),
        principals: load_principals(settings, &shared.catalog)?,
        healthz_open: settings.http.healthz_open,
        limits: server::HttpLimits::from_settings(settings),
    };
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        admin::signals::terminated().await;
        stop.cancel();
    });
    shared.catalog.launch();
    let served = server::serve_http(shared.clone(), addr, access, shutdown).await;
    shared.executor.shutdown().await;
    served.map_err(|e| e.to_string())?;
    Ok(())
}

/// The principals file of `serve --http`, if one is set; a policy override
/// naming a server the gateway does not have is worth a warning (a typo).
fn load_principals(
    settings: &Settings,
    catalog: &Catalog,
) -> Result<Option<Arc<Principals>>, String> {
    let Some(path) = settings.http.http_tokens.as_deref() else {
        return Ok(None);
    };
    let loaded = Principals::load(path).map_err(|e| e.to_string())?;
    let servers: Vec<String> = catalog.statuses().into_iter().map(|s| s.name).collect();
    for name in loaded.names() {
        for server in loaded.unknown_servers(&name, &servers) {
            tracing::warn!(target: "codemcp::config", principal = %name, %server, "a principal's policy names a server the gateway does not have");
        }
    }
    tracing::info!(target: "codemcp::server", path = %path.display(), principals = loaded.names().len(), "principals loaded");
    Ok(Some(Arc::new(loaded)))
}
