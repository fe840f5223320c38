//! The memory limit of a self-worker (`codemcp subprocess`): the whole process
//! is one session, so every block any thread allocates counts, and an
//! allocation that would pass the session's hard limit ends the process with
//! `OOM_EXIT_CODE`, which monty-pool reports as `MemoryError`. This is what
//! `monty_alloc::LimitedAllocator` does for the PyPI worker; codemcp keeps its
//! own global allocator (`memory.rs`) and switches it to this accounting.
//!
//! Blocks allocated before the switch carry slot 0, so their frees refund
//! nothing and the counter cannot underflow.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use monty_types::{BASELINE_MEMORY, LIVE_MEMORY, OOM_EXIT_CODE};

/// Set once, when the process becomes a worker; never cleared.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Live bytes past which the worker ends; `usize::MAX` until a session arms it.
static HARD_LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// From now on every allocation of every thread counts.
#[cfg_attr(not(feature = "self-worker"), allow(dead_code))]
pub fn start_counting() {
    COUNTING.store(true, Ordering::SeqCst);
}

#[inline]
pub fn counting() -> bool {
    COUNTING.load(Ordering::Relaxed)
}

/// Applies the hard limit of the session the worker now holds (`None`: none),
/// relative to the leanest the worker has been at an arming point, as
/// `monty_alloc::set_hard_limit` does.
#[cfg_attr(not(feature = "self-worker"), allow(dead_code))]
pub fn arm(budget: Option<usize>) {
    let live = LIVE_MEMORY.load(Ordering::Relaxed);
    let baseline = BASELINE_MEMORY.fetch_min(live, Ordering::Relaxed).min(live);
    let limit = budget.map_or(usize::MAX, |bytes| baseline.saturating_add(bytes));
    HARD_LIMIT.store(limit, Ordering::Relaxed);
}

/// Ends the worker before an allocation of `growth` bytes passes the limit.
#[inline]
pub fn before_growth(growth: usize) {
    let live = LIVE_MEMORY.load(Ordering::Relaxed).saturating_add(growth);
    if live > HARD_LIMIT.load(Ordering::Relaxed) {
        end(growth, "exceeds the memory limit");
    }
}

/// The system refused an allocation: end as out of memory, not by abort.
pub fn allocation_failed(bytes: usize) -> ! {
    end(bytes, "failed")
}

/// Reports why and exits; never panics, whose machinery allocates.
#[cold]
#[inline(never)]
fn end(bytes: usize, why: &str) -> ! {
    static REPORTING: AtomicBool = AtomicBool::new(false);
    // Lifted first: writing to stderr may allocate, and must not land here again.
    HARD_LIMIT.store(usize::MAX, Ordering::Relaxed);
    if !REPORTING.swap(true, Ordering::Relaxed) {
        let _ = writeln!(
            std::io::stderr(),
            "codemcp monty worker: allocation of {bytes} bytes {why}"
        );
    }
    std::process::exit(OOM_EXIT_CODE)
}
