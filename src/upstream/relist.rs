//! Re-listing a server's tools when it says they changed (`notifications/tools/list_changed`).

use std::sync::Weak;

use tokio::sync::mpsc;

use super::{Inner, UpstreamError, connection, remembered, replace_tools, server_about, write};
use codemcp_sdk::tooldef::ToolDef;

/// Re-lists a server's tools whenever it says they changed.
pub(super) async fn refresh_on_change(
    inner: Weak<Inner>,
    mut changes: mpsc::UnboundedReceiver<String>,
) {
    while let Some(server) = changes.recv().await {
        let Some(inner) = inner.upgrade() else { return };
        let Some(upstream) = inner.upstream(&server) else {
            continue;
        };
        // Bounded like the handshake: a server that announces a change and
        // never answers must not hold its connection (and every call) forever.
        let bound = upstream.config.handshake_timeout;
        let listed = {
            let conn = upstream.conn.lock().await;
            match &conn.client {
                Some(client) => Some(
                    tokio::time::timeout(bound, connection::list_raw(client, &server))
                        .await
                        .map(|listed| {
                            // Remembered too: the next start describes it as it is now.
                            listed.inspect(|raw| {
                                let known = remembered::Known {
                                    tools: raw.clone(),
                                    about: server_about(client.peer()),
                                };
                                let version = connection::server_version(client);
                                inner.remembered.save(&upstream.config, &version, &known);
                            })
                        })
                        .unwrap_or_else(|_| {
                            Err(UpstreamError::Handshake {
                                server: server.clone(),
                                message: format!(
                                    "no tools/list answer within {} s",
                                    bound.as_secs_f64()
                                ),
                            })
                        }),
                ),
                None => None,
            }
        };
        match listed {
            Some(Ok(raw)) => {
                let tools: Vec<ToolDef> = raw
                    .into_iter()
                    .map(|t| ToolDef::from_mcp(&server, t))
                    .collect();
                write(&upstream.status).tools = tools.len();
                if replace_tools(&upstream, tools, inner.policy_default) {
                    inner.rebuild_sdk(true);
                }
            }
            Some(Err(e)) => {
                tracing::warn!(target: "codemcp::upstream", %server, error = %e, "re-listing tools failed")
            }
            None => {}
        }
    }
}
