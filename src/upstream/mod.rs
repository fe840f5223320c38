//! The upstream MCP servers: one rmcp client each, merged into one [`Catalog`]
//! that the engines call through and that owns the current SDK.
//!
//! Servers connect concurrently and in the background (see `startup`); one
//! that fails its handshake is reported and skipped, never blocking the others,
//! and one that finishes late joins the SDK then. A server that died is reconnected on the
//! next call (with backoff), and `tools/list_changed` from any server rebuilds
//! the SDK and tells our own clients. `reconfigure` changes the set of
//! servers while the gateway runs (reloads, `codemcp enable`/`disable`).

mod child;
mod connection;
pub mod oauth;
mod progress;
mod reconfigure;
pub mod resources;
mod result;
mod startup;

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Map, Value};
use tokio::sync::{Mutex as AsyncMutex, broadcast, mpsc};

use self::connection::{Backoff, Client};
use crate::config::{ServerConfig, SkippedServer, UpstreamConfig};
use crate::exec::{ToolFailure, ToolHost};
use crate::policy::{self, Decision, Overrides};
use crate::sdk::{Connecting, Sdk};
use crate::tooldef::ToolDef;

pub use self::reconfigure::Reconfigured;
pub use self::result::tool_value;

#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    #[error("upstream '{server}': cannot start '{command}': {message}")]
    Spawn {
        server: String,
        command: String,
        message: String,
    },
    #[error("upstream '{server}': handshake failed: {message}")]
    Handshake { server: String, message: String },
    #[error("upstream '{server}': {message}")]
    Config { server: String, message: String },
    #[error("upstream '{server}': tools/list failed: {message}")]
    List { server: String, message: String },
    #[error("upstream '{server}', tool '{tool}': {message}")]
    Call {
        server: String,
        tool: String,
        message: String,
    },
    #[error(
        "upstream '{server}', tool '{tool}': did not answer within {seconds} s (CODEMCP_TOOL_TIMEOUT_MS)"
    )]
    Timeout {
        server: String,
        tool: String,
        seconds: f64,
    },
    #[error(
        "upstream '{server}', tool '{tool}': connection lost: {reason}; the server is restarted on the next call"
    )]
    Lost {
        server: String,
        tool: String,
        reason: String,
    },
    #[error("upstream '{server}' is down ({reason}); next reconnect attempt in {retry_in:.1} s")]
    Down {
        server: String,
        reason: String,
        retry_in: f64,
    },
    #[error("no upstream named '{0}'")]
    UnknownServer(String),
    /// An OAuth login is missing, expired, or failed (the message says which
    /// `codemcp auth` command helps).
    /// `message` starts with the quoted server name.
    #[error("upstream {message}")]
    Auth { server: String, message: String },
}

/// Limits on every upstream call.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamLimits {
    /// `CODEMCP_TOOL_TIMEOUT_MS`.
    pub tool_timeout: Duration,
    /// `CODEMCP_MAX_TOOL_RESULT_BYTES`: the largest message one upstream may send.
    pub max_message: usize,
    /// `CODEMCP_POLICY_DEFAULT`: for tools no rule or annotation decides.
    pub policy_default: Decision,
    /// `CODEMCP_STARTUP_WAIT_MS`: how long [`Catalog::ready`] waits after launch.
    pub startup_wait: Duration,
}

/// One connection as a call uses it.
struct Live {
    peer: rmcp::Peer<rmcp::RoleClient>,
    liveness: Option<Arc<child::Liveness>>,
    generation: u64,
}

/// What `codemcp check` and the logs report per server.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub connected: bool,
    /// Its first connection attempt has not finished yet.
    pub connecting: bool,
    pub tools: usize,
    pub handshake_ms: Option<u64>,
    pub error: Option<String>,
}

/// The merged view of every upstream. Cheap to clone.
#[derive(Clone)]
pub struct Catalog {
    inner: Arc<Inner>,
}

