//! Helpers that outlive the session: agent code keeps a function it wrote
//! with `save_helper(fn)`, and every later session of the same principal
//! (after a restart, on another gateway sharing the store) can call it by
//! name. The operator can publish helpers to everyone from a directory.
//!
//! - `extract`: what a saved helper carries, and why a function is refused;
//! - `record`: a helper's versions, and one principal's helpers as a record;
//! - `store`: that record sealed in the session store, keyed by principal;
//! - `prelude`: the helpers a snippet uses, defined before it runs;
//! - `host`: the run's tools with the helper functions added;
//! - `shared`: the operator's directory.
//!
//! A helper is ordinary code of the snippet that calls it: its tool calls
//! pass the caller's policy, approvals and audit like any other.

pub mod cli;
pub mod extract;
mod host;
pub mod prelude;
pub mod record;
pub mod shared;
pub mod skills;
pub mod store;

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;

pub use self::extract::Refusal;
pub use self::host::{HelperHost, Snippet, assemble};
pub use self::record::{Helper, Library};
pub use self::store::{LibraryError, LibraryStore};
pub use codemcp_exec::helpers::{Assembly, HELPER_FUNCTIONS, HelperCall};

use codemcp_sdk::HelperDoc;
use codemcp_store::Owner;

/// How many helpers, and how big, one principal may keep.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max_count: usize,
    pub max_bytes: usize,
    pub max_total_bytes: usize,
}

/// The gateway's helpers: each principal's in the store, and the shared ones.
pub struct Helpers {
    store: LibraryStore,
    bounds: Bounds,
    shared: RwLock<Arc<BTreeMap<String, Helper>>>,
    dir: Option<std::path::PathBuf>,
    /// The directory's and its files' latest change when last read.
    dir_stamp: parking_lot::Mutex<Option<std::time::SystemTime>>,
}

impl Helpers {
    pub fn new(store: LibraryStore, bounds: Bounds, dir: Option<std::path::PathBuf>) -> Self {
        let helpers = Self {
            store,
            bounds,
            shared: RwLock::new(Arc::new(BTreeMap::new())),
            dir,
            dir_stamp: parking_lot::Mutex::new(None),
        };
        helpers.refresh_shared();
        helpers
    }

    /// Opens the helpers kept in the session store `spec` with its `key`
    /// (sessions' own: see `crate::assemble::store_spec_and_key`), bounded
    /// as `settings` say.
    ///
    /// # Errors
    /// The store cannot be opened.
    pub fn from_settings(
        settings: &crate::config::Settings,
        spec: &codemcp_store::StoreSpec,
        key: codemcp_store::SealKey,
    ) -> Result<Self, codemcp_store::StoreError> {
        let h = &settings.helpers;
        let store = LibraryStore::open(
            spec,
            key,
            h.helpers_idle,
            h.helpers_max_total_bytes,
            // Half the session store's bound: every run reads the helpers
            // record before its session's, so a stalled store must not cost
            // a run two full timeouts (the run goes on without helpers, said).
            (settings.sessions.session_store_timeout / 2)
                .max(std::time::Duration::from_millis(250)),
        )?;
        let bounds = Bounds {
            max_count: h.helpers_max_count,
            max_bytes: h.helpers_max_bytes,
            max_total_bytes: h.helpers_max_total_bytes,
        };
        Ok(Self::new(store, bounds, h.helpers_dir.clone()))
    }

    pub fn store(&self) -> &LibraryStore {
        &self.store
    }

    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Reads the operator's directory again (at start and on reload).
    pub fn reload_shared(&self) {
        let Some(dir) = &self.dir else {
            return;
        };
        let helpers = shared::read_dir(dir, self.bounds.max_bytes);
        tracing::info!(target: "codemcp", dir = %dir.display(), count = helpers.len(), "shared helpers read");
        *self.shared.write() = Arc::new(helpers);
    }

    /// Reads the operator's directory again if a file in it changed since
    /// (the gateway calls this every few seconds: the reload).
    pub fn refresh_shared(&self) {
        let Some(dir) = &self.dir else {
            return;
        };
        let stamp = shared::latest_change(dir);
        let mut last = self.dir_stamp.lock();
        if *last != stamp {
            *last = stamp;
            drop(last);
            self.reload_shared();
        }
    }

    pub fn shared(&self) -> Arc<BTreeMap<String, Helper>> {
        self.shared.read().clone()
    }

    /// What `owner` may call: the shared helpers, then its own over them.
    /// A record that cannot be read leaves only the shared ones, and says why.
    pub async fn visible(&self, owner: &Owner) -> Visible {
        let shared = self.shared();
        let (library, problem) = match self.store.load(owner).await {
            Ok(library) => (library, None),
            Err(e) => (Library::default(), Some(e.to_string())),
        };
        let mut current: BTreeMap<String, Helper> = shared.as_ref().clone();
        let mut docs: BTreeMap<String, HelperDoc> = shared
            .values()
            .map(|h| (h.name.clone(), doc_of(h, None, true)))
            .collect();
        for (name, versions) in &library.helpers {
            current.insert(name.clone(), versions.current.clone());
            docs.insert(
                name.clone(),
                doc_of(&versions.current, versions.previous.as_ref(), false),
            );
        }
        Visible {
            current,
            docs: docs.into_values().collect(),
            problem,
        }
    }
}

/// `sdk` as `owner` sees it with its helpers (the description, the stub),
/// when the gateway keeps helpers.
pub async fn sdk_for(
    helpers: Option<&Arc<Helpers>>,
    owner: &Owner,
    sdk: Arc<codemcp_sdk::Sdk>,
) -> Arc<codemcp_sdk::Sdk> {
    match helpers {
        Some(helpers) => {
            let docs = helpers.visible(owner).await.docs;
            Arc::new(sdk.as_ref().clone().with_helpers(docs))
        }
        None => sdk,
    }
}

/// One principal's view of the helpers, at the start of a run.
#[derive(Debug, Clone, Default)]
pub struct Visible {
    pub current: BTreeMap<String, Helper>,
    pub docs: Vec<HelperDoc>,
    /// Why its own helpers could not be read (a refused record).
    pub problem: Option<String>,
}

fn doc_of(helper: &Helper, previous: Option<&Helper>, shared: bool) -> HelperDoc {
    HelperDoc {
        name: helper.name.clone(),
        signature: helper.signature.clone(),
        stub: helper.stub.clone(),
        summary: helper.summary(),
        doc: helper.doc.clone(),
        source: helper.source.clone(),
        version: helper.version,
        previous: previous.map(|p| (p.version, p.source.clone())),
        shared,
    }
}
