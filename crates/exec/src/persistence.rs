//! Sessions that outlive one process: before a run, its session's handle is
//! leased in the store and its saved state loaded; after, the new state is
//! saved and the lease released. The engines only see a [`Run`] with the
//! state to load and give back the state to save.
//!
//! A store that is down never stops a run: the run uses what this gateway
//! holds in memory, and its result says the state will not persist.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::helpers::Prelude;
use super::{
    ErrorKind, Execution, Parked, Run, RunError, Saved, SessionId, Snapshot, SnapshotKind,
};
use codemcp_store::{Handle, Lease, Owner, SessionStore, StoreError, Stored};

/// What this gateway knows about a session it ran.
struct Local {
    id: SessionId,
    /// Whose it is: what this gateway holds is used only for them.
    owner: Owner,
    last_used: Instant,
    /// Its last save failed: the engine's state is newer than the stored one.
    unsaved: bool,
}

pub struct Persistence {
    store: Arc<dyn SessionStore>,
    local: Mutex<HashMap<Handle, Local>>,
    idle: Duration,
    /// How long a parked run waits for its answer (`CODEMCP_APPROVAL_TIMEOUT_SECS`):
    /// its record goes then, however long sessions idle.
    parked_for: Duration,
    /// Whether runs give back their state to save. Not for the memory store:
    /// nothing but the engine that holds the state could ever load it, and
    /// a Monty snapshot grows with every snippet the session ran.
    snapshots: bool,
}

/// A run under way in a session: what `finish` needs.
pub struct Begun {
    pub handle: Handle,
    pub id: SessionId,
    owner: Owner,
    lease: Option<Lease>,
    warnings: Vec<String>,
}

impl Persistence {
    pub fn new(store: Arc<dyn SessionStore>, idle: Duration) -> Self {
        Self {
            snapshots: store.kind() != "memory",
            store,
            local: Mutex::default(),
            idle,
            parked_for: Duration::from_secs(120),
        }
    }

    /// Parked runs are kept for `timeout` (the approval timeout), not for
    /// the session idle time.
    #[must_use]
    pub fn parking_for(mut self, timeout: Duration) -> Self {
        self.parked_for = timeout;
        self
    }

    pub fn describe(&self) -> String {
        self.store.describe()
    }

    /// Whether runs can park in the store (see `exec::parked`): only where
    /// snapshots are kept, so any gateway sharing the store can resume them.
    pub fn parks_runs(&self) -> bool {
        self.snapshots
    }

    /// Leases and loads the session `given` names (a new one when `None`)
    /// and sets up `run` for it. An unknown, expired or foreign handle is an
    /// error result naming the new session that replaces it.
    /// `holds(id, version)`: whether the engine has that state already, in
    /// which case it is not loaded again.
    pub async fn begin(
        &self,
        given: Option<&str>,
        owner: Owner,
        run: &mut Run,
        holds: &(dyn Fn(SessionId, u64) -> bool + Sync),
    ) -> Result<Begun, Execution> {
        let Some(text) = given else {
            return Ok(self.begin_new(owner, run).await);
        };
        let Some(handle) = Handle::parse(text) else {
            return Err(self.gone(owner, run).await);
        };
        let mut down = None;
        let lease = match self.store.acquire(&handle, run.wall).await {
            Ok(lease) => Some(lease),
            Err(StoreError::Busy) => return Err(self.busy_or_gone(&handle, owner, run).await),
            Err(e) => {
                tracing::warn!(target: "codemcp::session", error = %e, "session store: lease not taken");
                // Not asked again for the load: a store that just failed
                // would most likely cost this call a second timeout.
                down = Some(e);
                None
            }
        };
        let mut begun = Begun {
            id: SessionId(0),
            handle,
            owner,
            lease,
            warnings: Vec::new(),
        };
        if let Some(id) = self.held_here(&begun, holds) {
            begun.id = id;
            run.version = begun.lease.as_ref().map_or(u64::MAX, |l| l.version() + 1);
            run.persist = self.snapshots;
            return Ok(begun);
        }
        match self.load(&mut begun, down).await {
            Ok(saved) => {
                begun.id = self.local_id(&begun.handle, begun.owner);
                // Without snapshots the engine's own copy is the state.
                run.saved = saved.filter(|_| self.snapshots);
                run.version = begun.lease.as_ref().map_or(u64::MAX, |l| l.version() + 1);
                run.persist = self.snapshots;
                Ok(begun)
            }
            Err(()) => {
                self.release(begun.lease.take()).await;
                Err(self.gone(begun.owner, run).await)
            }
        }
    }

