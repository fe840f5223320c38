//! Interpreter state per MCP session, whatever holds it (a `MontyRepl` in
//! process, a checked-out worker in pool mode): created on first use, one run
//! at a time, dropped when idle too long or when the cap needs room.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex as AsyncMutex;

use crate::SessionId;

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

    /// Whether `id`'s state is here, idle, and passes `test`.
    pub fn idle_state_is(&self, id: SessionId, test: impl FnOnce(&S) -> bool) -> bool {
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

    #[test]
    fn idle_sessions_expire() {
        let table = SessionTable::new(Duration::ZERO, 8);
        drop(table.get_or_create(SessionId(1), || 1));
        table.expire_idle();
        assert_eq!(table.len(), 0);
    }
}
