//! The rules every store follows, written once: sealing, size limits, lease
//! waits, version fencing and sweeping. Backends only move bytes and do the
//! compare-and-set their medium offers.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::time::Instant;

use super::budget;
use super::handle::random_token;
use super::key::SealKey;
use super::orphans::Orphans;
use super::seal::{self, max_record_len};
use super::{Handle, Lease, Owner, SessionStore, Snapshot, StoreError, StoreLimits, Stored};

/// What a backend found under a handle.
pub(crate) enum Fetched {
    Absent,
    /// Present but longer than the caller's bound: not fetched.
    TooLong(usize),
    /// The record, and the version the store holds for the session (kept
    /// beside the record, written with it).
    Record(Vec<u8>, u64),
}

/// How long a written record lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// The store's idle time, renewed by every load.
    Idle,
    /// This long from the write, loads or not.
    Fixed(Duration),
}

/// What a store medium must offer. Idle and lease times are the backend's
/// own (given at construction), so each applies them with its own clock.
pub(crate) trait Backend: Send + Sync + 'static {
    fn kind(&self) -> &'static str;
    fn describe(&self) -> String;
    fn probe(&self) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The live record under `handle` if at most `max_len` bytes; refreshes
    /// its idle timer.
    fn fetch<'a>(
        &'a self,
        handle: &'a Handle,
        max_len: usize,
    ) -> BoxFuture<'a, Result<Fetched, StoreError>>;
    /// Takes the lease with `token` if nobody holds it; returns the live
    /// record's version (0 if none), or `None` if the lease is held.
    fn try_lock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>>;
    /// Writes `record` as version `fence + 1`, living for `expiry`, if the
    /// live version is still `fence` and the lease is `token`'s or nobody's.
    /// False otherwise.
    fn put<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// [`put`](Self::put), then [`unlock`](Self::unlock) (also when the put
    /// was refused), in one round trip where the medium allows.
    fn put_and_unlock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let written = self.put(handle, token, fence, record, expiry).await?;
            self.unlock(handle, token).await?;
            Ok(written)
        }
        .boxed()
    }
    /// Frees the lease if `token` still holds it.
    fn unlock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Deletes the record (a lease on it stays until released or expired).
    fn delete<'a>(&'a self, handle: &'a Handle) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Drops expired records and leases; `None` if the medium expires its own.
    fn sweep(&self) -> Option<BoxFuture<'_, Result<usize, StoreError>>> {
        None
    }
}

/// Where a [`Lease`] dropped unreleased goes: the store that issued it.
pub(crate) trait Reclaim: Send + Sync {
    fn abandoned(&self, handle: Handle, token: u128);
}

/// A backend behind the rules.
pub(crate) struct Sealed<B> {
    backend: B,
    key: SealKey,
    limits: StoreLimits,
    orphans: Orphans,
    /// Itself, for the leases it issues and the tasks that free them.
    me: Weak<Self>,
}

/// First and longest pause between two tries of a held lease.
const FIRST_RETRY: Duration = Duration::from_millis(2);
const LONGEST_RETRY: Duration = Duration::from_millis(50);

impl<B: Backend> Sealed<B> {
    pub(crate) fn start(backend: B, key: SealKey, limits: StoreLimits) -> Arc<dyn SessionStore> {
        let store = Arc::new_cyclic(|me| Self {
            backend,
            key,
            limits,
            orphans: Orphans::default(),
            me: me.clone(),
        });
        if store.backend.sweep().is_some() {
            spawn_sweeper(Arc::downgrade(&store), sweep_interval(&limits));
        }
        store
    }

    /// `call` within the store timeout, and within what the call it is part
    /// of has left of one (see [`budget`]): a paused or unreachable store
    /// costs each call at most that long, and says so.
    async fn bounded<T>(
        &self,
        call: BoxFuture<'_, Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let allowed = budget::allowance(self.limits.call_timeout);
        let started = Instant::now();
        let done = if allowed.wait.is_zero() {
            // The call waited its whole budget already: the store is not asked.
            None
        } else {
            tokio::time::timeout(allowed.wait, call).await.ok()
        };
        if matches!(done, None | Some(Err(StoreError::TimedOut { .. }))) {
            // Only waits that found no answer count: a store that answers,
            // however many times a call asks it, is not stalled.
            budget::spend(started.elapsed());
        }
        match done {
            Some(done) => done,
            None => {
                let store = self.backend.describe();
                tracing::warn!(target: "codemcp::session", %store, after_ms = allowed.budget.as_millis(), "session store did not answer in time");
                Err(StoreError::TimedOut {
                    store,
                    after: allowed.budget,
                })
            }
        }
    }

