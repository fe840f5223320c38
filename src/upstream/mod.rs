//! The upstream MCP servers: one rmcp client each, merged into one [`Catalog`]
//! that the engines call through and that owns the current SDK.
//!
//! Servers connect concurrently and in the background (see `startup`); one
//! that fails its handshake is reported and skipped, never blocking the others,
//! and one that finishes late joins the SDK then. A server that died is reconnected on the
//! next call (with backoff), and `tools/list_changed` from any server rebuilds
//! the SDK and tells our own clients. `reconfigure` changes the set of
//! servers while the gateway runs (reloads, `codemcp enable`/`disable`).

mod call;
mod child;
mod connection;
mod lazy;
pub mod oauth;
mod progress;
mod reconfigure;
mod reconnect;
mod relist;
mod remembered;
pub mod resources;
mod result;
mod sdk_view;
mod server;
mod startup;

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex as AsyncMutex, broadcast, mpsc};

use self::call::service_error_text;
// The rooms beside this one name these as `super::…`.
use self::reconnect::server_about;
use self::server::{Conn, Live, Upstream, remember, replace_tools};
use crate::config::{SkippedServer, UpstreamConfig};
use codemcp_sdk::policy::{Decision, Overrides};
use codemcp_sdk::{Connecting, Sdk};

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
    /// Its first join has not happened yet (connecting, or failing and retried).
    #[error("server '{server}' is still starting: {reason}")]
    Starting { server: String, reason: String },
    #[error("no upstream named '{0}'")]
    UnknownServer(String),
    /// An OAuth login is missing, expired, or failed (the message says which
    /// `codemcp auth` command helps).
    /// `message` starts with the quoted server name.
    #[error("upstream {message}")]
    Auth { server: String, message: String },
}

