//! The integration tests, one module per behaviour, in ONE test binary: one link
//! after a change to `src/` instead of one per file. `scripts/test.sh` selects
//! modules by name (`cargo test --test integration -- limits::`). Kept apart, in
//! their own binaries: `docker` (stops the shared engine), `sandbox_corpus`,
//! `endurance` (long), `memory_accounting` (installs a global allocator),
//! `worker_image` (builds a Docker image), `client_matrix` and `real_servers`
//! (real clients and servers from `.deps/`, minutes each).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly
#![allow(clippy::print_stdout)] // figures and child-test signals; a test binary is no stdio transport

#[path = "../support/mod.rs"]
mod support;

mod admin;
mod analysis;
mod approvals;
mod bounds;
mod clients;
mod conformance;
mod differential;
mod disconnect;
mod escalation;
mod gateway;
mod helpers;
mod hostile_upstreams;
mod house;
mod http;
mod import;
mod limits;
mod neighbours_http;
mod oauth;
mod observability;
mod output;
mod parked;
mod pool;
mod preflight;
mod principals;
mod resources;
mod runaway;
mod sdk_snapshots;
mod search_ranking;
mod self_worker;
mod sessions;
mod silent_failures;
mod startup;
mod store_outages;
mod upstream_faults;
