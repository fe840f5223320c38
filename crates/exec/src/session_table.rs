//! Interpreter state per MCP session, whatever holds it (a `MontyRepl` in
//! process, a checked-out Monty worker in pool mode, a CPython worker):
//! created on first use, checked out by one run at a time, dropped when idle
//! too long or when the cap needs room. The bookkeeping every engine shares.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use crate::error::cancelled;
use crate::{ErrorKind, RunError, SessionId};

/// A session's state as an engine keeps it, asked by [`SessionTable::holds`].
pub trait SessionState {
    /// The version (see `Run::version`) of the live state this session
    /// holds; `None` when it holds none (lost, never made, or parked away).
    fn held_version(&self) -> Option<u64>;
}

struct Entry<S> {
    state: Arc<AsyncMutex<S>>,
    last_used: Instant,
}

pub struct SessionTable<S> {
    entries: Mutex<HashMap<SessionId, Entry<S>>>,
    idle: Duration,
    max: usize,
}

/// Every session is busy and the table is full.
#[derive(Debug, Clone, Copy)]
pub struct TableFull(pub usize);

impl<S> SessionTable<S> {
    pub fn new(idle: Duration, max: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            idle,
            max,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Entry<S>>> {
        // A poisoned map is still a consistent map of Arcs.
        self.entries.lock()
    }

    /// The session's state, made with `create` when it is new. Makes room by
    /// dropping idle-expired sessions, then the least recently used idle one.
    pub fn get_or_create(
        &self,
        id: SessionId,
        create: impl FnOnce() -> S,
    ) -> Result<Arc<AsyncMutex<S>>, TableFull> {
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(&id) {
            entry.last_used = Instant::now();
            return Ok(entry.state.clone());
        }
        let idle = self.idle;
        entries.retain(|_, e| e.last_used.elapsed() < idle);
        if entries.len() >= self.max {
            let victim = entries
                .iter()
                .filter(|(_, e)| Arc::strong_count(&e.state) == 1)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| *id);
            match victim {
                Some(victim) => {
                    entries.remove(&victim);
                }
                None => return Err(TableFull(self.max)),
            }
        }
        let state = Arc::new(AsyncMutex::new(create()));
        entries.insert(
            id,
            Entry {
                state: state.clone(),
                last_used: Instant::now(),
            },
        );
        Ok(state)
    }