    fn lease(&self, handle: &Handle, token: u128, fence: u64) -> Lease {
        let reclaim: Weak<dyn Reclaim> = self.me.clone();
        Lease {
            handle: handle.clone(),
            token,
            fence,
            reclaim: Some(reclaim),
        }
    }

    /// Frees `handle`'s orphaned leases; whether there were any.
    async fn free_orphans(&self, handle: &Handle) -> bool {
        let tokens = self.orphans.of(handle);
        for &token in &tokens {
            if let Err(e) = self.bounded(self.backend.unlock(handle, token)).await {
                tracing::debug!(target: "codemcp::session", error = %e, "orphaned lease not freed yet");
            }
        }
        !tokens.is_empty()
    }

    async fn load_sealed(&self, handle: &Handle) -> Result<Option<Stored>, StoreError> {
        let max = max_record_len(self.limits.max_snapshot_bytes);
        let record = match self.bounded(self.backend.fetch(handle, max)).await? {
            Fetched::Absent => return Ok(None),
            Fetched::TooLong(size) => {
                return Err(self.refuse(handle, seal::Reason::TooLarge { size, max }));
            }
            Fetched::Record(record, version) => (record, version),
        };
        let (record, version) = record;
        let stored = seal::unseal(&self.key, handle, &record, self.limits.max_snapshot_bytes)
            .map_err(|reason| self.refuse(handle, reason))?;
        if stored.version != version {
            let reason = seal::Reason::Stale {
                record: stored.version,
                store: version,
            };
            return Err(self.refuse(handle, reason));
        }
        Ok(Some(stored))
    }

    fn refuse(&self, handle: &Handle, reason: seal::Reason) -> StoreError {
        tracing::warn!(store = self.backend.kind(), handle = handle.short(), %reason, "stored session refused");
        StoreError::Rejected(reason)
    }

    async fn acquire_within(&self, handle: &Handle, wait: Duration) -> Result<Lease, StoreError> {
        let deadline = Instant::now() + wait;
        let token = random_token();
        let mut pause = FIRST_RETRY;
        let mut orphans_freed = false;
        loop {
            match self.bounded(self.backend.try_lock(handle, token)).await {
                Ok(Some(fence)) => {
                    self.orphans.forget(handle);
                    return Ok(self.lease(handle, token, fence));
                }
                Ok(None) => {}
                Err(e) => {
                    // It may still be taken: a paused store runs the request
                    // when it resumes.
                    self.abandoned(handle.clone(), token);
                    return Err(e);
                }
            }
            // Held, perhaps by a lease of ours that nobody will release.
            if !orphans_freed {
                orphans_freed = true;
                if self.free_orphans(handle).await {
                    continue;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(StoreError::Busy);
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(LONGEST_RETRY);
        }
    }

    /// Seals and writes `snapshot`; with `release`, frees the lease in the
    /// same round trip (also when the save fails).
    async fn save_sealed(
        &self,
        lease: &mut Lease,
        owner: &Owner,
        snapshot: Snapshot,
        release: bool,
        expiry: Expiry,
    ) -> Result<u64, StoreError> {
        let max = self.limits.max_snapshot_bytes;
        if snapshot.payload.len() > max {
            if release {
                self.bounded(self.backend.unlock(&lease.handle, lease.token))
                    .await?;
                lease.disarm();
            }
            return Err(StoreError::TooLarge {
                size: snapshot.payload.len(),
                max,
            });
        }
        let version = lease.fence + 1;
        let sealing = std::time::Instant::now();
        let record = seal::seal(&self.key, &lease.handle, owner, version, &snapshot);
        tracing::trace!(target: "codemcp::timing", us = sealing.elapsed().as_micros(), bytes = record.len(), "session sealed");
        let (handle, token, fence) = (&lease.handle, lease.token, lease.fence);
        let written = if release {
            let written = self
                .bounded(
                    self.backend
                        .put_and_unlock(handle, token, fence, record, expiry),
                )
                .await?;
            lease.disarm();
            written
        } else {
            self.bounded(self.backend.put(handle, token, fence, record, expiry))
                .await?
        };
        if !written {
            tracing::info!(
                store = self.backend.kind(),
                handle = lease.handle.short(),
                "save refused: lease lost"
            );
            return Err(StoreError::LeaseLost);
        }
        lease.fence = version;
        Ok(version)
    }
}

impl<B: Backend> SessionStore for Sealed<B> {
    fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    fn describe(&self) -> String {
        self.backend.describe()
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        self.bounded(self.backend.probe()).boxed()
    }

    fn load<'a>(&'a self, handle: &'a Handle) -> BoxFuture<'a, Result<Option<Stored>, StoreError>> {
        self.load_sealed(handle).boxed()
    }

    fn acquire<'a>(
        &'a self,
        handle: &'a Handle,
        wait: Duration,
    ) -> BoxFuture<'a, Result<Lease, StoreError>> {
        self.acquire_within(handle, wait).boxed()
    }

