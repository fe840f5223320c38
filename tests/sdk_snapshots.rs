//! What the model sees of the real peers' catalogs: the `execute_python` description (at the
//! default budget and at a small one), the `sdk.pyi` stub, and a few `search_tools` answers,
//! for the peers the other tests run (server-everything, -filesystem and -memory, and our own
//! `odd_server.py` and `broken_server.py`), pinned as `insta` snapshots in `tests/snapshots/`.
//!
//! A change in what the model sees fails here and shows up in review as a diff of those files.
//! To accept an intended change: `cargo insta review` (from `cargo install cargo-insta`), or
//! rerun with `INSTA_UPDATE=always` and read `git diff tests/snapshots/`. With `CI=true` insta
//! writes nothing and a mismatch fails.
//!
//! The peers are listed as the gateway lists them (see `support::peers`).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

mod support;

use std::sync::OnceLock;

use codemcp::sdk::Sdk;

/// `CODEMCP_DESCRIPTION_BUDGET`'s default.
const DEFAULT_BUDGET: usize = 8_000;
/// Small enough for the compact index by topics.
const SMALL_BUDGET: usize = 1_600;

/// The SDK over every peer, built once for all the tests here.
fn sdk() -> &'static Sdk {
    static SDK: OnceLock<Sdk> = OnceLock::new();
    SDK.get_or_init(|| Sdk::build(&support::peers::catalog()))
}

#[test]
fn description_at_the_default_budget() {
    insta::assert_snapshot!(sdk().description(DEFAULT_BUDGET));
}

#[test]
fn description_at_a_small_budget() {
    insta::assert_snapshot!(sdk().description(SMALL_BUDGET));
}

#[test]
fn stub() {
    insta::assert_snapshot!(sdk().stub());
}

#[test]
fn search_answers() {
    let queries = [
        "add two numbers",
        "read a file",
        "create entities in the knowledge graph",
        "send an email",
        "long running operation with progress",
        "",
    ];
    let answers: Vec<String> = queries
        .iter()
        .map(|query| {
            let hits: Vec<String> = sdk()
                .search(query, 3)
                .into_iter()
                .map(|h| format!("  {}  # {}", h.signature, h.summary))
                .collect();
            format!("{query:?}\n{}", hits.join("\n"))
        })
        .collect();
    insta::assert_snapshot!(answers.join("\n\n"));
}
