//! Changing the upstream servers of a running catalog (a reload of the config
//! file, `codemcp enable` / `disable`). Only servers whose entry changed
//! connect or disconnect; the others keep their connections, and a server
//! whose entry changed only in its `"policy"` keeps its connection too.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;

use super::{Catalog, Conn, Inner, Upstream, read, replace_tools, write};
use crate::config::{ServerConfig, SkippedServer};

/// What one reconfiguration did, by server name.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reconfigured {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Its entry changed how it is reached: the old connection was closed
    /// and a new one made.
    pub reconnected: Vec<String>,
    /// Only its `"policy"` changed: same connection, new policies.
    pub repoliced: Vec<String>,
    pub unchanged: Vec<String>,
}

impl Reconfigured {
    /// Nothing changed for any client.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.reconnected.is_empty()
            && self.repoliced.is_empty()
    }
}

impl Catalog {
    /// Makes `servers` the catalog's upstreams and `skipped` its skipped
    /// entries. Servers new or changed connect in the background; this waits
    /// up to `wait` for their first attempt, so the caller can report it.
    /// Clients are told (`tools/list_changed`) when anything changed, and
    /// again as each new server comes up.
    pub async fn reconfigure(
        &self,
        servers: &[ServerConfig],
        skipped: &[SkippedServer],
        wait: Duration,
    ) -> Reconfigured {
        let inner = &self.inner;
        let _one_at_a_time = inner.reconfiguring.lock().await;
        let current: BTreeMap<String, Arc<Upstream>> = read(&inner.upstreams).clone();
        let mut next = BTreeMap::new();
        let mut done = Reconfigured::default();
        let mut joining = Vec::new();
        let mut retired = Vec::new();
        for server in servers {
            let name = server.name.clone();
            let upstream = match current.get(&name) {
                Some(old) if old.config == *server => {
                    done.unchanged.push(name.clone());
                    old.clone()
                }
                Some(old) if same_connection(&old.config, server) => {
                    done.repoliced.push(name.clone());
                    Arc::new(repoliced(old, server, inner).await)
                }
                found => {
                    if let Some(old) = found {
                        retired.push(old.clone());
                        done.reconnected.push(name.clone());
                    } else {
                        done.added.push(name.clone());
                    }
                    let fresh = Upstream::new(server);
                    super::remember(&fresh, &inner.remembered, inner.policy_default);
                    let fresh = Arc::new(fresh);
                    joining.push(fresh.clone());
                    fresh
                }
            };
            next.insert(name, upstream);
        }
        for (name, old) in &current {
            if !next.contains_key(name) {
                done.removed.push(name.clone());
                retired.push(old.clone());
            }
        }
        *write(&inner.upstreams) = next;
        *write(&inner.skipped) = skipped.to_vec();
        for old in retired {
            tokio::spawn(disconnect(old));
        }
        if !done.is_empty() {
            inner.rebuild_sdk(true);
        }
        tracing::info!(target: "codemcp::upstream", added = ?done.added, removed = ?done.removed, reconnected = ?done.reconnected, repoliced = ?done.repoliced, "upstreams reconfigured");
        let joins: Vec<_> = joining
            .into_iter()
            .map(|upstream| tokio::spawn(join(inner.clone(), upstream)))
            .collect();
        let _ = tokio::time::timeout(wait, futures::future::join_all(joins)).await;
        done
    }
}

/// Whether two entries of one server reach it the same way (they may differ
/// in policy).
fn same_connection(a: &ServerConfig, b: &ServerConfig) -> bool {
    a.transport == b.transport && a.handshake_timeout == b.handshake_timeout && a.oauth == b.oauth
}

/// `old` with `config`'s policy: its connection moves over, its tools are
/// decided again. Calls already holding `old` finish on the same connection.
async fn repoliced(old: &Upstream, config: &ServerConfig, inner: &Inner) -> Upstream {
    let conn = {
        let mut conn = old.conn.lock().await;
        Conn {
            client: conn.client.take(),
            generation: conn.generation,
            backoff: conn.backoff,
            last_error: conn.last_error.clone(),
        }
    };
    let moved = Upstream {
        config: config.clone(),
        conn: AsyncMutex::new(conn),
        tools: parking_lot::RwLock::new(Vec::new()),
        about: parking_lot::RwLock::new(read(&old.about).clone()),
        status: parking_lot::RwLock::new(read(&old.status).clone()),
        since: old.since,
        last_used: parking_lot::Mutex::new(*old.last_used.lock()),
        calls: std::sync::atomic::AtomicUsize::new(0),
    };
    let tools = read(&old.tools).clone();
    replace_tools(&moved, tools, inner.policy_default);
    moved
}

/// A server new to the catalog (or whose entry changed) connects (retried
/// in the background like at launch); the wait ends after its first attempt.
async fn join(inner: Arc<Inner>, upstream: Arc<Upstream>) {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(super::startup::join(
        Arc::downgrade(&inner),
        upstream,
        move |_: &Inner| {
            let _ = done_tx.send(());
        },
    ));
    let _ = done_rx.await;
}

/// Closes a server's connection (its process is stopped) once no reconnect
/// holds it.
async fn disconnect(old: Arc<Upstream>) {
    let client = old.conn.lock().await.client.take();
    if client.is_some() {
        tracing::info!(target: "codemcp::upstream", server = %old.config.name, "upstream disconnected");
    }
    let mut status = write(&old.status);
    status.connected = false;
}
