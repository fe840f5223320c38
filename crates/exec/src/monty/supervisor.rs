//! Waits for one in-process run on behalf of its session (see `runaway.rs`).

use std::sync::Arc;
use std::time::Instant;

use super::driver::Finished;
use super::inprocess::Session;
use super::memory::SessionSlot;
use super::runaway::{Overrun, RunWatch, Runaways};
use super::shared::CEILING_POLL;

pub(super) enum ThreadResult {
    Finished {
        finished: Box<Finished>,
        session_reset: bool,
    },
    /// The caller cancelled; the thread may still be finishing the run.
    Cancelled,
    /// The run overran inside one builtin; its thread was frozen.
    Abandoned(Overrun),
    Panicked(String),
}

/// Waits for one run's thread on behalf of its session: puts the session's
/// state back when the run ends, or gives the run up at its deadline (or when
/// it froze at the memory ceiling), leaving the session fresh and unlocked.
pub(super) struct Supervisor {
    pub(super) guard: tokio::sync::OwnedMutexGuard<Session>,
    /// The version the session's state has once this run is over.
    pub(super) version: u64,
    pub(super) watch: Arc<RunWatch>,
    pub(super) give_up_at: Instant,
    pub(super) runaways: Arc<Runaways>,
    pub(super) budget: usize,
}

pub(super) type ThreadOutcome = Result<Finished, String>;

impl Supervisor {
    pub(super) async fn wait(
        mut self,
        mut rx: tokio::sync::oneshot::Receiver<ThreadOutcome>,
    ) -> ThreadResult {
        let slot = self.guard.slot;
        let overrun = tokio::select! {
            outcome = &mut rx => return self.put_back(outcome.ok()),
            () = tokio::time::sleep_until(self.give_up_at.into()) => Overrun::Time,
            () = ceiling_reached(slot) => Overrun::Memory,
        };
        if !self.watch.abandon(slot) {
            // The run ended just now: take its result after all.
            return self.put_back(rx.await.ok());
        }
        self.runaways
            .record(overrun, slot.live_bytes(), self.budget);
        // The frozen thread keeps its slot's bytes; the session starts over.
        self.guard.repl = None;
        self.guard.slot = SessionSlot::allocate();
        self.guard.version = Some(self.version);
        ThreadResult::Abandoned(overrun)
    }

    fn put_back(mut self, outcome: Option<ThreadOutcome>) -> ThreadResult {
        match outcome {
            Some(Ok(mut finished)) => {
                // A parked run's state is in its dump, not in a session.
                let parked = matches!(finished.ending, super::driver::Ending::Parked(_));
                let session_reset = finished.repl.is_none() && !parked;
                self.guard.repl = finished.repl.take();
                self.guard.version = (!parked).then_some(self.version);
                ThreadResult::Finished {
                    finished: Box::new(finished),
                    session_reset,
                }
            }
            Some(Err(message)) => ThreadResult::Panicked(message),
            None => ThreadResult::Panicked("the interpreter thread vanished".into()),
        }
    }
}

async fn ceiling_reached(slot: SessionSlot) {
    while !slot.hit_ceiling() {
        tokio::time::sleep(CEILING_POLL).await;
    }
}