struct Inner {
    /// Changed at run time by [`Catalog::reconfigure`]; calls hold their
    /// server's `Arc`, so one that was removed finishes on its old connection.
    upstreams: RwLock<BTreeMap<String, Arc<Upstream>>>,
    skipped: RwLock<Vec<SkippedServer>>,
    /// One reconfiguration at a time.
    reconfiguring: AsyncMutex<()>,
    sdk: RwLock<Arc<Sdk>>,
    /// Counts SDK rebuilds, so views built from an older catalog are redone.
    generation: std::sync::atomic::AtomicU64,
    changed: broadcast::Sender<()>,
    tool_timeout: Duration,
    /// Largest message an upstream may send (`CODEMCP_MAX_TOOL_RESULT_BYTES`).
    max_message: usize,
    policy_default: Decision,
    changes_tx: mpsc::UnboundedSender<String>,
    startup: startup::Startup,
}

struct Upstream {
    config: ServerConfig,
    conn: AsyncMutex<Conn>,
    tools: RwLock<Vec<ToolDef>>,
    status: RwLock<ServerStatus>,
    /// When it joined the catalog (at launch, or by a reload).
    since: Instant,
}

impl Upstream {
    /// A server not connected yet, its first attempt to come.
    fn new(config: &ServerConfig) -> Self {
        let status = ServerStatus {
            name: config.name.clone(),
            connected: false,
            connecting: true,
            tools: 0,
            handshake_ms: None,
            error: None,
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
            status: RwLock::new(status),
            since: Instant::now(),
        }
    }
}

struct Conn {
    client: Option<Client>,
    /// Counts connections, so a failure is only pinned on the one it happened to.
    generation: u64,
    backoff: Backoff,
    last_error: String,
}

impl Conn {
    fn live(&self) -> Option<Live> {
        let client = self.client.as_ref().filter(|c| c.is_alive())?;
        Some(Live {
            peer: client.peer().clone(),
            liveness: client.liveness(),
            generation: self.generation,
        })
    }
}

impl Catalog {
    /// Connects every configured server concurrently, waits for every
    /// handshake to finish (or time out), and builds the SDK: for one-shots.
    pub async fn connect(config: &UpstreamConfig, limits: UpstreamLimits) -> Self {
        let catalog = Self::start(config, limits);
        catalog.inner.startup.all_done().await;
        catalog
    }

    /// Starts connecting every configured server in the background and
    /// returns at once, with no tools yet: for serving, where `initialize`
    /// must not wait. [`Catalog::ready`] waits for them, bounded.
    pub fn start(config: &UpstreamConfig, limits: UpstreamLimits) -> Self {
        for skipped in &config.skipped {
            tracing::warn!(target: "codemcp::upstream", server = %skipped.name, reason = %skipped.reason, "upstream skipped");
        }
        let (changes_tx, changes_rx) = mpsc::unbounded_channel();
        let upstreams = config
            .servers
            .iter()
            .map(|server| (server.name.clone(), Arc::new(Upstream::new(server))))
            .collect();
        let catalog = Self {
            inner: Arc::new(Inner {
                upstreams: RwLock::new(upstreams),
                skipped: RwLock::new(config.skipped.clone()),
                reconfiguring: AsyncMutex::new(()),
                sdk: RwLock::new(Arc::new(Sdk::build(&[]))),
                generation: std::sync::atomic::AtomicU64::new(0),
                changed: broadcast::channel(16).0,
                tool_timeout: limits.tool_timeout,
                max_message: limits.max_message,
                policy_default: limits.policy_default,
                changes_tx,
                startup: startup::Startup::new(config.servers.len(), limits.startup_wait),
            }),
        };
        // The SDK already knows which servers are still connecting.
        catalog.inner.rebuild_sdk(false);
        for upstream in catalog.inner.all() {
            tokio::spawn(first_connect(catalog.inner.clone(), upstream));
        }
        tokio::spawn(report_startup(Arc::downgrade(&catalog.inner)));
        tokio::spawn(refresh_on_change(
            Arc::downgrade(&catalog.inner),
            changes_rx,
        ));
        catalog
    }

    /// Waits until every server's first connection attempt finished, or
    /// until `CODEMCP_STARTUP_WAIT_MS` after launch, whichever comes first.
    /// Requests that need the tools await this; `initialize` does not.
    pub async fn ready(&self) {
        self.inner.startup.ready().await;
    }

    /// The SDK for the tools known right now.
    pub fn sdk(&self) -> Arc<Sdk> {
        self.inner.current_sdk()
    }

