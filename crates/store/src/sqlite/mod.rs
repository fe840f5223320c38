//! Sessions in one SQLite file (the `file` store): shared by every process
//! that opens it, durable once a call returned (WAL; a `kill -9` loses
//! nothing committed). Every compare-and-set is one statement or one
//! transaction, so processes never see half of another's change.
//!
//! Sealed records live in their own table: leases, loads (which refresh the
//! idle timer) and releases then rewrite a small row, never the snapshot.

use parking_lot::Mutex;
use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use rusqlite::{Connection, TransactionBehavior, named_params};

use super::key::create_private_dir_for;
use super::os_lease::{OsLeases, SaveHold};
use super::sealed::{Backend, Expiry, Fetched};
use super::{Handle, StoreError, StoreLimits};

mod rows;

use rows::{
    Put, drop_if_dead, fetch_row, live_version, lock_row, now_ms, put_row, shrink, sweep_batch,
    unlock_row,
};

/// Waits this long for another process's write before giving up: our
/// statements are tiny, so a longer wait means something is wrong.
const BUSY_TIMEOUT: Duration = Duration::from_millis(200);
/// Rows deleted per sweep statement, so a sweep never holds the write lock long.
const SWEEP_BATCH: i64 = 500;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    handle      TEXT PRIMARY KEY NOT NULL,
    version     INTEGER NOT NULL DEFAULT 0,   -- 0: no record (only leased, or removed)
    expires_at  INTEGER NOT NULL DEFAULT 0,   -- ms since the epoch
    lease_token BLOB,
    lease_until INTEGER NOT NULL DEFAULT 0    -- ms since the epoch
);
CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at);
CREATE TABLE IF NOT EXISTS records (
    handle TEXT PRIMARY KEY NOT NULL REFERENCES sessions (handle) ON DELETE CASCADE,
    record BLOB NOT NULL
);
";

/// Adds `sessions.fixed` (1: a record whose expiry loads do not renew) to a
/// file an older codemcp created. Another process may add it at the same
/// time: its presence afterwards is what counts.
fn add_fixed_column(conn: &Connection) -> rusqlite::Result<()> {
    let present = |conn: &Connection| conn.prepare("SELECT fixed FROM sessions LIMIT 0").is_ok();
    if present(conn) {
        return Ok(());
    }
    let added =
        conn.execute_batch("ALTER TABLE sessions ADD COLUMN fixed INTEGER NOT NULL DEFAULT 0");
    match added {
        Err(_) if present(conn) => Ok(()),
        done => done,
    }
}

/// The version of a row's record, or 0 if it has none that is alive.
const LIVE_VERSION: &str = "(CASE WHEN expires_at > :now THEN version ELSE 0 END)";

pub(crate) struct SqliteBackend {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    limits: StoreLimits,
    /// Written since the last checkpoint.
    dirty: Arc<std::sync::atomic::AtomicBool>,
    /// Leases as file locks; `None` where the kernel does not offer them,
    /// and leases are rows then.
    leases: Option<Arc<OsLeases>>,
}

impl SqliteBackend {
    pub(crate) fn open(path: &Path, limits: StoreLimits) -> Result<Self, StoreError> {
        let fail = |e: &dyn std::fmt::Display| {
            StoreError::Config(format!("session file {}: {e}", path.display()))
        };
        create_private_dir_for(path).map_err(|e| fail(&e))?;
        // Created 0600 before SQLite sees it: snapshots are readable data, and
        // SQLite gives its WAL files the same mode as the database.
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| fail(&e))?;
        let conn = Connection::open(path).map_err(|e| fail(&e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(&e))?;
        // auto_vacuum only takes effect before the first table exists; it lets
        // a sweep give pages back, so the file shrinks when sessions expire.
        conn.execute_batch(
            "PRAGMA auto_vacuum = INCREMENTAL;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA foreign_keys = ON;
             PRAGMA journal_size_limit = 1048576;
             PRAGMA wal_autocheckpoint = 0;",
        )
        .map_err(|e| fail(&e))?;
        conn.execute_batch(SCHEMA).map_err(|e| fail(&e))?;
        add_fixed_column(&conn).map_err(|e| fail(&e))?;
        let leases = match OsLeases::open(path, limits.lease_ttl) {
            Ok(leases) => Some(Arc::new(leases)),
            Err(e) => {
                tracing::info!(target: "codemcp::session", error = %e, "no file locks for session leases; they are database rows");
                None
            }
        };
        let backend = Self {
            path: path.to_owned(),
            conn: Arc::new(Mutex::new(conn)),
            limits,
            dirty: Arc::default(),
            leases,
        };
        checkpoint_now_and_then(&backend);
        // One bounded sweep now; the store's sweeper does the rest.
        backend
            .with_conn(|conn| sweep_batch(conn, now_ms()))
            .map_err(|e| fail(&e))?;
        Ok(backend)
    }