    fn save<'a>(
        &'a self,
        lease: &'a mut Lease,
        owner: &'a Owner,
        snapshot: Snapshot,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.save_sealed(lease, owner, snapshot, false, Expiry::Idle)
            .boxed()
    }

    fn save_and_release<'a>(
        &'a self,
        mut lease: Lease,
        owner: &'a Owner,
        snapshot: Snapshot,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        async move {
            self.save_sealed(&mut lease, owner, snapshot, true, Expiry::Idle)
                .await
        }
        .boxed()
    }

    fn save_and_release_for<'a>(
        &'a self,
        mut lease: Lease,
        owner: &'a Owner,
        snapshot: Snapshot,
        lifetime: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        let expiry = Expiry::Fixed(lifetime.max(Duration::from_millis(1)));
        async move {
            self.save_sealed(&mut lease, owner, snapshot, true, expiry)
                .await
        }
        .boxed()
    }

    fn release(&self, mut lease: Lease) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            let freed = self
                .bounded(self.backend.unlock(&lease.handle, lease.token))
                .await;
            if freed.is_ok() {
                lease.disarm();
            }
            freed
        }
        .boxed()
    }

    fn remove<'a>(&'a self, handle: &'a Handle) -> BoxFuture<'a, Result<(), StoreError>> {
        self.bounded(self.backend.delete(handle)).boxed()
    }
}

impl<B: Backend> Reclaim for Sealed<B> {
    /// Remembers the lease, and frees it in the background now (a paused
    /// store runs the request when it resumes, after any it still holds).
    fn abandoned(&self, handle: Handle, token: u128) {
        self.orphans.add(handle.clone(), token);
        let (Ok(runtime), Some(store)) = (tokio::runtime::Handle::try_current(), self.me.upgrade())
        else {
            return;
        };
        runtime.spawn(async move {
            if let Err(e) = store.bounded(store.backend.unlock(&handle, token)).await {
                tracing::debug!(target: "codemcp::session", error = %e, "abandoned lease not freed yet; the next acquire retries");
            }
        });
    }
}

/// Often enough that expired sessions do not pile up for long, rarely
/// enough to cost nothing when idle times are hours.
fn sweep_interval(limits: &StoreLimits) -> Duration {
    (limits.idle.min(limits.lease_ttl) / 4)
        .clamp(Duration::from_millis(100), Duration::from_secs(60))
}

/// Sweeps until the store is dropped. Without a runtime (a plain `open` in a
/// sync test) backends still ignore expired rows; they just stay on disk.
fn spawn_sweeper<B: Backend>(store: Weak<Sealed<B>>, every: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::debug!("no Tokio runtime: expired sessions are not swept");
        return;
    };
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(store) = store.upgrade() else { return };
            let Some(sweep) = store.backend.sweep() else { return };
            match sweep.await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(store = store.backend.kind(), swept = n, "expired sessions removed"),
                Err(e) => tracing::warn!(store = store.backend.kind(), error = %e, "sweeping expired sessions failed"),
            }
        }
    });
}
