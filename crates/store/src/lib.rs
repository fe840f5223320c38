//! Session snapshots kept outside the gateway process, so a session survives
//! stateless MCP clients, gateway restarts, and several gateways sharing one
//! Redis.
//!
//! # Model
//! A session is named by an opaque [`Handle`]. Its state is one [`Snapshot`]
//! (a Monty dump or CPython's JSON variables) kept under that handle, with the
//! [`Owner`] that wrote it and a version that every save increments. A run that
//! wants to change a session first takes a [`Lease`] on the handle
//! ([`SessionStore::acquire`]), then [`SessionStore::save`]s and
//! [`SessionStore::release`]s it.
//!
//! Saves are fenced: a save succeeds only when the stored version is still
//! the one seen when the lease was taken *and* nobody else holds the lease
//! now. So a holder whose lease ran out (it was slow, or paused) can still
//! save if nobody touched the session meanwhile, but never overwrites a newer
//! holder's work ([`StoreError::LeaseLost`]). A holder that crashed frees the
//! handle after [`StoreLimits::lease_ttl`] (in the `file` store at once when
//! its process died: leases there are file locks the kernel frees). A session untouched (no load, no
//! save) for [`StoreLimits::idle`] disappears.
//!
//! # Sealing
//! Every record is authenticated with HMAC-SHA256 under a [`SealKey`] and the
//! handle it is stored under (see [`seal`] for the layout). Whoever can write
//! the database or Redis can delete sessions or put back an *older* record of
//! the same handle (a replay), but cannot forge or alter one, nor move one to
//! another handle; no stored byte reaches the Monty loader or a JSON parser
//! before its tag verified. Records are authenticated, not encrypted: whoever
//! can read the store can read the session variables.
//!
//! # What the caller must do
//! - Check ownership: [`Stored::owner`] must equal the caller's
//!   [`Owner::of_token`] before the snapshot is used or a save replaces it. The
//!   store records owners but does not judge them.
//! - Treat a handle as a secret capability (an anonymous session is open to
//!   whoever knows its handle). Logs here show only its first characters.
//! - Pick [`StoreLimits::lease_ttl`] above the longest run (wall-time limit
//!   plus margin): leases are not renewed while a run goes on.
//! - Give every gateway that shares a file or Redis the same key
//!   ([`SealKey::from_setting`]); a memory store can use
//!   [`SealKey::ephemeral`].
//!
//! [`SessionStore::save`] takes `&mut Lease` because a save moves the lease's
//! fence to the version it wrote, so the same holder can save again.
//!
//! # Stores
//! `memory` (one process), `file` (SQLite, shared by processes on one host,
//! survives `kill -9`), `redis` (shared by hosts). All three share one
//! implementation of the rules above ([`sealed::Sealed`]); each only moves
//! bytes ([`sealed::Backend`]).

mod budget;
mod handle;
mod key;
mod memory;
mod orphans;
mod os_lease;
mod redis;
pub mod seal;
mod sealed;
mod spec;
mod sqlite;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

pub use self::budget::one_call;
pub use self::handle::random_bytes;
pub use self::handle::{Handle, Owner};
pub use self::key::{SealKey, state_dir};
pub use self::seal::Reason;
pub use self::spec::StoreSpec;

/// Which engine wrote a snapshot's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotKind {
    /// Bytes of a `monty` dump.
    Monty,
    /// CPython's session variables as JSON.
    Cpython,
    /// A Monty run paused at a call that waits for the user's approval: a
    /// `Parked` header (`codemcp::exec::Parked`) and the suspended run's dump.
    Parked,
}

/// A session's state as one engine wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub kind: SnapshotKind,
    pub payload: Vec<u8>,
}

impl Snapshot {
    /// The state of a session that starts fresh.
    pub fn fresh() -> Self {
        Self::monty(Vec::new())
    }

    pub fn monty(payload: Vec<u8>) -> Self {
        Self {
            kind: SnapshotKind::Monty,
            payload,
        }
    }

