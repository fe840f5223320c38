//! Connecting in the background: the gateway answers `initialize` before any
//! upstream finished its handshake, and the first requests that need the
//! tools wait only for servers with no remembered catalog, and only up to
//! `CODEMCP_STARTUP_WAIT_MS` after launch.
//!
//! At most `CODEMCP_STARTUP_CONCURRENCY` handshakes run at once, so dozens of
//! servers on a few cores do not starve each other's handshakes. A server
//! whose first join fails is retried in the background (1 s doubling to
//! 60 s); when it joins with tools (or a purpose) other than those the
//! description showed, clients are told (`tools/list_changed`).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, SemaphorePermit, watch};

use super::{Inner, Upstream, UpstreamLimits, read, write};
use crate::config::Start;

/// How far the first connection of every configured server got.
pub(super) struct Startup {
    launched: Instant,
    /// `CODEMCP_STARTUP_WAIT_MS`: how long after launch requests wait.
    wait: Duration,
    /// Servers whose first connection attempt has not finished.
    pending: watch::Sender<usize>,
    /// Of those, the ones with no remembered catalog: requests wait for these.
    unknown: watch::Sender<usize>,
    /// Handshakes that may run at once.
    permits: Semaphore,
}

/// The first retry waits this long; each next one twice as long, up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// The wait before retry number `failures` (1-based).
fn retry_delay(failures: u32) -> Duration {
    let doubled = RETRY_FIRST.saturating_mul(1 << failures.saturating_sub(1).min(10));
    doubled.min(RETRY_MAX)
}

impl Startup {
    pub(super) fn new(servers: usize, unknown: usize, limits: &UpstreamLimits) -> Self {
        Self {
            launched: Instant::now(),
            wait: limits.startup_wait,
            pending: watch::channel(servers).0,
            unknown: watch::channel(unknown).0,
            permits: Semaphore::new(limits.startup_concurrency.max(1)),
        }
    }

    /// One server's first attempt finished, connected or not (or it will
    /// not be made: a lazy server with a remembered catalog).
    fn one_done(&self, remembered: bool) {
        self.pending.send_modify(|n| *n = n.saturating_sub(1));
        if !remembered {
            self.unknown.send_modify(|n| *n = n.saturating_sub(1));
        }
    }

    async fn permit(&self) -> Option<SemaphorePermit<'_>> {
        // Err only once closed, which this never is.
        self.permits.acquire().await.ok()
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

    /// Every server had its first attempt, remembered or not, or the startup
    /// wait after launch elapsed: what requests piped into stdio wait for
    /// before the gateway starts to count down after stdin ends.
    pub(super) async fn settled(&self) {
        let deadline = tokio::time::Instant::from_std(self.launched + self.wait);
        let mut pending = self.pending.subscribe();
        let _ = tokio::time::timeout_at(deadline, pending.wait_for(|n| *n == 0)).await;
    }

    /// Every server without a remembered catalog had its first attempt, or
    /// the startup wait after launch elapsed, whichever is first.
    pub(super) async fn ready(&self) {
        let deadline = tokio::time::Instant::from_std(self.launched + self.wait);
        let mut unknown = self.unknown.subscribe();
        let _ = tokio::time::timeout_at(deadline, unknown.wait_for(|n| *n == 0)).await;
    }
}

/// Starts one configured server at launch: now, or on first use when it is
/// lazy and its tools are remembered.
pub(super) fn launch(inner: &Arc<Inner>, upstream: Arc<Upstream>) {
    let remembered = read(&upstream.status).remembered;
    if upstream.config.start == Start::Lazy {
        tokio::spawn(super::lazy::stop_when_idle(
            Arc::downgrade(inner),
            upstream.clone(),
            inner.lazy_idle,
        ));
        if remembered {
            inner.startup.one_done(true);
            return;
        }
    }
    let weak = Arc::downgrade(inner);
    tokio::spawn(join(weak, upstream, move |inner: &Inner| {
        inner.startup.one_done(remembered)
    }));
}

/// One server's first join, in the background, retried until it joins or
/// leaves the catalog. `first_done` runs after the first attempt. Its tools
/// join the SDK when it is up, and clients are told.
pub(super) async fn join(
    inner: Weak<Inner>,
    upstream: Arc<Upstream>,
    first_done: impl FnOnce(&Inner) + Send,
) {
    let mut first_done = Some(first_done);
    let mut failures = 0u32;
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        if !strong.is_current(&upstream) {
            return;
        }
        let joined = {
            let _permit = strong.startup.permit().await;
            strong.reconnect(&upstream).await
        };
        if let Some(changed) = joined {
            // The SDK's errors and `search_tools` stop naming it as
            // starting; clients hear of it only if the description changed.
            strong.rebuild_sdk(changed);
        } else {
            failures += 1;
            write(&upstream.status).retrying = true;
            strong.rebuild_sdk(false);
        }
        if let Some(done) = first_done.take() {
            done(&strong);
        }
        if joined.is_some() {
            return;
        }
        let delay = retry_delay(failures);
        let reason = read(&upstream.status).error.clone().unwrap_or_default();
        tracing::warn!(target: "codemcp::upstream", server = %upstream.config.name, attempt = failures, retry_in_s = delay.as_secs_f64(), %reason, "upstream did not join; retrying in the background");
        drop(strong);
        tokio::time::sleep(delay).await;
        if read(&upstream.status).connected {
            // A call connected it meanwhile.
            return;
        }
    }
}

/// Logs, once, which servers missed the startup wait; they join when up.
pub(super) async fn report_startup(inner: Weak<Inner>) {
    let Some(inner) = inner.upgrade() else {
        return;
    };
    inner.startup.ready().await;
    if inner.startup.pending() > 0 {
        let late: Vec<String> = inner.connecting().into_iter().map(|c| c.server).collect();
        let wait_ms = inner.startup.wait_ms();
        tracing::info!(target: "codemcp::upstream", servers = ?late, wait_ms, "startup wait elapsed or catalog remembered; serving without the servers still connecting, which join when up");
    }
}

impl super::Catalog {
    /// Starts every configured server (see [`Catalog::prepare`]); once.
    pub fn launch(&self) {
        if self
            .inner
            .launched
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        for upstream in self.inner.all() {
            launch(&self.inner, upstream);
        }
    }

    /// Starts every configured server after `grace`, unless a client's
    /// request started them sooner ([`Catalog::launch`]).
    pub fn launch_after(&self, grace: Duration) {
        let catalog = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            catalog.launch();
        });
    }

    /// Waits until every server's first connection attempt finished (servers
    /// with a remembered catalog are never waited for), or until
    /// `CODEMCP_STARTUP_WAIT_MS` after launch, whichever comes first.
    /// Requests that need the tools await this; `initialize` does not.
    pub async fn ready(&self) {
        self.inner.startup.ready().await;
    }

    /// Every server had its first attempt (a remembered one too), or the
    /// startup wait is over: unlike [`Catalog::ready`], a call to any server
    /// then no longer waits for its start.
    pub async fn settled(&self) {
        self.inner.startup.settled().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_wait_one_second_doubling_to_a_minute() {
        assert_eq!(retry_delay(1), Duration::from_secs(1));
        assert_eq!(retry_delay(2), Duration::from_secs(2));
        assert_eq!(retry_delay(6), Duration::from_secs(32));
        assert_eq!(retry_delay(7), Duration::from_secs(60));
        assert_eq!(retry_delay(1000), Duration::from_secs(60));
    }
}
