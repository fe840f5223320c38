//! Connecting in the background: the gateway answers `initialize` before any
//! upstream finished its handshake, and the first requests that need the
//! tools wait for them only up to `CODEMCP_STARTUP_WAIT_MS` after launch.

use std::time::{Duration, Instant};

use tokio::sync::watch;

/// How far the first connection of every configured server got.
pub(super) struct Startup {
    launched: Instant,
    /// `CODEMCP_STARTUP_WAIT_MS`: how long after launch requests wait.
    wait: Duration,
    /// Servers whose first connection attempt has not finished.
    pending: watch::Sender<usize>,
}

impl Startup {
    pub(super) fn new(servers: usize, wait: Duration) -> Self {
        Self {
            launched: Instant::now(),
            wait,
            pending: watch::channel(servers).0,
        }
    }

    /// One server's first attempt finished, connected or not.
    pub(super) fn one_done(&self) {
        self.pending.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Whether requests stopped waiting for the servers still connecting.
    /// Before that, no tool list has been answered, so a change needs no
    /// `tools/list_changed`: the first answer will include it.
    pub(super) fn wait_elapsed(&self) -> bool {
        self.launched.elapsed() >= self.wait
    }

    pub(super) fn wait_ms(&self) -> u128 {
        self.wait.as_millis()
    }

    pub(super) fn pending(&self) -> usize {
        *self.pending.borrow()
    }

    /// Every server's first attempt finished (each is bounded by its
    /// handshake timeout).
    pub(super) async fn all_done(&self) {
        let mut pending = self.pending.subscribe();
        // Err only when the sender is gone, and it lives as long as `self`.
        let _ = pending.wait_for(|n| *n == 0).await;
    }

    /// All done, or the startup wait after launch elapsed, whichever is first.
    pub(super) async fn ready(&self) {
        let deadline = tokio::time::Instant::from_std(self.launched + self.wait);
        let _ = tokio::time::timeout_at(deadline, self.all_done()).await;
    }
}