    /// Which build of the SDK [`Catalog::sdk`] returns now.
    pub fn generation(&self) -> u64 {
        self.inner
            .generation
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// The SDK as one principal sees it: their overrides decide which tools
    /// are denied (and so do not exist for them).
    pub fn sdk_with(&self, overrides: &Overrides) -> Arc<Sdk> {
        if overrides.is_empty() {
            return self.sdk();
        }
        self.inner
            .build_sdk(|server, tool| overrides.apply(server, &tool.name, tool.policy))
    }

    /// The policy of `server`'s `tool` for a principal with `overrides`.
    pub fn policy_with(&self, overrides: &Overrides, server: &str, tool: &str) -> Option<Decision> {
        let operator = self.policy(server, tool)?;
        Some(overrides.apply(server, tool, operator))
    }

    /// Fires whenever the SDK changed (an upstream's tool list changed).
    pub fn subscribe_changes(&self) -> broadcast::Receiver<()> {
        self.inner.changed.subscribe()
    }

    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.inner
            .all()
            .iter()
            .map(|u| read(&u.status).clone())
            .collect()
    }

    pub fn skipped(&self) -> Vec<SkippedServer> {
        read(&self.inner.skipped).clone()
    }

    /// The policy of `server`'s `tool`; `None` for a tool it does not list.
    pub fn policy(&self, server: &str, tool: &str) -> Option<Decision> {
        let upstream = self.inner.upstream(server)?;
        let tools = read(&upstream.tools);
        tools.iter().find(|t| t.name == tool).map(|t| t.policy)
    }

    /// Every listed tool with its policy, denied ones too, by server.
    pub fn policies(&self) -> Vec<(String, Vec<(String, Decision)>)> {
        self.inner
            .all()
            .iter()
            .map(|upstream| {
                let tools = read(&upstream.tools);
                (
                    upstream.config.name.clone(),
                    tools.iter().map(|t| (t.name.clone(), t.policy)).collect(),
                )
            })
            .collect()
    }

    /// Calls one upstream tool with the per-call timeout. A stdio server whose
    /// connection breaks mid-call fails the call at once.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<CallToolResult, UpstreamError> {
        let upstream = self
            .inner
            .upstream(server)
            .ok_or_else(|| UpstreamError::UnknownServer(server.to_owned()))?;
        let looking = crate::timing::start();
        let live = self.inner.peer(&upstream).await?;
        crate::timing::since("upstream peer", looking);
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let params = crate::telemetry::with_trace_meta(params);
        let calling = crate::timing::start();
        let timeout = self.inner.tool_timeout;
        let lost = async {
            match &live.liveness {
                Some(liveness) => liveness.lost().await,
                None => std::future::pending().await,
            }
        };
        let failure = tokio::select! {
            biased;
            outcome = tokio::time::timeout(timeout, live.peer.call_tool(params)) => match outcome {
                Ok(Ok(result)) => {
                    log_round_trip(calling);
                    return Ok(result);
                }
                Err(_) => {
                    let stuck = live.liveness.as_ref().filter(|l| l.unfinished_bytes() > 0);
                    let Some(liveness) = stuck else {
                        return Err(UpstreamError::Timeout {
                            server: server.to_owned(),
                            tool: tool.to_owned(),
                            seconds: timeout.as_secs_f64(),
                        });
                    };
                    // Later answers would queue behind the unfinished message.
                    liveness.lose(format!(
                        "no answer within {} s (CODEMCP_TOOL_TIMEOUT_MS), and the server's output \
                         stopped in the middle of a message ({} bytes without a line end)",
                        timeout.as_secs_f64(),
                        liveness.unfinished_bytes()
                    ));
                    rmcp::ServiceError::TransportClosed
                }
                Ok(Err(e)) => e,
            },
            reason = lost => {
                tracing::debug!(target: "codemcp::upstream", %server, %reason, "connection lost mid-call");
                rmcp::ServiceError::TransportClosed
            }
        };
        let closed =
            live.peer.is_transport_closed() || live.liveness.as_ref().is_some_and(|l| l.is_lost());
        if !closed {
            return Err(UpstreamError::Call {
                server: server.to_owned(),
                tool: tool.to_owned(),
                message: service_error_text(&failure),
            });
        }
        let reason = match &live.liveness {
            Some(liveness) if liveness.is_lost() => liveness.reason(),
            _ => service_error_text(&failure),
        };
        tracing::warn!(target: "codemcp::upstream", %server, %tool, %reason, "upstream connection lost");
        self.inner
            .mark_down(&upstream, live.generation, &reason)
            .await;
        Err(UpstreamError::Lost {
            server: server.to_owned(),
            tool: tool.to_owned(),
            reason,
        })
    }
}

