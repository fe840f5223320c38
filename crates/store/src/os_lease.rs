//! Session leases of the `file` store as byte-range locks on a file next to
//! the database (Linux open-file-description locks): taking and freeing one
//! is a system call, where a lease row in SQLite is a write transaction on
//! every run. The kernel frees a dead process's locks, and each open of the
//! file has its own, so two stores in one process exclude each other too.
//!
//! A lease still expires after the lease time, as the store's contract says
//! (a holder that dropped its lease unreleased): this process then frees it,
//! at the next lease call or sweep. Processes that still keep leases in the
//! database (an older codemcp on the same file) do not see these locks; the
//! version fence of every save still refuses a write that would lose theirs.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, fcntl};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

/// Byte offsets stay below `i64::MAX`, the largest lock offset.
const SLOT_MASK: u64 = (1 << 62) - 1;

pub(crate) struct OsLeases {
    file: File,
    ttl: Duration,
    /// Slots this open holds: the kernel does not stop one open description
    /// from locking a byte twice, so this does.
    held: Mutex<HashMap<u64, Held>>,
}

struct Held {
    token: u128,
    since: Instant,
}

/// What a save may do under [`OsLeases::hold_for_save`].
pub(crate) enum SaveHold {
    /// The lease is `token`'s and stays so.
    Ours,
    /// Nobody held it (`token`'s expired unclaimed): locked for this save only.
    Borrowed,
    /// Someone else holds it.
    Taken,
}

impl OsLeases {
    /// Opens (creating 0600) `PATH-leases` beside the database at `path`.
    pub(crate) fn open(path: &Path, ttl: Duration) -> std::io::Result<Self> {
        let mut name = path.as_os_str().to_owned();
        name.push("-leases");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(PathBuf::from(name))?;
        // Proves the kernel offers these locks before the store relies on them.
        lock(&file, SLOT_MASK, LockKind::Write)?;
        lock(&file, SLOT_MASK, LockKind::Unlock)?;
        Ok(Self {
            file,
            ttl,
            held: Mutex::default(),
        })
    }

    /// Takes `handle`'s lease for `token`; false if another holder has it.
    pub(crate) fn try_lock(&self, handle: &str, token: u128) -> std::io::Result<bool> {
        let slot = slot(handle);
        let mut held = self.held.lock();
        self.expire(&mut held);
        if held.contains_key(&slot) || !self.try_slot(slot)? {
            return Ok(false);
        }
        let since = Instant::now();
        held.insert(slot, Held { token, since });
        Ok(true)
    }

    /// Frees `handle`'s lease if `token` holds it.
    pub(crate) fn unlock(&self, handle: &str, token: u128) -> std::io::Result<()> {
        let slot = slot(handle);
        let mut held = self.held.lock();
        if held.get(&slot).is_some_and(|h| h.token == token) {
            held.remove(&slot);
            lock(&self.file, slot, LockKind::Unlock)?;
        }
        Ok(())
    }

    /// Whether `token` may save now: its lease still holds, or it expired and
    /// nobody took it since (then the slot is locked until [`Self::end_save`]).
    pub(crate) fn hold_for_save(&self, handle: &str, token: u128) -> std::io::Result<SaveHold> {
        let slot = slot(handle);
        let mut held = self.held.lock();
        Ok(match held.get(&slot) {
            Some(h) if h.token == token => SaveHold::Ours,
            Some(_) => SaveHold::Taken,
            None if self.try_slot(slot)? => {
                let since = Instant::now();
                held.insert(slot, Held { token, since });
                SaveHold::Borrowed
            }
            None => SaveHold::Taken,
        })
    }

    /// Frees a slot [`Self::hold_for_save`] borrowed.
    pub(crate) fn end_save(
        &self,
        handle: &str,
        token: u128,
        hold: &SaveHold,
    ) -> std::io::Result<()> {
        match hold {
            SaveHold::Borrowed => self.unlock(handle, token),
            SaveHold::Ours | SaveHold::Taken => Ok(()),
        }
    }

    /// Frees leases held past the lease time.
    pub(crate) fn sweep(&self) -> std::io::Result<()> {
        self.expire(&mut self.held.lock());
        Ok(())
    }

    fn expire(&self, held: &mut HashMap<u64, Held>) {
        held.retain(|&slot, h| {
            if h.since.elapsed() < self.ttl {
                return true;
            }
            if let Err(e) = lock(&self.file, slot, LockKind::Unlock) {
                tracing::warn!(target: "codemcp::session", error = %e, "freeing an expired lease failed");
            }
            false
        });
    }

    /// Locks `slot` without waiting; false if another open holds it.
    fn try_slot(&self, slot: u64) -> std::io::Result<bool> {
        match lock(&self.file, slot, LockKind::Write) {
            Ok(()) => Ok(true),
            Err(e) if is_held_elsewhere(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The byte a handle's lease locks. SHA-256, so every build and process
/// agrees; two handles meeting on one byte only wait for each other.
fn slot(handle: &str) -> u64 {
    let digest = Sha256::digest(handle.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first) & SLOT_MASK
}

#[derive(Clone, Copy)]
enum LockKind {
    Write,
    Unlock,
}

fn lock(file: &File, slot: u64, kind: LockKind) -> std::io::Result<()> {
    let l_type = match kind {
        LockKind::Write => libc::F_WRLCK,
        LockKind::Unlock => libc::F_UNLCK,
    };
    let range = libc::flock {
        l_type: l_type as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: slot as libc::off_t,
        l_len: 1,
        l_pid: 0,
    };
    fcntl(file, FcntlArg::F_OFD_SETLK(&range))
        .map(drop)
        .map_err(std::io::Error::from)
}

fn is_held_elsewhere(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error().map(Errno::from_raw),
        Some(Errno::EAGAIN | Errno::EACCES)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &tempfile::TempDir, ttl_ms: u64) -> OsLeases {
        OsLeases::open(&dir.path().join("s.db"), Duration::from_millis(ttl_ms)).expect("open")
    }

    #[test]
    fn two_opens_exclude_each_other() {
        let dir = tempfile::tempdir().expect("dir");
        let (a, b) = (open(&dir, 60_000), open(&dir, 60_000));
        assert!(a.try_lock("h", 1).expect("a"));
        assert!(!a.try_lock("h", 2).expect("same open, other token"));
        assert!(!b.try_lock("h", 3).expect("other open"));
        assert!(b.try_lock("other", 3).expect("another handle"));
        a.unlock("h", 2).expect("a stranger's unlock");
        assert!(!b.try_lock("h", 3).expect("still held"));
        a.unlock("h", 1).expect("unlock");
        assert!(b.try_lock("h", 3).expect("free again"));
    }

    #[test]
    fn an_unreleased_lease_expires() {
        let dir = tempfile::tempdir().expect("dir");
        let (a, b) = (open(&dir, 50), open(&dir, 50));
        assert!(a.try_lock("h", 1).expect("a"));
        std::thread::sleep(Duration::from_millis(80));
        assert!(!b.try_lock("h", 2).expect("a has not freed it yet"));
        a.sweep().expect("sweep");
        assert!(b.try_lock("h", 2).expect("freed"));
        assert!(matches!(
            a.hold_for_save("h", 1).expect("hold"),
            SaveHold::Taken
        ));
    }

    #[test]
    fn a_dropped_open_frees_its_leases() {
        let dir = tempfile::tempdir().expect("dir");
        let a = open(&dir, 60_000);
        assert!(a.try_lock("h", 1).expect("a"));
        drop(a);
        assert!(open(&dir, 60_000).try_lock("h", 2).expect("freed"));
    }
}