    fn with_conn<T>(
        &self,
        job: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        job(&self.conn.lock())
    }

    /// `put`, and with `unlock` the lease freed whatever the put did.
    fn write(
        &self,
        handle: &Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
        unlock: bool,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        let Some(leases) = &self.leases else {
            return self.write_row(handle, token, fence, record, expiry, unlock);
        };
        let (leases, key) = (Arc::clone(leases), handle.as_str().to_owned());
        let hold = match leases.hold_for_save(&key, token) {
            Ok(hold) => hold,
            Err(e) => return futures::future::ready(Err(self.unavailable(&e))).boxed(),
        };
        let saving = match hold {
            SaveHold::Taken => futures::future::ready(Ok(false)).boxed(),
            SaveHold::Ours | SaveHold::Borrowed => {
                self.write_row(handle, token, fence, record, expiry, false)
            }
        };
        let path = self.path.clone();
        async move {
            let written = saving.await;
            let freed = leases.end_save(&key, token, &hold).and_then(|()| {
                if unlock {
                    leases.unlock(&key, token)
                } else {
                    Ok(())
                }
            });
            let written = written?;
            freed.map_err(|e| unavailable(&path, &e))?;
            Ok(written)
        }
        .boxed()
    }

    fn unavailable(&self, e: &dyn std::fmt::Display) -> StoreError {
        unavailable(&self.path, e)
    }

    /// `put` with the lease a row, and with `unlock` freed in the same
    /// blocking call.
    fn write_row(
        &self,
        handle: &Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
        unlock: bool,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        // A fence past i64 matches no stored version: the write is refused.
        let fence = i64::try_from(fence).ok();
        let put = Put {
            handle: handle.as_str().to_owned(),
            token,
            fence: fence.unwrap_or(-1),
            record,
            lives: Self::ms(match expiry {
                Expiry::Idle => self.limits.idle,
                Expiry::Fixed(lifetime) => lifetime,
            }),
            fixed: matches!(expiry, Expiry::Fixed(_)),
        };
        self.quick(move |conn, now| {
            let written = put.fence >= 0 && put_row(conn, &put, now, unlock)?;
            // A write that went in freed the lease in its own transaction.
            if unlock && !written {
                unlock_row(conn, &put.handle, token, now)?;
            }
            Ok(written)
        })
    }

    /// Runs `job` here and now when the connection is free and no other
    /// process holds the write lock: a hot-path statement takes tens of µs,
    /// less than handing it to another thread and back. Otherwise, or when
    /// SQLite answers busy, on the blocking pool (where it may wait).
    /// Every job is safe to run again after a busy answer: its writes are one
    /// transaction, or idempotent. Checkpoints, the one slow thing a commit
    /// could do, run on the blocking pool (see `checkpoint_now_and_then`).
    fn quick<T: Send + 'static>(
        &self,
        job: impl Fn(&mut Connection, i64) -> rusqlite::Result<T> + Send + Sync + 'static,
    ) -> BoxFuture<'static, Result<T, StoreError>> {
        if let Some(mut conn) = self.conn.try_lock()
            && conn.busy_timeout(Duration::ZERO).is_ok()
        {
            let done = job(&mut conn, now_ms());
            let restored = conn.busy_timeout(BUSY_TIMEOUT);
            drop(conn);
            self.dirty.store(true, std::sync::atomic::Ordering::Relaxed);
            match done {
                Err(e) if is_busy(&e) => {}
                done => {
                    let path = self.path.clone();
                    let done = restored
                        .and(done)
                        .map_err(|e| StoreError::Unavailable(format!("{}: {e}", path.display())));
                    return futures::future::ready(done).boxed();
                }
            }
        }
        self.blocking(job)
    }

    /// Runs `job` on the blocking pool: SQLite calls may wait on the disk or
    /// on another process's lock.
    fn blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection, i64) -> rusqlite::Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, StoreError>> {
        let conn = Arc::clone(&self.conn);
        let path = self.path.clone();
        let dirty = self.dirty.clone();
        async move {
            let ran = tokio::task::spawn_blocking(move || {
                // A panic while holding the lock cannot leave a statement half
                // done (SQLite rolls it back), so a poisoned lock is usable.
                let mut conn = conn.lock();
                dirty.store(true, std::sync::atomic::Ordering::Relaxed);
                job(&mut conn, now_ms())
            })
            .await;
            match ran {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(e)) => Err(StoreError::Unavailable(format!("{}: {e}", path.display()))),
                Err(e) => Err(StoreError::Unavailable(format!("{}: {e}", path.display()))),
            }
        }
        .boxed()
    }

    fn ms(d: Duration) -> i64 {
        i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
    }
}

