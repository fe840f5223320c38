//! `"start": "lazy"` servers: started by their first call (served until then
//! from the remembered catalog) and stopped again after `CODEMCP_LAZY_IDLE_MS`
//! without a call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Inner, Upstream, write};

/// Counts one call under way on a server while it lives.
pub(super) struct InUse<'a>(&'a AtomicUsize);

impl<'a> InUse<'a> {
    pub(super) fn new(calls: &'a AtomicUsize) -> Self {
        calls.fetch_add(1, Ordering::AcqRel);
        Self(calls)
    }
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Stops `upstream`'s process whenever it was idle for `idle`, for as long
/// as it is in the catalog. The next call starts it again.
pub(super) async fn stop_when_idle(inner: Weak<Inner>, upstream: Arc<Upstream>, idle: Duration) {
    let tick = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    loop {
        tokio::time::sleep(tick).await;
        let Some(strong) = inner.upgrade() else {
            return;
        };
        if !strong.is_current(&upstream) {
            return;
        }
        drop(strong);
        let busy = upstream.calls.load(Ordering::Acquire) > 0;
        if busy || upstream.last_used.lock().elapsed() < idle {
            continue;
        }
        let mut conn = upstream.conn.lock().await;
        // Checked again under the lock: a call may have started meanwhile.
        if upstream.calls.load(Ordering::Acquire) > 0 || conn.client.is_none() {
            continue;
        }
        conn.client = None;
        drop(conn);
        write(&upstream.status).connected = false;
        tracing::info!(target: "codemcp::upstream", server = %upstream.config.name, idle_s = idle.as_secs_f64(), "lazy upstream stopped after being idle");
    }
}
