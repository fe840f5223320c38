//! The integration tests that need nothing outside the machine's test peers
//! (`.deps/`), one module per behaviour, in ONE test binary: one link after a
//! change to `src/` instead of one per file. `scripts/test.sh` selects modules
//! by name (`cargo test --test integration -- limits::`). Modules whose
//! prerequisite is missing (bwrap, redis-server, a Docker engine) skip their
//! tests with the reason, except under `CI=true`. Tests that measure this
//! process (`memory_accounting`, `analysis`) run in a child process of this
//! binary that runs only them.
//!
//! The other test binaries: `docker` (a Docker engine: the container
//! placement, its engine faults, the worker image), `sandbox_corpus` (the
//! escape corpus in every isolation mode, with per-case time and memory bounds
//! that want the machine to itself) and `real_peers` (the real MCP servers and
//! clients `scripts/test-deps.sh servers` and `clients` install; minutes each).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly
#![allow(clippy::print_stdout)] // figures and child-test signals; a test binary is no stdio transport

/// `tests/support/`, shared with the other test binaries (this one uses every
/// part: `mod x` here is `tests/support/x.rs`), and this suite's own parts
/// (`tests/integration/support/`), under one name.
#[path = "../support"]
mod support {
    mod setup;
    pub use setup::*;
    mod odd;
    pub use odd::*;
    mod everything;
    pub use everything::*;
    mod filesystem;
    pub use filesystem::*;
    mod results;
    pub use results::*;
    mod stdio;
    pub use stdio::*;
    mod http_client;
    pub use http_client::*;
    mod http_gateway;
    pub use http_gateway::*;
    mod docker;
    pub use docker::*;
    mod sandbox;
    pub use sandbox::*;
    #[path = "../integration/support/alone.rs"]
    mod alone;
    pub use alone::*;
    #[path = "../integration/support/gateways.rs"]
    mod gateways;
    pub use gateways::*;
    #[path = "../integration/support/upstreams.rs"]
    mod upstreams;
    pub use upstreams::*;
    #[path = "../integration/support/peers.rs"]
    pub mod peers;
    #[path = "../integration/support/redis.rs"]
    pub mod redis;
}

/// The codemcp binary's own allocator, so in-process engines here count
/// their memory as the gateway does (`memory_accounting` measures it).
#[global_allocator]
static ALLOCATOR: codemcp_exec::monty::memory::CountingAllocator =
    codemcp_exec::monty::memory::CountingAllocator;

mod admin;
mod analysis;
mod approvals;
mod bounds;
mod clients;
mod conformance;
mod differential;
mod disconnect;
mod endurance;
mod escalation;
mod gateway;
mod helpers;
mod hostile_upstreams;
mod house;
mod http;
mod import;
mod limits;
mod memory_accounting;
mod neighbours_http;
mod oauth;
mod observability;
mod output;
mod parked;
mod pool;
mod preflight;
mod principals;
mod queued_runs;
mod resources;
mod runaway;
mod sandbox_placement;
mod sdk_snapshots;
mod search_ranking;
mod self_worker;
mod sessions;
mod silent_failures;
mod startup;
mod store_outages;
mod upstream_faults;
