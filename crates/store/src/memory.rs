//! Sessions in this process's memory: gone with the process, but with the
//! same expiry, lease and sealing rules as the shared stores.

use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::time::Instant;

use futures::FutureExt;
use futures::future::{BoxFuture, ready};

use super::sealed::{Backend, Expiry, Fetched};
use super::{Handle, StoreError, StoreLimits};

pub(crate) struct MemoryBackend {
    limits: StoreLimits,
    slots: Mutex<HashMap<Handle, Slot>>,
}

#[derive(Default)]
struct Slot {
    record: Option<Record>,
    lease: Option<(u128, Instant)>,
}

struct Record {
    bytes: Vec<u8>,
    version: u64,
    expires: Instant,
    /// Loads do not renew it (written with [`Expiry::Fixed`]).
    fixed: bool,
}

impl Slot {
    fn live_record(&mut self, now: Instant) -> Option<&mut Record> {
        self.record.as_mut().filter(|r| r.expires > now)
    }

    fn live_version(&mut self, now: Instant) -> u64 {
        self.live_record(now).map_or(0, |r| r.version)
    }

    fn lease_holder(&self, now: Instant) -> Option<u128> {
        self.lease
            .filter(|(_, until)| *until > now)
            .map(|(token, _)| token)
    }

    fn is_dead(&mut self, now: Instant) -> bool {
        self.live_record(now).is_none() && self.lease_holder(now).is_none()
    }
}

impl MemoryBackend {
    pub(crate) fn new(limits: StoreLimits) -> Self {
        Self {
            limits,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// A panic elsewhere while holding the lock leaves the map consistent
    /// (every change is one assignment), so a poisoned lock is still usable.
    fn slots(&self) -> MutexGuard<'_, HashMap<Handle, Slot>> {
        self.slots.lock()
    }

    fn fetch_now(&self, handle: &Handle, max_len: usize) -> Fetched {
        let now = Instant::now();
        let mut slots = self.slots();
        let Some(record) = slots.get_mut(handle).and_then(|s| s.live_record(now)) else {
            return Fetched::Absent;
        };
        if !record.fixed {
            record.expires = now + self.limits.idle;
        }
        if record.bytes.len() > max_len {
            return Fetched::TooLong(record.bytes.len());
        }
        Fetched::Record(record.bytes.clone(), record.version)
    }

    fn try_lock_now(&self, handle: &Handle, token: u128) -> Option<u64> {
        let now = Instant::now();
        let mut slots = self.slots();
        let slot = slots.entry(handle.clone()).or_default();
        if slot.lease_holder(now).is_some() {
            return None;
        }
        slot.lease = Some((token, now + self.limits.lease_ttl));
        Some(slot.live_version(now))
    }

    fn put_now(
        &self,
        handle: &Handle,
        token: u128,
        fence: u64,
        bytes: Vec<u8>,
        expiry: Expiry,
    ) -> bool {
        let now = Instant::now();
        let mut slots = self.slots();
        let slot = slots.entry(handle.clone()).or_default();
        let lease_ok = slot.lease_holder(now).is_none_or(|holder| holder == token);
        if !lease_ok || slot.live_version(now) != fence {
            return false;
        }
        let (lives, fixed) = match expiry {
            Expiry::Idle => (self.limits.idle, false),
            Expiry::Fixed(lifetime) => (lifetime, true),
        };
        slot.record = Some(Record {
            bytes,
            version: fence + 1,
            expires: now + lives,
            fixed,
        });
        true
    }

    fn unlock_now(&self, handle: &Handle, token: u128) {
        let now = Instant::now();
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(handle) else {
            return;
        };
        if slot.lease.is_some_and(|(held, _)| held == token) {
            slot.lease = None;
        }
        if slot.is_dead(now) {
            slots.remove(handle);
        }
    }

    fn delete_now(&self, handle: &Handle) {
        let now = Instant::now();
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(handle) else {
            return;
        };
        slot.record = None;
        if slot.is_dead(now) {
            slots.remove(handle);
        }
    }

    fn sweep_now(&self) -> usize {
        let now = Instant::now();
        let mut slots = self.slots();
        let before = slots.len();
        slots.retain(|_, slot| !slot.is_dead(now));
        before - slots.len()
    }
}

/// Memory answers at once: a future that is already complete.
fn done<T: Send + 'static>(value: T) -> BoxFuture<'static, Result<T, StoreError>> {
    ready(Ok(value)).boxed()
}

impl Backend for MemoryBackend {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn describe(&self) -> String {
        "memory (this process only; sessions end with it)".into()
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        done(())
    }

    fn fetch<'a>(
        &'a self,
        handle: &'a Handle,
        max_len: usize,
    ) -> BoxFuture<'a, Result<Fetched, StoreError>> {
        done(self.fetch_now(handle, max_len))
    }

    fn try_lock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        done(self.try_lock_now(handle, token))
    }

    fn put<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        done(self.put_now(handle, token, fence, record, expiry))
    }

    fn unlock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.unlock_now(handle, token);
        done(())
    }

    fn delete<'a>(&'a self, handle: &'a Handle) -> BoxFuture<'a, Result<(), StoreError>> {
        self.delete_now(handle);
        done(())
    }

    fn sweep(&self) -> Option<BoxFuture<'_, Result<usize, StoreError>>> {
        Some(done(self.sweep_now()))
    }
}
