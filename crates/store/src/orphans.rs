//! Leases this store took that nobody will release: a lease dropped
//! unreleased, a release or save that did not reach the store, and a lease
//! request that timed out (a paused Redis runs it when it resumes, so the
//! lease appears after its requester gave up). Each is freed in the
//! background when the store answers, and again at the next acquire of its
//! handle that finds the handle held, so a stall never leaves a session busy
//! for the lease time.

use std::collections::VecDeque;

use parking_lot::Mutex;

use super::Handle;

/// Most orphans remembered; past this the oldest are forgotten (their
/// leases then expire by themselves after the lease time).
const MAX_ORPHANS: usize = 4096;

#[derive(Default)]
pub(crate) struct Orphans {
    leases: Mutex<VecDeque<(Handle, u128)>>,
}

impl Orphans {
    pub(crate) fn add(&self, handle: Handle, token: u128) {
        let mut leases = self.leases.lock();
        if leases.len() >= MAX_ORPHANS {
            leases.pop_front();
        }
        leases.push_back((handle, token));
    }

    /// The tokens of `handle`'s orphaned leases.
    pub(crate) fn of(&self, handle: &Handle) -> Vec<u128> {
        let leases = self.leases.lock();
        leases
            .iter()
            .filter(|(h, _)| h == handle)
            .map(|&(_, token)| token)
            .collect()
    }

    /// Forgets `handle`'s orphans: this store holds its lease now, so none of
    /// them can.
    pub(crate) fn forget(&self, handle: &Handle) {
        let mut leases = self.leases.lock();
        if !leases.is_empty() {
            leases.retain(|(h, _)| h != handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orphans_are_kept_per_handle_and_bounded() {
        let orphans = Orphans::default();
        let (a, b) = (Handle::mint(), Handle::mint());
        orphans.add(a.clone(), 1);
        orphans.add(b.clone(), 2);
        orphans.add(a.clone(), 3);
        assert_eq!(orphans.of(&a), vec![1, 3]);
        orphans.forget(&a);
        assert!(orphans.of(&a).is_empty());
        assert_eq!(orphans.of(&b), vec![2]);
        for token in 0..(MAX_ORPHANS as u128 + 10) {
            orphans.add(a.clone(), token);
        }
        assert_eq!(orphans.leases.lock().len(), MAX_ORPHANS);
        assert!(orphans.of(&b).is_empty(), "the oldest went first");
    }
}