    /// A CPython session's variables, as a JSON object.
    pub fn cpython(globals: &Map<String, Value>) -> Self {
        Self {
            kind: SnapshotKind::Cpython,
            payload: serde_json::to_vec(globals).unwrap_or_else(|_| b"{}".to_vec()),
        }
    }

    /// The variables of a CPython snapshot; `None` for any other.
    pub fn cpython_globals(&self) -> Option<Map<String, Value>> {
        match self.kind {
            SnapshotKind::Cpython => serde_json::from_slice(&self.payload).ok(),
            SnapshotKind::Monty | SnapshotKind::Parked => None,
        }
    }

    /// A Monty run suspended at a call (the engine's dump only).
    pub fn parked(dump: Vec<u8>) -> Self {
        Self {
            kind: SnapshotKind::Parked,
            payload: dump,
        }
    }
}

/// What [`SessionStore::load`] finds under a handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub snapshot: Snapshot,
    pub owner: Owner,
    /// 1 after the first save, then one more per save.
    pub version: u64,
}

/// Proof that we hold a session's handle. Not `Clone`: one holder at a time.
/// Dropping it without [`SessionStore::release`] hands it back to the store
/// (see `Drop`); a holder that crashed frees it after [`StoreLimits::lease_ttl`].
#[derive(Debug)]
pub struct Lease {
    handle: Handle,
    token: u128,
    /// The stored version a save must still find (0: no record).
    fence: u64,
    /// Told when the lease is dropped unreleased, so the store that issued
    /// it frees it (`None` once released).
    reclaim: Option<std::sync::Weak<dyn sealed::Reclaim>>,
}

/// A lease nobody will release (its run ended, failed or was cancelled, or
/// its release did not reach the store) is handed back to its store, which
/// frees it now or at its next acquire of the handle, so it never keeps the
/// session busy for the lease time.
impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(store) = self.reclaim.take().and_then(|w| w.upgrade()) {
            store.abandoned(self.handle.clone(), self.token);
        }
    }
}

impl Lease {
    /// Released: nothing to hand back when dropped.
    fn disarm(&mut self) {
        self.reclaim = None;
    }

    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The version this lease's next save builds on.
    pub fn version(&self) -> u64 {
        self.fence
    }
}

/// The default of [`StoreLimits::call_timeout`].
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// How long sessions and leases live, and how big a snapshot may be.
#[derive(Debug, Clone, Copy)]
pub struct StoreLimits {
    /// A session neither loaded nor saved for this long is gone.
    pub idle: Duration,
    pub max_snapshot_bytes: usize,
    /// A lease not released within this long frees itself (crashed holder).
    pub lease_ttl: Duration,
    /// The longest one store operation may take before it fails with
    /// [`StoreError::TimedOut`] (`CODEMCP_SESSION_STORE_TIMEOUT_MS`).
    pub call_timeout: Duration,
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(24 * 3600),
            max_snapshot_bytes: 64 << 20,
            lease_ttl: Duration::from_secs(60),
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }
}

/// Why a store call failed. Every variant leaves the store usable; only the
/// call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backing database or Redis did not answer (in time). Retry later;
    /// the session, if any, is unchanged.
    #[error("session store unavailable: {0}")]
    Unavailable(String),
    /// The store did not answer within [`StoreLimits::call_timeout`] (paused,
    /// overloaded or unreachable). Retry later; the session is unchanged.
    #[error("session store did not answer within {} ({store})", seconds(*after))]
    TimedOut { store: String, after: Duration },
    /// Another run holds this session; try again when it has finished.
    #[error("session is busy: another run holds it")]
    Busy,
    /// Our lease ran out and the session changed meanwhile; this run's state
    /// was not saved.
    #[error("session changed while this run held it (lease expired); state not saved")]
    LeaseLost,
    /// The snapshot is bigger than the configured limit; it was not saved.
    #[error("session snapshot is {size} bytes, over the {max}-byte limit; state not saved")]
    TooLarge { size: usize, max: usize },
    /// A stored record failed its checks and was ignored.
    #[error("stored session refused: {0}")]
    Rejected(Reason),
    /// The store could not be set up as configured.
    #[error("session store configuration: {0}")]
    Config(String),
}