/// Limits on every upstream call.
#[derive(Debug, Clone)]
pub struct UpstreamLimits {
    /// `CODEMCP_TOOL_TIMEOUT_MS`.
    pub tool_timeout: Duration,
    /// `CODEMCP_MAX_TOOL_RESULT_BYTES`: the largest message one upstream may send.
    pub max_message: usize,
    /// `CODEMCP_POLICY_DEFAULT`: for tools no rule or annotation decides.
    pub policy_default: Decision,
    /// `CODEMCP_STARTUP_WAIT_MS`: how long [`Catalog::ready`] waits after launch.
    pub startup_wait: Duration,
    /// `CODEMCP_STARTUP_CONCURRENCY`: handshakes at once at start-up.
    pub startup_concurrency: usize,
    /// `CODEMCP_LAZY_IDLE_MS`: how long a `"start": "lazy"` server stays up unused.
    pub lazy_idle: Duration,
    /// Where each server's last tool list is remembered; `None`: nowhere.
    pub state_dir: Option<std::path::PathBuf>,
    /// `CODEMCP_DESCRIPTION_BUDGET`: the instructions and description are
    /// rendered for it before any server starts.
    pub description_budget: usize,
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
    /// Its first join failed; it is retried in the background.
    pub retrying: bool,
    /// Its tools come from the remembered catalog, not confirmed by it yet.
    pub remembered: bool,
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
    /// The tools changed since `sdk` was built: the next read rebuilds it. So
    /// 36 servers joining at start cost one build per read, not 36 builds of
    /// every tool, and nothing builds before `initialize` is answered.
    sdk_stale: std::sync::atomic::AtomicBool,
    /// One build at a time; readers that find it stale wait for that build.
    sdk_building: parking_lot::Mutex<()>,
    /// The configured servers were started ([`Catalog::launch`]).
    launched: std::sync::atomic::AtomicBool,
    /// Counts SDK changes, so views built from an older catalog are redone.
    generation: std::sync::atomic::AtomicU64,
    changed: broadcast::Sender<()>,
    tool_timeout: Duration,
    /// Largest message an upstream may send (`CODEMCP_MAX_TOOL_RESULT_BYTES`).
    max_message: usize,
    policy_default: Decision,
    changes_tx: mpsc::UnboundedSender<String>,
    startup: startup::Startup,
    remembered: remembered::Remembered,
    lazy_idle: Duration,
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
        let catalog = Self::prepare(config, limits);
        catalog.launch();
        catalog
    }

    /// The catalog with its remembered tools and no server started yet:
    /// [`Catalog::launch`] starts them once the gateway is ready to answer,
    /// so its own start does not queue behind dozens of starting servers.
    pub fn prepare(config: &UpstreamConfig, limits: UpstreamLimits) -> Self {
        for skipped in &config.skipped {
            tracing::warn!(target: "codemcp::upstream", server = %skipped.name, reason = %skipped.reason, "upstream skipped");
        }
        let (changes_tx, changes_rx) = mpsc::unbounded_channel();
        let remembered = remembered::Remembered::new(limits.state_dir.as_deref());
        let upstreams: BTreeMap<String, Arc<Upstream>> = config
            .servers
            .iter()
            .map(|server| {
                let upstream = Upstream::new(server);
                remember(&upstream, &remembered, limits.policy_default);
                (server.name.clone(), Arc::new(upstream))
            })
            .collect();
        let unknown = upstreams
            .values()
            .filter(|u| !read(&u.status).remembered)
            .count();
        let startup = startup::Startup::new(config.servers.len(), unknown, &limits);
        let catalog = Self {
            inner: Arc::new(Inner {
                upstreams: RwLock::new(upstreams),
                skipped: RwLock::new(config.skipped.clone()),
                reconfiguring: AsyncMutex::new(()),
                sdk: RwLock::new(Arc::new(Sdk::build(&[]))),
                sdk_stale: std::sync::atomic::AtomicBool::new(true),
                sdk_building: parking_lot::Mutex::new(()),
                launched: std::sync::atomic::AtomicBool::new(false),
                generation: std::sync::atomic::AtomicU64::new(0),
                changed: broadcast::channel(16).0,
                tool_timeout: limits.tool_timeout,
                max_message: limits.max_message,
                policy_default: limits.policy_default,
                changes_tx,
                startup,
                remembered,
                lazy_idle: limits.lazy_idle,
            }),
        };
        // Before any server starts (together they take the CPU for seconds):
        // the SDK of the remembered tools, knowing which servers are still
        // connecting, with its instructions and description, so the first
        // `initialize` and `tools/list` are answered from them at once.
        let sdk = catalog.inner.current_sdk();
        sdk.instructions(limits.description_budget);
        sdk.description(limits.description_budget);
        tokio::spawn(startup::report_startup(Arc::downgrade(&catalog.inner)));
        tokio::spawn(relist::refresh_on_change(
            Arc::downgrade(&catalog.inner),
            changes_rx,
        ));
        catalog
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
}

impl Inner {
    fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        read(&self.upstreams).get(name).cloned()
    }

    /// Every server now in the catalog, by name.
    fn all(&self) -> Vec<Arc<Upstream>> {
        read(&self.upstreams).values().cloned().collect()
    }

    /// The servers whose first join is still to come.
    fn connecting(&self) -> Vec<Connecting> {
        self.all()
            .iter()
            .filter(|u| u.starting())
            .map(|u| {
                let status = read(&u.status);
                Connecting {
                    server: u.config.name.clone(),
                    since: u.since,
                    reason: status.error.clone().filter(|_| status.retrying),
                    remembered: if status.remembered { status.tools } else { 0 },
                }
            })
            .collect()
    }

    /// Whether `upstream` is still the catalog's server of its name (a
    /// reload may have replaced or removed it).
    fn is_current(&self, upstream: &Arc<Upstream>) -> bool {
        self.upstream(&upstream.config.name)
            .is_some_and(|u| Arc::ptr_eq(&u, upstream))
    }

    /// Tells listeners the SDK changed (their tool description did).
    fn announce(&self) {
        let _ = self.changed.send(());
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