    /// The engine id of the session when this gateway knows it for this
    /// caller and there is nothing to load: the store has no record of it
    /// (version 0: new, or never saved), or this gateway saved it last and its
    /// engine still holds that version. Loading and checking it is skipped.
    fn held_here(
        &self,
        begun: &Begun,
        holds: &(dyn Fn(SessionId, u64) -> bool + Sync),
    ) -> Option<SessionId> {
        let stored = begun.lease.as_ref()?.version();
        let mut local = self.local.lock();
        let here = local.get_mut(&begun.handle)?;
        let current =
            here.owner == begun.owner && (stored == 0 || (!here.unsaved && holds(here.id, stored)));
        current.then(|| {
            here.last_used = Instant::now();
            here.id
        })
    }

    /// The saved state to load, `Ok(None)` to go on with what this gateway
    /// holds, `Err` when the session does not exist for this caller. `down`:
    /// the store failed just now (it is not asked again).
    async fn load(
        &self,
        begun: &mut Begun,
        down: Option<StoreError>,
    ) -> Result<Option<Arc<Saved>>, ()> {
        let here = self
            .local
            .lock()
            .get(&begun.handle)
            .map(|l| (l.unsaved, l.owner == begun.owner));
        // Whether its last save failed, if this gateway holds it for this caller.
        let known_here = here.filter(|&(_, mine)| mine).map(|(unsaved, _)| unsaved);
        let foreign_here = here.is_some_and(|(_, mine)| !mine);
        let loaded = match down {
            Some(e) => Err(e),
            None => self.store.load(&begun.handle).await,
        };
        match loaded {
            Ok(Some(stored)) if stored.owner != begun.owner => Err(()),
            Ok(Some(_)) if known_here == Some(true) => Ok(None),
            Ok(Some(Stored {
                snapshot, version, ..
            })) => Ok(Some(Arc::new(Saved { version, snapshot }))),
            Ok(None) if known_here.is_some() => Ok(None),
            Ok(None) => Err(()),
            // No stored owner to go by: this gateway's word is the one left.
            Err(_) if foreign_here => Err(()),
            Err(StoreError::Rejected(reason)) => {
                begun.warnings.push(format!(
                    "this session's saved state was refused ({reason}) and not loaded; it started fresh"
                ));
                Ok(Some(Arc::new(Saved {
                    version: 0,
                    snapshot: Snapshot::fresh(),
                })))
            }
            Err(e) => {
                begun.warnings.push(unavailable(&e));
                Ok(None)
            }
        }
    }

    async fn begin_new(&self, owner: Owner, run: &mut Run) -> Begun {
        let handle = Handle::mint();
        let lease = self.store.acquire(&handle, run.wall).await.ok();
        run.version = lease.as_ref().map_or(u64::MAX, |l| l.version() + 1);
        run.persist = self.snapshots;
        Begun {
            id: self.local_id(&handle, owner),
            handle,
            owner,
            lease,
            warnings: Vec::new(),
        }
    }

    /// The error result for a handle that names no session of this caller;
    /// it starts a new session (without running anything) and names it.
    async fn gone(&self, owner: Owner, run: &mut Run) -> Execution {
        let begun = self.begin_new(owner, run).await;
        let handle = begun.handle.to_string();
        // Saved empty, so the new handle works on any replica at once.
        let mut execution = Execution {
            snapshot: Some(Snapshot::fresh()),
            ..Execution::default()
        };
        self.finish(begun, &mut execution).await;
        execution.error = Some(
            RunError::new(
                ErrorKind::Input,
                "LookupError",
                "this session is unknown or expired: its variables are gone",
            )
            .with_hint(format!(
                "a new session was started: pass session=\"{handle}\" from now on, and run the code \
                 again (it did not run), re-creating the variables it needs"
            )),
        );
        execution
    }

    /// Saves the state the run left and releases the session.
    pub async fn finish(&self, begun: Begun, execution: &mut Execution) {
        let Begun {
            handle,
            id,
            owner,
            lease,
            mut warnings,
        } = begun;
        let saved = match (execution.snapshot.take(), lease) {
            (None, held) => {
                self.release(held).await;
                match execution.unsaved.take() {
                    Some(why) => {
                        warnings.push(why);
                        false
                    }
                    None => true,
                }
            }
            (Some(snapshot), Some(held)) => {
                match self.store.save_and_release(held, &owner, snapshot).await {
                    Ok(_) => true,
                    Err(e) => {
                        warnings.push(not_saved(&e));
                        false
                    }
                }
            }
            (Some(_), None) => {
                warnings.push(
                    "the session store was unavailable: this session's state will not persist past this gateway"
                        .to_owned(),
                );
                false
            }
        };
        self.local.lock().insert(
            handle.clone(),
            Local {
                id,
                owner,
                last_used: Instant::now(),
                unsaved: !saved,
            },
        );
        execution.session = Some(handle.to_string());
        execution.warnings.extend(warnings);
    }