/// `5 s`, `0.2 s`: how long a timeout was, in an error message.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Where sessions live. The futures borrow the store only; every call is
/// bounded in time by [`StoreLimits::call_timeout`], and the calls made
/// inside one [`one_call`] by one such timeout together.
pub trait SessionStore: Send + Sync + 'static {
    /// `"memory"`, `"file"` or `"redis"`.
    fn kind(&self) -> &'static str;
    /// One line for logs and `codemcp check` (never a password).
    fn describe(&self) -> String;
    /// Checks that the store answers (for `codemcp check` and start-up logs).
    fn probe(&self) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The session under `handle`, if any; refreshes its idle timer.
    fn load<'a>(&'a self, handle: &'a Handle) -> BoxFuture<'a, Result<Option<Stored>, StoreError>>;
    /// Takes the handle's lease, waiting up to `wait` ([`StoreError::Busy`] after).
    fn acquire<'a>(
        &'a self,
        handle: &'a Handle,
        wait: Duration,
    ) -> BoxFuture<'a, Result<Lease, StoreError>>;
    /// Replaces the session's snapshot; returns its new version, which `lease`
    /// then builds on.
    fn save<'a>(
        &'a self,
        lease: &'a mut Lease,
        owner: &'a Owner,
        snapshot: Snapshot,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// [`save`](Self::save) and [`release`](Self::release) in one round trip
    /// where the medium allows; the lease is released also when the save fails.
    fn save_and_release<'a>(
        &'a self,
        lease: Lease,
        owner: &'a Owner,
        snapshot: Snapshot,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// [`save_and_release`](Self::save_and_release) of a record that is gone
    /// `lifetime` after this save, however often it is loaded meanwhile (a
    /// parked run, kept only as long as its answer may come).
    fn save_and_release_for<'a>(
        &'a self,
        lease: Lease,
        owner: &'a Owner,
        snapshot: Snapshot,
        lifetime: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// Frees the handle for the next run (no-op if the lease already expired).
    fn release(&self, lease: Lease) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Deletes the session. A run holding it then fails to save.
    fn remove<'a>(&'a self, handle: &'a Handle) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// Opens the store `spec` names. Needs no connection yet: a Redis that is
/// down shows up as [`StoreError::Unavailable`] on first use (try
/// [`SessionStore::probe`]). Call inside a Tokio runtime: memory and file
/// stores start a task there that sweeps expired sessions.
pub fn open(
    spec: &StoreSpec,
    key: SealKey,
    limits: StoreLimits,
) -> Result<Arc<dyn SessionStore>, StoreError> {
    check_limits(&limits)?;
    Ok(match spec {
        StoreSpec::Memory => sealed::Sealed::start(memory::MemoryBackend::new(limits), key, limits),
        StoreSpec::File(path) => {
            sealed::Sealed::start(sqlite::SqliteBackend::open(path, limits)?, key, limits)
        }
        StoreSpec::Redis(url) => {
            sealed::Sealed::start(redis::RedisBackend::new(url, limits)?, key, limits)
        }
    })
}

fn check_limits(limits: &StoreLimits) -> Result<(), StoreError> {
    let one_ms = Duration::from_millis(1);
    if limits.idle < one_ms || limits.lease_ttl < one_ms || limits.call_timeout < one_ms {
        return Err(StoreError::Config(
            "session idle time, lease time and store timeout must be at least 1 ms".into(),
        ));
    }
    if limits.max_snapshot_bytes > seal::MAX_PAYLOAD {
        return Err(StoreError::Config(format!(
            "max session snapshot size {} is over the supported {} bytes",
            limits.max_snapshot_bytes,
            seal::MAX_PAYLOAD
        )));
    }
    Ok(())
}
