//! One MCP session's own Python session, and the stop of its runs when the
//! client leaves.

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::GatewayState;
use codemcp_exec::Executor;
use codemcp_store::Owner;

/// One MCP session's own state: the session handle runs use when they name
/// none (stdio, `Mcp-Session-Id`), and what stops its runs when it ends.
pub(super) struct SessionGuard {
    pub(super) shared: std::sync::Weak<GatewayState>,
    /// The handle of the Python session that calls naming none run in. Its
    /// state outlives the MCP session (in the session store, until it expires).
    pub(super) implicit: Mutex<Option<String>>,
    /// Cancelled when the client is gone: every run of the session stops.
    pub(super) closing: CancellationToken,
    pub(super) _counted: codemcp_base::metrics::Held,
}

impl SessionGuard {
    /// The implicit session's handle, minted on first use so that calls
    /// made at once share it (and wait for each other) instead of each
    /// starting a session of its own.
    pub(super) fn implicit(&self, executor: &Executor, owner: Owner) -> String {
        self.implicit
            .lock()
            .get_or_insert_with(|| executor.new_session(owner))
            .clone()
    }

    /// The client left: the engine lets go of the implicit session (a pool
    /// worker, an interpreter); its state stays in the store for its handle.
    pub(super) fn release(&self) {
        let handle = self.implicit.lock().clone();
        if let (Some(handle), Some(shared)) = (handle, self.shared.upgrade()) {
            shared.executor.release_session(&handle);
        }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.closing.cancel();
        self.release();
    }
}
