//! Each principal's helpers as one sealed record of the session store:
//! memory, the SQLite file or Redis, authenticated with the session key like
//! a session snapshot (so an altered record is refused), under a handle that
//! only the key and the principal give (so no client can name it as a session).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::record::Library;
use codemcp_exec::{Snapshot, SnapshotKind};
use codemcp_store::{Handle, Owner, SealKey, SessionStore, StoreError, StoreLimits, StoreSpec};

/// "Never" expire: a century, well within every store's clock arithmetic.
const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// How long a save waits for another save of the same principal.
const SAVE_WAIT: Duration = Duration::from_secs(5);

/// Why a principal's helpers could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("saved helpers: {0}")]
    Store(#[from] StoreError),
    #[error("saved helpers: the stored record is not a helpers record ({0})")]
    Malformed(String),
    #[error("saved helpers: the stored record belongs to another principal")]
    NotYours,
}

/// Where helper records live.
pub struct LibraryStore {
    store: Arc<dyn SessionStore>,
    key: SealKey,
}

impl LibraryStore {
    /// A store of helper records on `spec` (the session store's), sealed
    /// with `key`; records expire after `idle` unused (`None`: never).
    ///
    /// # Errors
    /// The store cannot be set up as configured.
    pub fn open(
        spec: &StoreSpec,
        key: SealKey,
        idle: Option<Duration>,
        max_bytes: usize,
        call_timeout: Duration,
    ) -> Result<Self, StoreError> {
        let limits = StoreLimits {
            idle: idle.unwrap_or(NEVER),
            max_snapshot_bytes: max_bytes,
            lease_ttl: Duration::from_secs(30),
            call_timeout,
        };
        let store = codemcp_store::open(spec, key.clone(), limits)?;
        Ok(Self { store, key })
    }

    pub fn describe(&self) -> String {
        self.store.describe()
    }

    /// The record's handle: a MAC of the principal under the session key.
    #[allow(clippy::expect_used)] // HMAC accepts every key length
    pub fn handle(&self, owner: &Owner) -> Handle {
        let mut mac = Hmac::<Sha256>::new_from_slice(self.key.bytes())
            .expect("HMAC takes keys of any length");
        mac.update(b"codemcp helpers record\0");
        match owner.digest() {
            Some(digest) => {
                mac.update(&[1]);
                mac.update(digest);
            }
            None => mac.update(&[0]),
        }
        let tag = mac.finalize().into_bytes();
        let text = URL_SAFE_NO_PAD.encode(&tag[..16]);
        Handle::parse(&text).unwrap_or_else(Handle::mint)
    }

    /// `owner`'s helpers (none yet: empty).
    pub async fn load(&self, owner: &Owner) -> Result<Library, LibraryError> {
        let handle = self.handle(owner);
        match self.store.load(&handle).await? {
            None => Ok(Library::default()),
            Some(stored) => decode(owner, &stored),
        }
    }

    /// Applies `change` to `owner`'s helpers and saves them, one change at a
    /// time per principal (the record's lease).
    pub async fn update<T, E>(
        &self,
        owner: &Owner,
        change: impl FnOnce(&mut Library) -> Result<T, E>,
    ) -> Result<Result<T, E>, LibraryError> {
        let handle = self.handle(owner);
        let lease = self.store.acquire(&handle, SAVE_WAIT).await?;
        let mut library = match self.store.load(&handle).await {
            Ok(None) => Library::default(),
            Ok(Some(stored)) => decode(owner, &stored)?,
            Err(e) => {
                let _ = self.store.release(lease).await;
                return Err(e.into());
            }
        };
        let done = match change(&mut library) {
            Ok(done) => done,
            Err(refused) => {
                let _ = self.store.release(lease).await;
                return Ok(Err(refused));
            }
        };
        let snapshot = Snapshot {
            kind: SnapshotKind::Cpython,
            payload: library.to_bytes(),
        };
        self.store.save_and_release(lease, owner, snapshot).await?;
        Ok(Ok(done))
    }

    /// The record's size in the store as sealed: payload plus header and tag.
    pub fn sealed_len(library: &Library) -> usize {
        library.to_bytes().len() + codemcp_store::seal::MAX_HEADER + 32
    }
}

fn decode(owner: &Owner, stored: &codemcp_store::Stored) -> Result<Library, LibraryError> {
    if stored.owner != *owner {
        return Err(LibraryError::NotYours);
    }
    if stored.snapshot.kind != SnapshotKind::Cpython {
        return Err(LibraryError::Malformed("wrong kind".into()));
    }
    Library::from_bytes(&stored.snapshot.payload)
        .map_err(|e| LibraryError::Malformed(e.to_string()))
}