fn unavailable(path: &Path, e: &dyn std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("{}: {e}", path.display()))
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// How often the WAL is copied into the database. Commits never do it
/// themselves (`wal_autocheckpoint = 0`), since it syncs the disk and some
/// commits run on the async runtime's threads.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// Checkpoints the WAL on the blocking pool while anything was written, for
/// as long as the backend lives (needs a Tokio runtime; without one the WAL
/// is checkpointed when the last connection closes).
fn checkpoint_now_and_then(backend: &SqliteBackend) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let (conn, dirty) = (Arc::downgrade(&backend.conn), backend.dirty.clone());
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
        loop {
            tick.tick().await;
            let Some(conn) = conn.upgrade() else { return };
            if !dirty.swap(false, std::sync::atomic::Ordering::Relaxed) {
                continue;
            }
            let done = tokio::task::spawn_blocking(move || {
                conn.lock()
                    .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            })
            .await;
            if let Ok(Err(e)) = done {
                tracing::debug!(target: "codemcp::session", error = %e, "WAL checkpoint failed; the next one retries");
                dirty.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
}

impl Backend for SqliteBackend {
    fn kind(&self) -> &'static str {
        "file"
    }

    fn describe(&self) -> String {
        format!("file (SQLite) {}", self.path.display())
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        self.blocking(|conn, _| conn.query_row("SELECT count(*) FROM sessions", [], |_| Ok(())))
    }

    fn fetch<'a>(
        &'a self,
        handle: &'a Handle,
        max_len: usize,
    ) -> BoxFuture<'a, Result<Fetched, StoreError>> {
        let (handle, idle) = (handle.as_str().to_owned(), Self::ms(self.limits.idle));
        self.quick(move |conn, now| fetch_row(conn, &handle, max_len, now, idle))
    }

    fn try_lock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        let (handle, ttl) = (handle.as_str().to_owned(), Self::ms(self.limits.lease_ttl));
        let Some(leases) = &self.leases else {
            return self.quick(move |conn, now| lock_row(conn, &handle, token, now, ttl));
        };
        match leases.try_lock(&handle, token) {
            Ok(true) => {}
            Ok(false) => return futures::future::ready(Ok(None)).boxed(),
            Err(e) => return futures::future::ready(Err(self.unavailable(&e))).boxed(),
        }
        let (leases, key) = (Arc::clone(leases), handle.clone());
        let reading = self.quick(move |conn, now| live_version(conn, &handle, now));
        async move {
            let version = reading.await;
            if version.is_err() {
                // Not left held for the lease time by a store that is down.
                let _ = leases.unlock(&key, token);
            }
            version.map(Some)
        }
        .boxed()
    }

    fn put<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.write(handle, token, fence, record, expiry, false)
    }

    fn put_and_unlock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.write(handle, token, fence, record, expiry, true)
    }

    fn unlock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let handle = handle.as_str().to_owned();
        let Some(leases) = &self.leases else {
            return self.quick(move |conn, now| unlock_row(conn, &handle, token, now));
        };
        let freed = leases
            .unlock(&handle, token)
            .map_err(|e| self.unavailable(&e));
        futures::future::ready(freed).boxed()
    }

    fn delete<'a>(&'a self, handle: &'a Handle) -> BoxFuture<'a, Result<(), StoreError>> {
        let handle = handle.as_str().to_owned();
        self.blocking(move |conn, now| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let sql = "UPDATE sessions SET version = 0, expires_at = 0 WHERE handle = :handle";
            tx.prepare_cached(sql)?
                .execute(named_params! { ":handle": handle })?;
            let sql = "DELETE FROM records WHERE handle = :handle";
            tx.prepare_cached(sql)?
                .execute(named_params! { ":handle": handle })?;
            drop_if_dead(&tx, &handle, now)?;
            tx.commit()
        })
    }

    fn sweep(&self) -> Option<BoxFuture<'_, Result<usize, StoreError>>> {
        Some(
            async move {
                if let Some(leases) = &self.leases {
                    leases.sweep().map_err(|e| self.unavailable(&e))?;
                }
                let mut total = 0;
                loop {
                    // One batch per blocking job, so saves get the lock in between.
                    let n = self.blocking(|conn, now| sweep_batch(conn, now)).await?;
                    total += n;
                    if n < SWEEP_BATCH as usize {
                        break;
                    }
                }
                if total > 0 {
                    self.blocking(|conn, _| shrink(conn)).await?;
                }
                Ok(total)
            }
            .boxed(),
        )
    }
}
