//! The Monty engine, in two placements behind one `Engine`: in-process
//! (`inprocess.rs`: the interpreter on dedicated threads of the gateway) and
//! worker processes (`pool/`); `shared.rs` holds what both word the same way.
//!
//! Limits: wall time per run and per turn, recursion depth, source size, output
//! bytes, result size, tool calls, total sleep, and memory (one budget shared by
//! all in-process sessions; see `memory.rs`). After a limit fires the session's
//! state is discarded, because Monty makes no promise about a heap it stopped.

pub mod classify;
mod convert;
mod driver;
mod host;
mod inprocess;
pub mod memory;
mod output;
pub mod pool;
mod runaway;
#[cfg(feature = "self-worker")]
pub mod selfworker;
mod shared;
mod snapshot;
mod supervisor;
mod whole_process;

pub use self::inprocess::MontyEngine;
pub use self::runaway::MAX_FROZEN_THREADS;
pub use self::shared::{HARD_CEILING_MARGIN, MontyLimits};

pub const ENGINE_NAME: &str = "monty";
