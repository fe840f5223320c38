//! Running agent code: the request and response types shared by every engine,
//! and the interface engines use to reach upstream tools.
//!
//! Nothing here knows about MCP transports: the server hands in code and gets an
//! [`Execution`] back; tool calls go out through [`ToolHost`].

mod engine;
mod error;
mod execution;
mod executor;
pub mod helpers;
pub mod monty;
mod parked;
mod persistence;
pub mod router;
mod run;
pub(crate) mod session_table;
mod tool_host;
pub mod worker;

pub use self::engine::Engine;
pub use self::error::{ErrorKind, MAX_ERROR_MESSAGE_BYTES, RunError};
pub use self::execution::{Execution, not_returned, reset};
pub use self::executor::{Executor, RunChecks, Unparked};
pub use self::parked::{Parked, ParkedCall};
pub use self::persistence::Persistence;
pub use self::run::{Run, RunControl, RunRequest, Saved, SessionId, ToolCallObserver};
pub use self::tool_host::{ToolFailure, ToolHost, unwrap_result};
// What a run's state is saved as: part of `Execution`, so of this crate's interface.
pub use codemcp_store::{Snapshot, SnapshotKind};
