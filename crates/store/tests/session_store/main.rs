//! One battery of session-store behaviours, run against each store: memory,
//! file (SQLite in a temporary directory) and Redis (a `redis-server` this
//! file starts on a free loopback port and stops again).
//!
//! Without `redis-server` on PATH the Redis tests print a skip line, except
//! under `CI=true`, where they fail. Figures (sizes, latencies) are printed:
//! run with `--nocapture` to see them.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly
#![allow(clippy::print_stdout)] // figures and child-test signals; a test binary is no stdio transport

mod every_store;
mod file_process;
mod fixture;
mod redis_outages;
mod shared_stores;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemcp_store::{
    Handle, Owner, Reason, SealKey, Snapshot, SnapshotKind, StoreError, StoreLimits, StoreSpec,
    one_call, open,
};
use futures::StreamExt;

use self::every_store::*;
use self::fixture::{Fixture, Kind, key, limits, snap};
use self::redis_outages::*;
use self::shared_stores::*;

/// One test per behaviour of one store, named `<store>::<behaviour>`: the
/// shared battery, then the behaviours only that store has.
macro_rules! battery {
    ($store:ident: $kind:expr $(, $extra:ident)* $(,)?) => {
        mod $store {
            use super::*;
            tests!($kind;
                round_trip_and_versions, idle_sessions_expire, second_acquire_waits_then_busy,
                crashed_holders_lease_frees_itself, save_with_lost_lease_is_refused,
                oversized_snapshot_is_not_saved, removed_session_is_gone, save_load_latency,
                save_and_release_frees_the_lease_whatever_the_save_did
                $(, $extra)*);
        }
    };
}

macro_rules! tests {
    ($kind:expr; $($behaviour:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $behaviour() {
                super::$behaviour($kind).await
            }
        )*
    };
}

battery!(memory: Kind::Memory);
battery!(file: Kind::File,
    stale_session_record_is_refused, two_opens_share_sessions, flipped_stored_byte_is_refused, record_copied_to_another_handle_is_refused,
    oversized_stored_record_is_refused, expired_sessions_give_their_space_back,
);
battery!(redis_store: Kind::Redis,
    stale_session_record_is_refused, two_opens_share_sessions, flipped_stored_byte_is_refused, record_copied_to_another_handle_is_refused,
    oversized_stored_record_is_refused, expired_sessions_give_their_space_back,
    killed_redis_is_unavailable_then_recovers, frozen_redis_is_unavailable_not_a_hang,
    frozen_redis_costs_one_call_one_timeout,
);
