//! One store timeout per call, not one per store operation: a tool call
//! reads the caller's saved helpers, leases and loads its session, and saves
//! and releases it; against a stalled store each of those would wait its own
//! timeout, and the call several. Inside [`one_call`], the store operations
//! share what the longest store timeout allows (the time they waited in vain
//! so far counts against it; answers do not), so a stalled store costs a call
//! at most `CODEMCP_SESSION_STORE_TIMEOUT_MS` in all, and one that answers
//! is asked as often as the call needs.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// What the store operations of one call waited in vain so far.
#[derive(Debug, Default)]
struct Spent {
    /// Time inside store operations that found no answer in time.
    waited: Duration,
    /// The longest timeout of the stores asked so far: the call's budget.
    budget: Duration,
}

tokio::task_local! {
    static CALL: Arc<Mutex<Spent>>;
}

/// Runs `work` as one call: its store operations share one store timeout.
/// Inside another `one_call`, the outer one's budget is shared.
pub async fn one_call<F: Future>(work: F) -> F::Output {
    if CALL.try_with(|_| ()).is_ok() {
        return work.await;
    }
    CALL.scope(Arc::default(), work).await
}

/// How long the next operation of a store whose own timeout is `timeout`
/// may take: its timeout, cut to what the call has left. The budget named
/// in an error comes with it.
pub(crate) fn allowance(timeout: Duration) -> Allowance {
    CALL.try_with(|spent| {
        let mut spent = spent.lock();
        spent.budget = spent.budget.max(timeout);
        let left = spent.budget.saturating_sub(spent.waited);
        Allowance {
            wait: timeout.min(left),
            budget: spent.budget,
        }
    })
    .unwrap_or(Allowance {
        wait: timeout,
        budget: timeout,
    })
}

/// Counts `took`, a wait that found no answer, against the call's budget
/// (outside a call: nothing).
pub(crate) fn spend(took: Duration) {
    let _ = CALL.try_with(|spent| spent.lock().waited += took);
}

/// What one store operation may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Allowance {
    pub wait: Duration,
    /// The call's whole budget (the timeout an error names).
    pub budget: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_shares_the_longest_timeout() {
        let second = Duration::from_secs(1);
        one_call(async {
            assert_eq!(allowance(second / 2).wait, second / 2);
            spend(second / 2);
            let next = allowance(second);
            assert_eq!((next.wait, next.budget), (second / 2, second));
            spend(second / 2);
            assert_eq!(allowance(second).wait, Duration::ZERO);
            // Nested: the same budget.
            one_call(async { assert_eq!(allowance(second).wait, Duration::ZERO) }).await;
        })
        .await;
        // Outside a call every operation has its own timeout.
        spend(second * 10);
        assert_eq!(allowance(second).wait, second);
    }
}