    /// Keeps the run that parked in `execution` under a handle of its own,
    /// named in its `parked.state`, and releases the session unchanged: it
    /// changes only when the run resumes and ends. A run that cannot be kept
    /// ends here with an error.
    pub async fn park(
        &self,
        mut begun: Begun,
        run: (&str, Option<&Prelude>),
        wall: Duration,
        execution: &mut Execution,
    ) {
        let (code, prelude) = run;
        let snapshot = execution.snapshot.take();
        if let Some(lease) = begun.lease.as_mut().filter(|l| l.version() == 0) {
            // A new session is stored (empty) first, so that the gateway the
            // answer reaches finds it.
            let _ = self
                .store
                .save(lease, &begun.owner, Snapshot::fresh())
                .await;
        }
        let base = begun.lease.as_ref().map(Lease::version);
        let stored = match (execution.parked.as_mut(), snapshot, base) {
            (Some(call), Some(snapshot), Some(base)) if snapshot.kind == SnapshotKind::Parked => {
                let mut record = Parked::new(
                    begun.handle.to_string(),
                    base,
                    code.to_owned(),
                    call.clone(),
                );
                record.prelude = prelude.cloned();
                record.stdout.clone_from(&execution.stdout);
                record.stderr.clone_from(&execution.stderr);
                record.tool_calls = execution.tool_calls;
                let payload = record.encode(&snapshot.payload);
                match self.keep_parked(begun.owner, payload, wall).await {
                    Ok(handle) => {
                        // The output so far comes with the run's final result.
                        execution.stdout.clear();
                        execution.stderr.clear();
                        tracing::info!(target: "codemcp::session", server = %call.server, tool = %call.tool, "run parked in the session store until the user answers");
                        call.state = Some(handle.to_string());
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            _ => Err("the session store is unavailable".to_owned()),
        };
        if let Err(why) = stored {
            let call = execution.parked.take();
            let what = call.map_or_else(String::new, |c| format!("{}.{} ", c.server, c.tool));
            execution.error = Some(
                RunError::new(
                    ErrorKind::Internal,
                    "RuntimeError",
                    format!("the run stopped at {what}to wait for the user's approval, but could not be kept for the answer ({why})"),
                )
                .with_hint("nothing after that call ran, and the session is as it was before this call; try again later"),
            );
        }
        self.finish(begun, execution).await;
    }

    async fn keep_parked(
        &self,
        owner: Owner,
        payload: Vec<u8>,
        wall: Duration,
    ) -> Result<Handle, StoreError> {
        let handle = Handle::mint();
        let lease = self.store.acquire(&handle, wall).await?;
        let snapshot = Snapshot {
            kind: SnapshotKind::Parked,
            payload,
        };
        // Gone at the approval timeout, whoever reads it meanwhile.
        self.store
            .save_and_release_for(lease, &owner, snapshot, self.parked_for)
            .await?;
        Ok(handle)
    }

    /// Takes the run parked under `state` out of the store (once: it is
    /// deleted) for `owner`, and begins its session for it: `run` resumes
    /// the parked run, provided nothing else ran in the session meanwhile
    /// and it is younger than `max_age`.
    pub async fn unpark(
        &self,
        state: &str,
        owner: Owner,
        max_age: Duration,
        run: &mut Run,
        holds: &(dyn Fn(SessionId, u64) -> bool + Sync),
    ) -> Result<(Begun, Parked), String> {
        let no_run = "this requestState names no paused run: it was already answered, expired \
                      (CODEMCP_APPROVAL_TIMEOUT_SECS), or belongs to another caller; call execute_python again";
        let handle = Handle::parse(state).ok_or(no_run)?;
        let lease = match self.store.acquire(&handle, run.wall).await {
            Ok(lease) => lease,
            Err(StoreError::Busy) => return Err(no_run.to_owned()),
            Err(e) => return Err(unavailable_for_resume(&e)),
        };
        let found = match self.store.load(&handle).await {
            Ok(Some(stored))
                if stored.owner == owner && stored.snapshot.kind == SnapshotKind::Parked =>
            {
                // Used once: gone before it runs. Only its owner may do this,
                // so nobody else can drop another caller's paused run.
                let _ = self.store.remove(&handle).await;
                Parked::decode(&stored.snapshot.payload).ok_or_else(|| no_run.to_owned())
            }
            Ok(_) | Err(StoreError::Rejected(_)) => Err(no_run.to_owned()),
            Err(e) => Err(unavailable_for_resume(&e)),
        };
        self.release(Some(lease)).await;
        let (parked, dump) = found?;
        if parked.age() > max_age {
            return Err(format!(
                "the approval came after CODEMCP_APPROVAL_TIMEOUT_SECS ({} s): the paused run was dropped, \
                 nothing after {}.{} ran, and the session is as it was before that call; call execute_python again",
                max_age.as_secs(),
                parked.server,
                parked.tool
            ));
        }
        let begun = self
            .begin(Some(&parked.session), owner, run, holds)
            .await
            .map_err(|_| "the session of the paused run is gone".to_owned())?;
        if begun.lease.as_ref().map(Lease::version) != Some(parked.base) {
            self.release(begun.lease).await;
            return Err("another call ran in this session while the run waited for approval: the paused \
                        run was dropped (nothing after the call that asked ran); call execute_python again"
                .to_owned());
        }
        run.saved = Some(Arc::new(Saved {
            version: parked.base,
            snapshot: Snapshot::parked(dump),
        }));
        run.code.clone_from(&parked.code);
        if let Some(prelude) = &parked.prelude {
            run.code.insert_str(0, &prelude.text);
            run.prelude = Some(Arc::new(prelude.clone()));
        }
        Ok((begun, parked))
    }

    /// Another run holds `handle`: "busy" to the session's owner, and to
    /// anyone else the same answer as for an unknown handle.
    async fn busy_or_gone(&self, handle: &Handle, owner: Owner, run: &mut Run) -> Execution {
        let mine_here = self.local.lock().get(handle).map(|l| l.owner == owner);
        let mine = match self.store.load(handle).await {
            Ok(Some(stored)) => stored.owner == owner,
            Ok(None) | Err(_) => mine_here == Some(true),
        };
        if mine {
            busy(handle)
        } else {
            self.gone(owner, run).await
        }
    }

    async fn release(&self, lease: Option<Lease>) {
        if let Some(lease) = lease
            && let Err(e) = self.store.release(lease).await
        {
            tracing::debug!(target: "codemcp::session", error = %e, "session lease not released; it expires by itself");
        }
    }

    /// The engine session id of `handle` in this gateway.
    fn local_id(&self, handle: &Handle, owner: Owner) -> SessionId {
        let mut local = self.local.lock();
        let entry = local.entry(handle.clone()).or_insert_with(|| Local {
            id: SessionId::next(),
            owner,
            last_used: Instant::now(),
            unsaved: false,
        });
        entry.last_used = Instant::now();
        entry.id
    }

    /// A new session's handle before its first run, so that runs naming it
    /// at once (one MCP session's concurrent calls) share it and its lease.
    pub fn reserve(&self, owner: Owner) -> Handle {
        let handle = Handle::mint();
        self.local_id(&handle, owner);
        handle
    }

    /// Stops holding `handle` in this gateway's memory once its state is
    /// safely stored; returns its engine id to end. An unsaved session, and
    /// any session of a store that takes no snapshots (memory), is kept until
    /// it expires: the store does not have its latest state.
    pub fn forget(&self, handle: &str) -> Option<SessionId> {
        let handle = Handle::parse(handle)?;
        let mut local = self.local.lock();
        let saved = self.snapshots && local.get(&handle).is_some_and(|l| !l.unsaved);
        saved.then(|| local.remove(&handle).map(|l| l.id)).flatten()
    }

    /// Forgets sessions idle past the store's expiry; returns their engine ids.
    pub fn expire_idle(&self) -> Vec<SessionId> {
        let mut local = self.local.lock();
        let mut gone = Vec::new();
        local.retain(|_, l| {
            let keep = l.last_used.elapsed() < self.idle;
            if !keep {
                gone.push(l.id);
            }
            keep
        });
        gone
    }
}

fn busy(handle: &Handle) -> Execution {
    let error = RunError::new(
        ErrorKind::Limit,
        "RuntimeError",
        "session busy: another run of this session is still going",
    )
    .with_hint("wait for the other call to finish, then call again with the same session");
    Execution {
        error: Some(error),
        session: Some(handle.to_string()),
        ..Execution::default()
    }
}

fn unavailable(e: &StoreError) -> String {
    format!(
        "the session store is unavailable ({e}): this run used the state this gateway holds in memory"
    )
}

fn not_saved(e: &StoreError) -> String {
    match e {
        StoreError::TooLarge { .. } => format!(
            "{e}: keep less data in variables (CODEMCP_MAX_SESSION_BYTES); the state lives only in this gateway's memory"
        ),
        _ => format!(
            "this session's state was not saved ({e}); it lives only in this gateway's memory"
        ),
    }
}

fn unavailable_for_resume(e: &StoreError) -> String {
    format!(
        "the session store is unavailable ({e}): the paused run cannot be resumed now; try again shortly"
    )
}