    /// [`get_or_create`](Self::get_or_create), waiting until `deadline` for
    /// a busy session to finish when every place is taken: under load a run
    /// queues for a place rather than failing at once.
    pub async fn get_or_wait(
        &self,
        id: SessionId,
        create: impl Fn() -> S,
        deadline: Instant,
    ) -> Result<Arc<AsyncMutex<S>>, TableFull> {
        let mut pause = Duration::from_millis(1);
        loop {
            match self.get_or_create(id, &create) {
                Err(full) if Instant::now() + pause < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(20));
                    let _ = full;
                }
                done => return done,
            }
        }
    }

    /// `id`'s state for one run, made with `fresh` when the session is new:
    /// waits for a place (see [`get_or_wait`](Self::get_or_wait)), then for
    /// the session's previous run to finish, both until `deadline`, and with
    /// `cancel` until the caller gives up. One run at a time per session: a
    /// second concurrent call waits its turn.
    pub async fn check_out(
        &self,
        id: SessionId,
        fresh: impl Fn() -> S,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<OwnedMutexGuard<S>, RunError> {
        let state = self.get_or_wait(id, fresh, deadline).await.map_err(busy)?;
        let given_up = cancel.cancelled();
        tokio::select! {
            guard = state.lock_owned() => Ok(guard),
            () = tokio::time::sleep_until(deadline.into()) => Err(RunError::new(
                ErrorKind::Limit,
                "TimeoutError",
                "timed out waiting for this session's previous run to finish",
            )),
            () = given_up => Err(cancelled()),
        }
    }

    /// Whether `id`'s state is here, idle, and passes `test`.
    fn idle_state_is(&self, id: SessionId, test: impl FnOnce(&S) -> bool) -> bool {
        let state = self.lock().get(&id).map(|e| e.state.clone());
        state.is_some_and(|state| state.try_lock().is_ok_and(|guard| test(&guard)))
    }

    pub fn remove(&self, id: SessionId) {
        self.lock().remove(&id);
    }

    pub fn expire_idle(&self) {
        let idle = self.idle;
        self.lock().retain(|_, e| e.last_used.elapsed() < idle);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

impl<S: SessionState> SessionTable<S> {
    /// Whether `id`'s state is here, idle, and live at `version`: then a run
    /// need not load it from the store.
    pub fn holds(&self, id: SessionId, version: u64) -> bool {
        self.idle_state_is(id, |state| state.held_version() == Some(version))
    }
}

fn busy(full: TableFull) -> RunError {
    RunError::new(
        ErrorKind::Limit,
        "RuntimeError",
        format!(
            "all {} sessions are busy (CODEMCP_MAX_SESSIONS); try again",
            full.0
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_idle_session_makes_room() {
        let table = SessionTable::new(Duration::from_secs(60), 2);
        let a = table.get_or_create(SessionId(1), || "a").ok();
        drop(a);
        let b = table.get_or_create(SessionId(2), || "b").ok();
        let c = table.get_or_create(SessionId(3), || "c");
        assert!(c.is_ok());
        assert_eq!(table.len(), 2);
        // Session 2 is held (busy), session 3 too: nothing can make room.
        let held_c = c.ok();
        assert!(table.get_or_create(SessionId(4), || "d").is_err());
        drop((b, held_c));
    }

    #[tokio::test]
    async fn a_run_waits_for_a_place_until_its_deadline() {
        let table = Arc::new(SessionTable::new(Duration::from_secs(60), 1));
        let held = table.get_or_create(SessionId(1), || 1).ok();
        let soon = Instant::now() + Duration::from_millis(30);
        assert!(table.get_or_wait(SessionId(2), || 2, soon).await.is_err());
        let freed = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(held);
        };
        let later = Instant::now() + Duration::from_secs(5);
        let (waited, ()) = tokio::join!(table.get_or_wait(SessionId(2), || 2, later), freed);
        assert!(waited.is_ok(), "the place freed within the deadline");
    }

    #[tokio::test]
    async fn a_second_run_of_a_session_waits_its_turn_until_its_deadline_or_cancel() {
        let table = SessionTable::new(Duration::from_secs(60), 4);
        let far = Instant::now() + Duration::from_secs(60);
        let first = table
            .check_out(SessionId(1), || 1, far, &CancellationToken::new())
            .await;
        assert!(first.is_ok());
        let soon = Instant::now() + Duration::from_millis(30);
        let waited = table
            .check_out(SessionId(1), || 1, soon, &CancellationToken::new())
            .await;
        assert_eq!(
            waited.err().map(|e| e.exc_type),
            Some("TimeoutError".to_owned())
        );
        let cancel = CancellationToken::new();
        cancel.cancel();
        let given_up = table.check_out(SessionId(1), || 1, far, &cancel).await;
        assert_eq!(given_up.err().map(|e| e.kind), Some(ErrorKind::Cancelled));
        drop(first);
        assert!(
            table
                .check_out(SessionId(1), || 1, far, &CancellationToken::new())
                .await
                .is_ok()
        );
    }

    struct Held(Option<u64>);

    impl SessionState for Held {
        fn held_version(&self) -> Option<u64> {
            self.0
        }
    }

    #[tokio::test]
    async fn only_an_idle_session_holding_that_version_is_held() {
        let table = SessionTable::new(Duration::from_secs(60), 4);
        drop(table.get_or_create(SessionId(1), || Held(Some(3))));
        drop(table.get_or_create(SessionId(2), || Held(None)));
        assert!(table.holds(SessionId(1), 3));
        assert!(!table.holds(SessionId(1), 4), "another version");
        assert!(!table.holds(SessionId(2), 3), "no live state");
        assert!(!table.holds(SessionId(9), 3), "no such session");
        let far = Instant::now() + Duration::from_secs(60);
        let busy = table
            .check_out(SessionId(1), || Held(None), far, &CancellationToken::new())
            .await;
        assert!(!table.holds(SessionId(1), 3), "a run has it checked out");
        drop(busy);
    }

    #[test]
    fn idle_sessions_expire() {
        let table = SessionTable::new(Duration::ZERO, 8);
        drop(table.get_or_create(SessionId(1), || 1));
        table.expire_idle();
        assert_eq!(table.len(), 0);
    }
}
