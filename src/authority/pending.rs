//! Runs paused for a 2026-07-28 client's answer (SEP-2322 multi round-trip
//! requests). The run goes on in its own task; when it asks a question, the
//! request waiting on it answers `input_required` with a `requestState` that
//! names the run here, and the client's retry hands the answer over and waits
//! on in its turn.
//!
//! The state is a random handle kept on this gateway, never data the client
//! could alter: single-use, bound to the caller, and dropped after the
//! approval timeout (the run then takes the call as denied). A paused run
//! lives in this gateway's memory, so the retry must reach the same gateway.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmcp::model::ElicitResult;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::guarded::RunEvent;
use codemcp_store::{Handle, Owner};

/// A run's events, and how to stop it.
pub struct Waiting {
    pub events: mpsc::UnboundedReceiver<RunEvent>,
    pub cancel: CancellationToken,
}

struct Paused {
    owner: Owner,
    since: Instant,
    waiting: Waiting,
    answer: oneshot::Sender<ElicitResult>,
}

#[derive(Default)]
pub struct PausedRuns {
    runs: Mutex<HashMap<String, Paused>>,
}

impl PausedRuns {
    /// Keeps `waiting` until the answer comes; returns the `requestState`.
    pub fn pause(
        &self,
        owner: Owner,
        waiting: Waiting,
        answer: oneshot::Sender<ElicitResult>,
    ) -> String {
        let state = Handle::mint().to_string();
        let paused = Paused {
            owner,
            since: Instant::now(),
            waiting,
            answer,
        };
        self.runs.lock().insert(state.clone(), paused);
        state
    }

    /// The run `state` names, for `owner` only, once.
    pub fn resume(
        &self,
        state: &str,
        owner: Owner,
    ) -> Option<(Waiting, oneshot::Sender<ElicitResult>)> {
        let mut runs = self.runs.lock();
        if runs.get(state)?.owner != owner {
            return None; // the same answer as for an unknown state
        }
        let paused = runs.remove(state)?;
        Some((paused.waiting, paused.answer))
    }

    /// Drops runs paused longer than `limit`: each takes its call as denied.
    pub fn expire(&self, limit: Duration) {
        self.runs.lock().retain(|_, p| p.since.elapsed() < limit);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.runs.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paused(runs: &PausedRuns, owner: Owner) -> (String, oneshot::Receiver<ElicitResult>) {
        let (_events_tx, events) = mpsc::unbounded_channel();
        let (answer, answered) = oneshot::channel();
        let waiting = Waiting {
            events,
            cancel: CancellationToken::new(),
        };
        (runs.pause(owner, waiting, answer), answered)
    }

    #[test]
    fn a_request_state_is_single_use_and_bound_to_its_caller() {
        let runs = PausedRuns::default();
        let alice = Owner::of_token(Some("alice-token"));
        let (state, _answered) = paused(&runs, alice);
        assert!(
            runs.resume(&state, Owner::of_token(Some("mallory")))
                .is_none()
        );
        assert!(runs.resume(&state, Owner::anonymous()).is_none());
        assert!(runs.resume("made-up-state", alice).is_none());
        assert!(runs.resume(&state, alice).is_some(), "its owner still can");
        assert!(runs.resume(&state, alice).is_none(), "but only once");
    }

    #[test]
    fn an_expired_question_is_answered_by_its_absence() {
        let runs = PausedRuns::default();
        let (_state, mut answered) = paused(&runs, Owner::anonymous());
        runs.expire(Duration::ZERO);
        assert_eq!(runs.len(), 0);
        assert!(
            answered.try_recv().is_err(),
            "the run sees no answer: denied"
        );
    }
}
