//! What every MCP session of one gateway process shares, and the background
//! tasks that keep it current (tool changes told to clients, idle sessions,
//! unanswered questions and grants expired).

use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast;

use crate::authority::guarded::{Authority, CallContext, GrantBook, GuardedTools};
use crate::authority::pending::PausedRuns;
use crate::config::settings::OutputFormat;
use crate::helpers::{Assembly, Helpers, Snippet};
use crate::upstream::Catalog;
use codemcp_exec::{Executor, ToolHost};

/// State shared by every MCP session of one gateway process.
pub struct GatewayState {
    pub catalog: Catalog,
    pub executor: Executor,
    /// Saved helpers, when the gateway keeps them (see [`GatewayState::assemble`]).
    pub helpers: Option<Arc<Helpers>>,
    pub description_budget: usize,
    /// `CODEMCP_OUTPUT`: the format of a result's text block.
    pub output: OutputFormat,
    /// Peers of sessions on the `initialize` lifecycle (protocol ≤ 2025-11-25),
    /// which get `notifications/tools/list_changed` pushed directly.
    legacy_peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Approvals and the audit log.
    pub(super) authority: Arc<Authority>,
    /// 2026-07-28 runs waiting for their client's answer.
    pub(super) paused: PausedRuns,
    /// Tools users allowed for the rest of a session.
    pub(super) grants: GrantBook,
}

impl GatewayState {
    pub fn new(
        catalog: Catalog,
        engines: impl Into<crate::assemble::Assembled>,
        description_budget: usize,
        output: OutputFormat,
        authority: Authority,
    ) -> Arc<Self> {
        let crate::assemble::Assembled { executor, helpers } = engines.into();
        let shared = Arc::new(Self {
            catalog,
            executor,
            helpers,
            description_budget,
            output,
            legacy_peers: Mutex::new(Vec::new()),
            authority: Arc::new(authority),
            paused: PausedRuns::default(),
            grants: GrantBook::default(),
        });
        tokio::spawn(forward_tool_changes(Arc::downgrade(&shared)));
        tokio::spawn(expire_sessions(Arc::downgrade(&shared)));
        shared
    }

    /// What one run of `snippet` needs, run or resumed alike: the caller's
    /// tools behind its policy (`context`), its saved helpers around them,
    /// and those the snippet uses, defined first. The one entrance: the
    /// executor gets it whole and never calls back.
    pub(crate) async fn assemble(&self, context: CallContext, snippet: Snippet<'_>) -> Assembly {
        let owner = context.identity.owner;
        let tools: Arc<dyn ToolHost> = Arc::new(GuardedTools::new(
            self.catalog.clone(),
            self.authority.clone(),
            context,
        ));
        crate::helpers::assemble(self.helpers.as_ref(), owner, snippet, tools).await
    }

    pub(super) fn legacy_peers(&self) -> parking_lot::MutexGuard<'_, Vec<Peer<RoleServer>>> {
        self.legacy_peers.lock()
    }
}

/// Tells our clients when the upstream catalog (and so our tool description) changed.
async fn forward_tool_changes(shared: std::sync::Weak<GatewayState>) {
    let Some(mut changes) = shared.upgrade().map(|s| s.catalog.subscribe_changes()) else {
        return;
    };
    loop {
        match changes.recv().await {
            Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let peers: Vec<Peer<RoleServer>> = shared.legacy_peers().clone();
        let mut alive = Vec::new();
        for peer in peers {
            if peer.notify_tool_list_changed().await.is_ok() {
                alive.push(peer);
            }
        }
        *shared.legacy_peers() = alive;
    }
}

async fn expire_sessions(shared: std::sync::Weak<GatewayState>) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.executor.expire_idle();
        if let Some(helpers) = shared.helpers.clone() {
            helpers.refresh_shared(); // the operator's directory changed
        }
        // A question nobody answered: its run takes the call as denied.
        shared
            .paused
            .expire(shared.authority.approval_timeout + Duration::from_secs(5));
        shared.grants.expire(shared.authority.session_idle);
    }
}