/// An upstream call's round trip, split where the bytes left and came back
/// (stdio upstreams mark both; see `crate::timing`).
fn log_round_trip(started: Option<Instant>) {
    let Some(started) = started else {
        return;
    };
    let now = Instant::now();
    crate::timing::stage("upstream call", now - started);
    let (sent, read) = (
        crate::timing::UPSTREAM_SENT.take(),
        crate::timing::UPSTREAM_READ.take(),
    );
    if let (Some(sent), Some(read)) = (sent, read)
        && started <= sent
        && sent <= read
        && read <= now
    {
        crate::timing::stage("upstream sent", sent - started);
        crate::timing::stage("upstream answered", read - sent);
        crate::timing::stage("upstream received", now - read);
    }
}

/// What a failed call tells the agent, in words rather than rmcp's variant names.
fn service_error_text(error: &rmcp::ServiceError) -> String {
    match error {
        rmcp::ServiceError::McpError(data) => format!("error {}: {}", data.code.0, data.message),
        rmcp::ServiceError::UnexpectedResponse => {
            "the server answered with something that is not a tool result".into()
        }
        rmcp::ServiceError::TransportClosed => "the answer did not arrive: the connection failed \
             (answers over 16 MiB are refused; the gateway log says why)"
            .into(),
        other => other.to_string(),
    }
}

impl ToolHost for Catalog {
    fn sdk(&self) -> Arc<Sdk> {
        Catalog::sdk(self)
    }

    fn call_tool(
        &self,
        _engine: &'static str,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let catalog = self.clone();
        let (server, tool) = (server.to_owned(), tool.to_owned());
        Box::pin(async move {
            match catalog.call(&server, &tool, args).await {
                Ok(result) => tool_value(result),
                Err(e) => Err(ToolFailure {
                    message: e.to_string(),
                }),
            }
        })
    }
}

impl Inner {
    fn current_sdk(&self) -> Arc<Sdk> {
        read(&self.sdk).clone()
    }

    fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        read(&self.upstreams).get(name).cloned()
    }

    /// Every server now in the catalog, by name.
    fn all(&self) -> Vec<Arc<Upstream>> {
        read(&self.upstreams).values().cloned().collect()
    }

    /// A live connection to `upstream`, reconnecting a dead one if its backoff allows.
    async fn peer(&self, upstream: &Upstream) -> Result<Live, UpstreamError> {
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
        if self.reconnect(upstream).await {
            self.rebuild_sdk(true);
        }
        let conn = upstream.conn.lock().await;
        conn.live().ok_or_else(|| UpstreamError::Down {
            server: name.clone(),
            reason: conn.last_error.clone(),
            retry_in: conn.backoff.delay().as_secs_f64(),
        })
    }

    /// (Re)connects and lists tools. Returns whether the tool list changed.
    async fn reconnect(&self, upstream: &Upstream) -> bool {
        let name = upstream.config.name.clone();
        let mut conn = upstream.conn.lock().await;
        if let Some(old) = conn.client.take() {
            drop(old);
        }
        conn.generation += 1;
        let started = Instant::now();
        let connected =
            match connection::connect(&upstream.config, self.changes_tx.clone(), self.max_message)
                .await
            {
                Ok(client) => match connection::list_tools_within(
                    &client,
                    &name,
                    upstream.config.handshake_timeout,
                )
                .await
                {
                    Ok(tools) => Ok((client, tools)),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
        let handshake_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut status = ServerStatus {
            name: name.clone(),
            connected: false,
            connecting: false,
            tools: 0,
            handshake_ms: Some(handshake_ms),
            error: None,
        };
        let changed = match connected {
            Ok((client, tools)) => {
                tracing::info!(target: "codemcp::upstream", server = %name, tools = tools.len(), handshake_ms, "upstream connected");
                conn.client = Some(client);
                conn.backoff.attempted(true);
                status.connected = true;
                status.tools = tools.len();
                replace_tools(upstream, tools, self.policy_default)
            }
            Err(e) => {
                tracing::warn!(target: "codemcp::upstream", server = %name, error = %e, "upstream unavailable; skipped");
                conn.backoff.attempted(false);
                conn.last_error = e.to_string();
                status.error = Some(e.to_string());
                false
            }
        };
        *write(&upstream.status) = status;
        changed
    }

    /// Drops the connection `generation` (unless a newer one replaced it already).
    async fn mark_down(&self, upstream: &Upstream, generation: u64, reason: &str) {
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

    /// The servers whose first connection attempt has not finished.
    fn connecting(&self) -> Vec<Connecting> {
        self.all()
            .iter()
            .filter(|u| read(&u.status).connecting)
            .map(|u| Connecting {
                server: u.config.name.clone(),
                since: u.since,
            })
            .collect()
    }

    /// Rebuilds the SDK from every server's tools; with `notify`, tells
    /// listeners (their tool description changed).
    fn rebuild_sdk(&self, notify: bool) {
        let sdk = self.build_sdk(|_, tool| tool.policy);
        *write(&self.sdk) = sdk;
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if notify {
            self.announce();
        }
    }

    /// An SDK of every tool whose `decide(server, tool)` is not `Deny`:
    /// denied tools do not exist for the agent.
    fn build_sdk(&self, decide: impl Fn(&str, &ToolDef) -> Decision) -> Arc<Sdk> {
        let tools: Vec<ToolDef> = self
            .all()
            .iter()
            .flat_map(|u| {
                let mut tools = read(&u.tools).clone();
                for tool in &mut tools {
                    tool.policy = decide(&u.config.name, tool);
                }
                tools
            })
            .filter(|t| t.policy != Decision::Deny)
            .collect();
        Arc::new(Sdk::build(&tools).with_connecting(self.connecting()))
    }

    /// Tells listeners the SDK changed (their tool description did).
    fn announce(&self) {
        let _ = self.changed.send(());
    }
}

/// Stores a server's tools with their policies; returns whether they changed.
fn replace_tools(upstream: &Upstream, mut tools: Vec<ToolDef>, default: Decision) -> bool {
    let rules = &upstream.config.policy;
    for tool in &mut tools {
        tool.policy =
            policy::effective(rules, &tool.name, tool.read_only, tool.destructive, default);
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

/// One server's first connection, in the background. Its tools join the SDK
/// when it is up; clients are told when they may have listed the tools
/// without them. A failure only drops it from the servers still connecting,
/// which no description shows, so nobody is told.
async fn first_connect(inner: Arc<Inner>, upstream: Arc<Upstream>) {
    let changed = inner.reconnect(&upstream).await;
    inner.rebuild_sdk(false);
    // Checked after the rebuild: if the wait had not elapsed by then, every
    // list answered (all after the wait) already has these tools.
    if changed && inner.startup.wait_elapsed() {
        inner.announce();
    }
    inner.startup.one_done();
}

/// Logs, once, which servers missed the startup wait; they join when up.
async fn report_startup(inner: Weak<Inner>) {
    let Some(inner) = inner.upgrade() else {
        return;
    };
    inner.startup.ready().await;
    if inner.startup.pending() > 0 {
        let late: Vec<String> = inner.connecting().into_iter().map(|c| c.server).collect();
        let wait_ms = inner.startup.wait_ms();
        tracing::info!(target: "codemcp::upstream", servers = ?late, wait_ms, "startup wait elapsed; serving without the servers still connecting, which join when up");
    }
}

/// Re-lists a server's tools whenever it says they changed.
async fn refresh_on_change(inner: Weak<Inner>, mut changes: mpsc::UnboundedReceiver<String>) {
    while let Some(server) = changes.recv().await {
        let Some(inner) = inner.upgrade() else { return };
        let Some(upstream) = inner.upstream(&server) else {
            continue;
        };
        let listed = {
            let conn = upstream.conn.lock().await;
            match &conn.client {
                Some(client) => Some(connection::list_tools(client, &server).await),
                None => None,
            }
        };
        match listed {
            Some(Ok(tools)) => {
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

// Poisoning only means another thread panicked mid-update of plain data; the
// data is still usable.
fn read<T>(lock: &RwLock<T>) -> parking_lot::RwLockReadGuard<'_, T> {
    lock.read()
}

fn write<T>(lock: &RwLock<T>) -> parking_lot::RwLockWriteGuard<'_, T> {
    lock.write()
}
