//! Timings of one call's stages, logged under the `codemcp::timing` target at
//! trace level (`CODEMCP_LOG=codemcp::timing=trace`; `bench/floor.py` reads
//! them). Nothing here costs more than a cached level check while that target
//! is off.
//!
//! A stage inside one function logs `started.elapsed()` itself. A stage that
//! crosses a library (the bytes read from stdin until rmcp calls the
//! handler, say) is bracketed with a [`Mark`]: the last event on one side
//! sets it, the other side logs the time since. Marks hold the latest event
//! only, so they read right when calls go one at a time, as in the benchmark.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Whether `codemcp::timing` traces are logged.
#[must_use]
pub fn enabled() -> bool {
    tracing::enabled!(target: "codemcp::timing", tracing::Level::TRACE)
}

/// Logs one stage's duration.
pub fn stage(name: &'static str, took: Duration) {
    tracing::trace!(target: "codemcp::timing", us = took.as_micros(), "{name}");
}

/// Logs the time since `started`, when timings are on.
pub fn since(name: &'static str, started: Option<Instant>) {
    if let Some(started) = started {
        stage(name, started.elapsed());
    }
}

/// `Some(now)` when timings are on: the start of a stage timed with [`since`].
#[must_use]
pub fn start() -> Option<Instant> {
    enabled().then(Instant::now)
}

/// The time of the latest event of one kind, or none.
pub struct Mark(AtomicU64);

/// What marks count from (0 means "not set").
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Mark {
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Records now, when timings are on.
    pub fn set(&self) {
        if enabled() {
            let nanos = epoch().elapsed().as_nanos();
            let nanos = u64::try_from(nanos).unwrap_or(u64::MAX).max(1);
            self.0.store(nanos, Ordering::Relaxed);
        }
    }

    /// Logs the time since the recorded event as stage `name`, and clears it.
    pub fn log_since(&self, name: &'static str) {
        if let Some(at) = self.take() {
            stage(name, at.elapsed());
        }
    }

    /// When the recorded event happened, clearing it; `None` if unset.
    pub fn take(&self) -> Option<Instant> {
        let nanos = self.0.swap(0, Ordering::Relaxed);
        (nanos != 0).then(|| epoch() + Duration::from_nanos(nanos))
    }
}

impl Default for Mark {
    fn default() -> Self {
        Self::new()
    }
}

/// stdin gave the bytes of a request.
pub static REQUEST_READ: Mark = Mark::new();
/// The handler has its result; rmcp writes it next.
pub static RESPONSE_READY: Mark = Mark::new();
/// An interpreter thread finished its run and hands it back to the runtime.
pub static RUN_FINISHED: Mark = Mark::new();
/// A request to an upstream left on its stdin.
pub static UPSTREAM_SENT: Mark = Mark::new();
/// An upstream's answer arrived on its stdout.
pub static UPSTREAM_READ: Mark = Mark::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unset_mark_logs_nothing_and_a_mark_is_cleared_when_read() {
        let mark = Mark::new();
        mark.log_since("never set");
        mark.0.store(5, Ordering::Relaxed);
        mark.log_since("set");
        assert_eq!(mark.0.load(Ordering::Relaxed), 0);
        assert!(mark.take().is_none());
    }
}
