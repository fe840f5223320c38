//! A session's interpreter state as bytes (a Monty dump) and back, on the
//! interpreter thread: loading charges the session's memory slot like any
//! other Monty allocation, and deep structures have the big stack.
//!
//! Only bytes the session store authenticated reach [`load`] (Monty warns
//! that invalid dumps may panic, abort or hang).

use monty::{Dump, MontyRepl, ReplProgress, Session, SessionRef};

use super::memory::{MemoryScope, SessionSlot};

/// The script name tracebacks show; the same as a fresh session's.
pub const SCRIPT_NAME: &str = "main.py";

/// The state of a session that starts fresh: nothing to load.
pub const FRESH: &[u8] = &[];

/// What a dump holds.
pub enum Loaded {
    /// A session between runs.
    Idle(Box<MontyRepl>),
    /// A run parked at a call (see `exec::parked`).
    Suspended(Box<ReplProgress>),
}

/// The interpreter state `bytes` holds, charged to `slot`.
pub fn load(bytes: &[u8], slot: SessionSlot) -> Result<Loaded, String> {
    let _scope = MemoryScope::enter(slot);
    let dump = Dump::load(bytes).map_err(|e| e.to_string())?;
    match dump.state {
        Session::Idle(repl) => Ok(Loaded::Idle(repl)),
        Session::Suspended(progress) => Ok(Loaded::Suspended(progress)),
        Session::Running(_) => Err("the snapshot is of a one-shot run, not of a session".into()),
    }
}

/// A run suspended at a call, as bytes.
pub fn dump_suspended(progress: &ReplProgress) -> Result<Vec<u8>, String> {
    monty::dump(SCRIPT_NAME, None, &[], SessionRef::Suspended(progress)).map_err(|e| e.to_string())
}

/// `repl` as bytes. Not charged to the session: the bytes belong to the
/// gateway, which hands them to the store.
pub fn dump(repl: &MontyRepl) -> Result<Vec<u8>, String> {
    monty::dump(SCRIPT_NAME, None, &[], SessionRef::Idle(repl)).map_err(|e| e.to_string())
}
