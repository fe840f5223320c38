//! (Re)connecting a server when a call needs it, within its backoff, and
//! taking in what it then says: its tools, its purpose, its status.

use std::time::{Duration, Instant};

use super::connection::{self, Client};
use super::server::{Live, Upstream, replace_tools};
use super::{Inner, ServerStatus, UpstreamError, read, remembered, write};
use codemcp_sdk::tooldef::ToolDef;

impl Inner {
    /// A live connection to `upstream`, reconnecting a dead one if its backoff allows.
    pub(super) async fn peer(&self, upstream: &Upstream) -> Result<Live, UpstreamError> {
        let name = &upstream.config.name;
        {
            let conn = upstream.conn.lock().await;
            if let Some(live) = conn.live() {
                return Ok(live);
            }
            let wait = conn.backoff.wait_left();
            if !wait.is_zero() {
                return Err(UpstreamError::Down {
                    server: name.clone(),
                    reason: conn.last_error.clone(),
                    retry_in: wait.as_secs_f64(),
                });
            }
        }
        tracing::info!(target: "codemcp::upstream", server = %name, "reconnecting upstream");
        let was_starting = upstream.starting();
        if let Some(changed) = self.reconnect(upstream).await
            && (changed || was_starting)
        {
            // Clients are told only when the description changed: a server
            // that joins as it was remembered changes calls, not the text.
            self.rebuild_sdk(changed);
        }
        let conn = upstream.conn.lock().await;
        conn.live().ok_or_else(|| UpstreamError::Down {
            server: name.clone(),
            reason: conn.last_error.clone(),
            retry_in: conn.backoff.delay().as_secs_f64(),
        })
    }

    /// (Re)connects and lists tools. `None` when it failed; else whether
    /// what the description shows of it (its tools, what it is for) changed.
    pub(super) async fn reconnect(&self, upstream: &Upstream) -> Option<bool> {
        let name = upstream.config.name.clone();
        let mut conn = upstream.conn.lock().await;
        if conn.live().is_some() {
            // Another caller connected it while this one waited for the lock.
            return Some(false);
        }
        if let Some(old) = conn.client.take() {
            drop(old);
        }
        conn.generation += 1;
        let started = Instant::now();
        let patience = conn.backoff.patience(upstream.config.handshake_timeout);
        let connected = connect_and_list(upstream, self, patience).await;
        let handshake_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let old = read(&upstream.status).clone();
        let mut status = ServerStatus {
            name: name.clone(),
            connected: false,
            connecting: false,
            tools: old.tools,
            handshake_ms: Some(handshake_ms),
            error: None,
            retrying: old.retrying,
            remembered: old.remembered,
        };
        let changed = match connected {
            Ok((client, raw)) => {
                tracing::info!(target: "codemcp::upstream", server = %name, tools = raw.len(), handshake_ms, "upstream connected");
                let known = remembered::Known {
                    tools: raw,
                    about: server_about(client.peer()),
                };
                let version = connection::server_version(&client);
                self.remembered.save(&upstream.config, &version, &known);
                let about_changed = *read(&upstream.about) != known.about;
                *write(&upstream.about) = known.about;
                let tools: Vec<ToolDef> = known
                    .tools
                    .into_iter()
                    .map(|t| ToolDef::from_mcp(&name, t))
                    .collect();
                conn.client = Some(client);
                conn.backoff.attempted(true);
                upstream.touch();
                status.connected = true;
                status.retrying = false;
                status.remembered = false;
                status.tools = tools.len();
                Some(replace_tools(upstream, tools, self.policy_default) | about_changed)
            }
            Err(e) => {
                tracing::warn!(target: "codemcp::upstream", server = %name, error = %e, "upstream unavailable");
                conn.backoff.attempted(false);
                conn.last_error = e.to_string();
                status.error = Some(e.to_string());
                None
            }
        };
        *write(&upstream.status) = status;
        changed
    }

    /// Drops the connection `generation` (unless a newer one replaced it already).
    pub(super) async fn mark_down(&self, upstream: &Upstream, generation: u64, reason: &str) {
        let mut conn = upstream.conn.lock().await;
        if conn.generation != generation {
            return;
        }
        conn.client = None;
        conn.last_error = reason.to_owned();
        let mut status = write(&upstream.status);
        status.connected = false;
        status.error = Some(reason.to_owned());
    }
}

/// What a server says it is for: its `serverInfo.description`, else its `instructions`
/// (the description only names the first sentence).
pub(super) fn server_about(peer: &rmcp::Peer<rmcp::RoleClient>) -> Option<String> {
    let info = peer.peer_info()?;
    [
        info.server_info
            .as_ref()
            .and_then(|s| s.description.as_deref()),
        info.instructions.as_deref(),
    ]
    .into_iter()
    .flatten()
    .find(|text| !text.trim().is_empty())
    .map(str::to_owned)
}

/// Connects and lists its tools, the listing bounded by the server's
/// timeout too (a server may finish its handshake and never list).
async fn connect_and_list(
    upstream: &Upstream,
    inner: &Inner,
    timeout: Duration,
) -> Result<(Client, Vec<rmcp::model::Tool>), UpstreamError> {
    let mut patient = upstream.config.clone();
    patient.handshake_timeout = timeout;
    let config = &patient;
    let client = connection::connect(config, inner.changes_tx.clone(), inner.max_message).await?;
    match tokio::time::timeout(timeout, connection::list_raw(&client, &config.name)).await {
        Ok(Ok(tools)) => Ok((client, tools)),
        Ok(Err(e)) => Err(e),
        Err(_) => {
            let message = format!("no tools/list answer within {} s", timeout.as_secs_f64());
            tracing::warn!(target: "codemcp::upstream", server = %config.name, reason = %message, "upstream never listed its tools");
            Err(UpstreamError::List {
                server: config.name.clone(),
                message,
            })
        }
    }
}
