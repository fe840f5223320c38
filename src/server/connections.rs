//! The open HTTP connections, and which give way when there are too many.
//!
//! A connection counts as *unauthenticated* until one of its requests passes
//! the bearer check. Those get at most half the cap, and the oldest of them
//! gives way to a new connection: a crowd of silent or dripping sockets
//! churns among itself while the other half stays for clients with a token.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// Every open connection, oldest first.
pub struct Connections {
    max: usize,
    unauthenticated_max: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next: u64,
    open: BTreeMap<u64, Entry>,
}

struct Entry {
    authenticated: bool,
    evict: CancellationToken,
}

/// One admitted connection: it leaves the table when this is dropped.
pub struct Admitted {
    id: u64,
    connections: Arc<Connections>,
    /// Fires when the connection has to give way.
    pub evicted: CancellationToken,
}

/// Put into every request's extensions, for the bearer check to mark.
#[derive(Clone)]
pub struct ConnectionMark {
    id: u64,
    connections: Arc<Connections>,
}

impl Connections {
    /// At most `max` connections, half of them unauthenticated.
    pub fn new(max: usize) -> Arc<Self> {
        let max = max.max(2);
        Arc::new(Self {
            max,
            unauthenticated_max: max / 2,
            table: Mutex::new(Table::default()),
        })
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Admits a new connection, making room by evicting the oldest
    /// unauthenticated one if needed; `None` when every slot is held by an
    /// authenticated connection.
    pub fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut table = self.table.lock();
        let unauthenticated = table.open.values().filter(|e| !e.authenticated).count();
        let full = unauthenticated >= self.unauthenticated_max || table.open.len() >= self.max;
        if full && !table.evict_oldest_unauthenticated() {
            return None;
        }
        let id = table.next;
        table.next += 1;
        let evicted = CancellationToken::new();
        table.open.insert(
            id,
            Entry {
                authenticated: false,
                evict: evicted.clone(),
            },
        );
        Some(Admitted {
            id,
            connections: self.clone(),
            evicted,
        })
    }

    /// Frees a descriptor when `accept` ran out of them; false when there
    /// is no unauthenticated connection to close.
    pub fn make_room(&self) -> bool {
        self.table.lock().evict_oldest_unauthenticated()
    }

    pub fn open(&self) -> usize {
        self.table.lock().open.len()
    }

    fn authenticated(&self, id: u64) {
        if let Some(entry) = self.table.lock().open.get_mut(&id) {
            entry.authenticated = true;
        }
    }
}

impl Table {
    fn evict_oldest_unauthenticated(&mut self) -> bool {
        let oldest = self
            .open
            .iter()
            .find(|(_, e)| !e.authenticated)
            .map(|(id, _)| *id);
        let Some(entry) = oldest.and_then(|id| self.open.remove(&id)) else {
            return false;
        };
        entry.evict.cancel();
        true
    }
}

impl Admitted {
    pub fn mark(&self) -> ConnectionMark {
        ConnectionMark {
            id: self.id,
            connections: self.connections.clone(),
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.connections.table.lock().open.remove(&self.id);
    }
}

impl ConnectionMark {
    /// The connection sent a request that passed the bearer check.
    pub fn authenticated(&self) {
        self.connections.authenticated(self.id);
    }
}

/// A request that needs no token (none is configured), or passed the check:
/// its connection keeps its place when unauthenticated ones give way.
pub async fn passed(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if let Some(mark) = request.extensions().get::<ConnectionMark>() {
        mark.authenticated();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_unauthenticated_connection_gives_way() {
        let connections = Connections::new(4);
        let first = connections.admit().unwrap();
        let second = connections.admit().unwrap();
        let third = connections.admit().unwrap();
        assert!(first.evicted.is_cancelled());
        assert!(!second.evicted.is_cancelled());
        assert!(!third.evicted.is_cancelled());
    }

    #[test]
    fn authenticated_connections_keep_their_half() {
        let connections = Connections::new(4);
        let a = connections.admit().unwrap();
        a.mark().authenticated();
        let b = connections.admit().unwrap();
        b.mark().authenticated();
        let silent: Vec<_> = (0..10).map(|_| connections.admit().unwrap()).collect();
        assert!(!a.evicted.is_cancelled() && !b.evicted.is_cancelled());
        assert_eq!(
            silent.iter().filter(|c| !c.evicted.is_cancelled()).count(),
            2
        );
        assert_eq!(connections.open(), 4);
        let c = silent.last().unwrap();
        c.mark().authenticated();
        let d = connections.admit().unwrap();
        d.mark().authenticated();
        // Every slot is now held by an authenticated connection.
        assert!(connections.admit().is_none());
        assert!(!connections.make_room());
    }
}
