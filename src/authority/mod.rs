//! Who may call what: one room for enforcing the policy rules (the rules
//! themselves are `codemcp_sdk::policy`), asking a human, the runs paused for
//! an answer, who a request comes from, the principals and the audit log.
//!
//! - `guarded.rs` (+ `guarded/resources.rs`): the tools as a run sees them,
//!   each call checked against its policy, asked about, and audited.
//! - `pending.rs`: runs paused in memory for a 2026-07-28 client's answer.
//! - `identity.rs`: the bearer check in front of `/mcp` and the caller it yields.
//! - `principals.rs` (+ `principals/tests.rs`): the principals file, a token and policy overrides each.
//! - `audit.rs`: the audit log, one JSON line per upstream call.

pub mod audit;
pub(crate) mod guarded;
pub(crate) mod identity;
pub(crate) mod pending;
pub mod principals;

pub use self::guarded::{Asker, Authority, CallContext, GuardedTools};
pub use self::identity::Identity;
