//! One upstream server as the catalog holds it: its settings, its
//! connection, its tools (with their policies) and its status.

use parking_lot::RwLock;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex as AsyncMutex;

use super::connection::{Backoff, Client};
use super::{ServerStatus, UpstreamError, child, lazy, read, remembered, write};
use crate::config::{ServerConfig, Start};
use codemcp_sdk::policy::Decision;
use codemcp_sdk::tooldef::ToolDef;

/// One connection as a call uses it.
pub(super) struct Live {
    pub(super) peer: rmcp::Peer<rmcp::RoleClient>,
    pub(super) liveness: Option<Arc<child::Liveness>>,
    pub(super) generation: u64,
}

pub(super) struct Upstream {
    pub(super) config: ServerConfig,
    pub(super) conn: AsyncMutex<Conn>,
    pub(super) tools: RwLock<Vec<ToolDef>>,
    /// What the server says it is for, from its last handshake (see `reconnect::server_about`).
    pub(super) about: RwLock<Option<String>>,
    pub(super) status: RwLock<ServerStatus>,
    /// When it joined the catalog (at launch, or by a reload).
    pub(super) since: Instant,
    /// When a call last used it (or it connected): for `"start": "lazy"`.
    pub(super) last_used: parking_lot::Mutex<Instant>,
    /// Calls under way on it.
    pub(super) calls: std::sync::atomic::AtomicUsize,
}

impl Upstream {
    /// A server not connected yet, its first attempt to come.
    pub(super) fn new(config: &ServerConfig) -> Self {
        let status = ServerStatus {
            name: config.name.clone(),
            connected: false,
            connecting: true,
            tools: 0,
            handshake_ms: None,
            error: None,
            retrying: false,
            remembered: false,
        };
        Self {
            config: config.clone(),
            conn: AsyncMutex::new(Conn {
                client: None,
                generation: 0,
                backoff: Backoff::new(),
                last_error: String::new(),
            }),
            tools: RwLock::new(Vec::new()),
            about: RwLock::new(None),
            status: RwLock::new(status),
            since: Instant::now(),
            last_used: parking_lot::Mutex::new(Instant::now()),
            calls: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    pub(super) fn touch(&self) {
        *self.last_used.lock() = Instant::now();
    }

    /// Whether its first join is still to come (connecting or retried).
    pub(super) fn starting(&self) -> bool {
        let status = read(&self.status);
        !status.connected && (status.connecting || status.retrying)
    }

    /// What a call to it is told while it is starting.
    pub(super) fn still_starting(&self, failed: Option<String>) -> UpstreamError {
        let last = failed.or_else(|| read(&self.status).error.clone());
        let reason = match last {
            Some(e) => format!(
                "its last attempt failed ({e}); it is retried in the background, try again shortly"
            ),
            None => format!(
                "connecting for {} s; try again shortly",
                self.since.elapsed().as_secs()
            ),
        };
        UpstreamError::Starting {
            server: self.config.name.clone(),
            reason,
        }
    }

    /// Counts a call under way until the guard is dropped.
    pub(super) fn in_use(&self) -> lazy::InUse<'_> {
        lazy::InUse::new(&self.calls)
    }
}

pub(super) struct Conn {
    pub(super) client: Option<Client>,
    /// Counts connections, so a failure is only pinned on the one it happened to.
    pub(super) generation: u64,
    pub(super) backoff: Backoff,
    pub(super) last_error: String,
}

impl Conn {
    pub(super) fn live(&self) -> Option<Live> {
        let client = self.client.as_ref().filter(|c| c.is_alive())?;
        Some(Live {
            peer: client.peer().clone(),
            liveness: client.liveness(),
            generation: self.generation,
        })
    }
}

/// Stores a server's tools with their policies; returns whether they changed.
pub(super) fn replace_tools(
    upstream: &Upstream,
    mut tools: Vec<ToolDef>,
    default: Decision,
) -> bool {
    let rules = &upstream.config.policy;
    for tool in &mut tools {
        tool.policy = codemcp_sdk::policy::effective(
            rules,
            &tool.name,
            tool.read_only,
            tool.destructive,
            default,
        );
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for pattern in rules.unmatched(&names) {
        tracing::warn!(target: "codemcp::config", server = %upstream.config.name, %pattern, "a policy rule matches no tool of this server");
    }
    let mut current = write(&upstream.tools);
    let changed = *current != tools;
    *current = tools;
    changed
}

/// Gives a new server its remembered tools and purpose, if any, unconfirmed.
pub(super) fn remember(
    upstream: &Upstream,
    remembered: &remembered::Remembered,
    default: Decision,
) {
    let Some(known) = remembered.load(&upstream.config) else {
        return;
    };
    let name = &upstream.config.name;
    *write(&upstream.about) = known.about;
    let tools: Vec<ToolDef> = known
        .tools
        .into_iter()
        .map(|t| ToolDef::from_mcp(name, t))
        .collect();
    let mut status = write(&upstream.status);
    status.remembered = true;
    status.tools = tools.len();
    // A lazy server waits for its first call.
    status.connecting = upstream.config.start != Start::Lazy;
    drop(status);
    replace_tools(upstream, tools, default);
}
