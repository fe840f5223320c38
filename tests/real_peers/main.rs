//! The tests that drive real MCP peers installed from npm and PyPI into
//! `.deps/` by `scripts/test-deps.sh`: 36 real servers behind one gateway
//! (`real_servers`, component `servers`) and every real client over stdio and
//! HTTP (`client_matrix`, components `clients`, `fw1`, `fw2`). Each takes
//! minutes and loads both cores, so they take turns (`one_at_a_time`), as they
//! did in binaries of their own.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

/// The parts of `tests/support/` these tests use (`mod x` here is
/// `tests/support/x.rs`).
#[path = "../support"]
mod support {
    mod setup;
    pub use setup::*;
    mod odd;
    pub use odd::*;
    mod http_gateway;
    pub use http_gateway::*;
}

mod client_matrix;
mod real_servers;

/// Held by the real-server suite's run and by the client matrix: each starts
/// dozens of processes with start-up timeouts, which the other's load would eat.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
