//! One battery of session-store behaviours, run against each store: memory,
//! file (SQLite in a temporary directory) and Redis (a `redis-server` this
//! file starts on a free loopback port and stops again).
//!
//! Without `redis-server` on PATH the Redis tests print a skip line, except
//! under `CI=true`, where they fail. Figures (sizes, latencies) are printed:
//! run with `--nocapture` to see them.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

mod fixture;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemcp_store::{
    Handle, Owner, Reason, SealKey, Snapshot, SnapshotKind, StoreError, StoreLimits, StoreSpec,
    one_call, open,
};
use futures::StreamExt;

use self::fixture::{Fixture, Kind, key, limits, snap};

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

// ---- behaviours every store shares ----

async fn round_trip_and_versions(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    assert_eq!(f.store.load(&h).await.expect("load"), None);
    let owner = Owner::of_token(Some("bearer"));
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    assert_eq!(lease.version(), 0);
    assert_eq!(
        f.store
            .save(&mut lease, &owner, snap("one"))
            .await
            .expect("save"),
        1
    );
    let cpython = Snapshot {
        kind: SnapshotKind::Cpython,
        payload: br#"{"x": 1}"#.to_vec(),
    };
    assert_eq!(
        f.store
            .save(&mut lease, &owner, cpython.clone())
            .await
            .expect("save"),
        2
    );
    f.store.release(lease).await.expect("release");
    let stored = f.store.load(&h).await.expect("load").expect("stored");
    assert_eq!(
        (stored.snapshot, stored.owner, stored.version),
        (cpython, owner, 2)
    );
    let mut lease = f
        .store
        .acquire(&h, Duration::ZERO)
        .await
        .expect("acquire again");
    assert_eq!(lease.version(), 2);
    assert_eq!(
        f.store
            .save(&mut lease, &Owner::anonymous(), snap("three"))
            .await
            .expect("save"),
        3
    );
    assert_eq!(
        f.store.load(&h).await.expect("load").expect("stored").owner,
        Owner::anonymous()
    );
    f.store.probe().await.expect("probe");
    assert_eq!(f.store.kind(), ["memory", "file", "redis"][kind as usize]);
}

async fn idle_sessions_expire(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(1_000, 5_000)).await else {
        return;
    };
    let h = Handle::mint();
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    f.store
        .save(&mut lease, &Owner::anonymous(), snap("x"))
        .await
        .expect("save");
    f.store.release(lease).await.expect("release");
    // Loads refresh the idle timer: alive well past one idle time.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(350)).await;
        assert!(
            f.store.load(&h).await.expect("load").is_some(),
            "a loaded session stays"
        );
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        f.store.load(&h).await.expect("load"),
        None,
        "an idle session expires"
    );
    let lease = f
        .store
        .acquire(&h, Duration::ZERO)
        .await
        .expect("acquire expired");
    assert_eq!(lease.version(), 0, "an expired session starts over");
}

async fn second_acquire_waits_then_busy(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    let first = f.store.acquire(&h, Duration::ZERO).await.expect("first");
    let started = Instant::now();
    let second = f.store.acquire(&h, Duration::from_millis(300)).await;
    let waited = started.elapsed();
    assert!(matches!(second, Err(StoreError::Busy)), "{second:?}");
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_millis(1_500),
        "{waited:?}"
    );
    // A waiter gets the lease soon after the holder releases it.
    let store = Arc::clone(&f.store);
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        store.release(first).await.expect("release");
    });
    let started = Instant::now();
    f.store
        .acquire(&h, Duration::from_secs(3))
        .await
        .expect("acquired after release");
    assert!(
        started.elapsed() < Duration::from_millis(1_500),
        "{:?}",
        started.elapsed()
    );
    releaser.await.expect("releaser");
}

async fn crashed_holders_lease_frees_itself(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 300)).await else {
        return;
    };
    let h = Handle::mint();
    // A crash runs no destructor (a dropped lease goes back to its store).
    std::mem::forget(
        f.store
            .acquire(&h, Duration::ZERO)
            .await
            .expect("holder that crashes"),
    );
    let started = Instant::now();
    f.store
        .acquire(&h, Duration::from_secs(3))
        .await
        .expect("lease freed itself");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_millis(1_500),
        "{waited:?}"
    );
}

async fn save_with_lost_lease_is_refused(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 200)).await else {
        return;
    };
    let (h, owner) = (Handle::mint(), Owner::anonymous());
    let mut slow = f
        .store
        .acquire(&h, Duration::ZERO)
        .await
        .expect("slow holder");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Expired, but nobody touched the session: the save is still safe.
    assert_eq!(
        f.store
            .save(&mut slow, &owner, snap("slow 1"))
            .await
            .expect("late save"),
        1
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut next = f
        .store
        .acquire(&h, Duration::ZERO)
        .await
        .expect("next holder");
    // Someone else holds it now: refused even before they save.
    assert!(matches!(
        f.store.save(&mut slow, &owner, snap("slow 2")).await,
        Err(StoreError::LeaseLost)
    ));
    f.store
        .save(&mut next, &owner, snap("next"))
        .await
        .expect("next saves");
    f.store.release(next).await.expect("release");
    // Free again, but the version moved on: still refused.
    assert!(matches!(
        f.store.save(&mut slow, &owner, snap("slow 3")).await,
        Err(StoreError::LeaseLost)
    ));
    let stored = f.store.load(&h).await.expect("load").expect("stored");
    assert_eq!((stored.snapshot, stored.version), (snap("next"), 2));
    // A stale lease's release does not free someone else's lease.
    let _holder = f.store.acquire(&h, Duration::ZERO).await.expect("holder");
    f.store.release(slow).await.expect("stale release");
    assert!(matches!(
        f.store.acquire(&h, Duration::ZERO).await,
        Err(StoreError::Busy)
    ));
}

async fn save_and_release_frees_the_lease_whatever_the_save_did(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let (h, owner) = (Handle::mint(), Owner::anonymous());
    let lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    let saved = f.store.save_and_release(lease, &owner, snap("one")).await;
    assert_eq!(saved.expect("saved"), 1);
    let stored = f.store.load(&h).await.expect("load").expect("stored");
    assert_eq!((stored.snapshot, stored.version), (snap("one"), 1));
    // Freed at once: the next run takes the lease without waiting.
    let next = f.store.acquire(&h, Duration::ZERO).await.expect("free");
    assert_eq!(next.version(), 1);
    // Too large: not saved, and still released.
    let big = Snapshot {
        kind: SnapshotKind::Monty,
        payload: vec![7; f.limits.max_snapshot_bytes + 1],
    };
    let err = f.store.save_and_release(next, &owner, big).await;
    assert!(matches!(err, Err(StoreError::TooLarge { .. })), "{err:?}");
    f.store
        .acquire(&h, Duration::ZERO)
        .await
        .expect("free again");

    // A holder whose lease expired and was taken: refused, and the new
    // holder's lease stays (a stale release frees nothing of someone else's).
    let Some(f) = Fixture::new(kind, limits(60_000, 200)).await else {
        return;
    };
    let h = Handle::mint();
    let slow = f.store.acquire(&h, Duration::ZERO).await.expect("slow");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let next = f.store.acquire(&h, Duration::ZERO).await.expect("next");
    let mut after = next;
    f.store
        .save(&mut after, &owner, snap("next"))
        .await
        .expect("next saves");
    let refused = f.store.save_and_release(slow, &owner, snap("slow")).await;
    assert!(matches!(refused, Err(StoreError::LeaseLost)), "{refused:?}");
    assert!(matches!(
        f.store.acquire(&h, Duration::ZERO).await,
        Err(StoreError::Busy)
    ));
    let stored = f.store.load(&h).await.expect("load").expect("stored");
    assert_eq!((stored.snapshot, stored.version), (snap("next"), 1));
}

async fn oversized_snapshot_is_not_saved(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    let max = f.limits.max_snapshot_bytes;
    let big = Snapshot {
        kind: SnapshotKind::Monty,
        payload: vec![7; max + 1],
    };
    let err = f
        .store
        .save(&mut lease, &Owner::anonymous(), big)
        .await
        .expect_err("too large");
    assert!(
        matches!(err, StoreError::TooLarge { size, .. } if size == max + 1),
        "{err}"
    );
    let fits = Snapshot {
        kind: SnapshotKind::Monty,
        payload: vec![7; max],
    };
    f.store
        .save(&mut lease, &Owner::anonymous(), fits)
        .await
        .expect("exactly the limit fits");
}

async fn removed_session_is_gone(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    f.store
        .save(&mut lease, &Owner::anonymous(), snap("x"))
        .await
        .expect("save");
    f.store.remove(&h).await.expect("remove");
    assert_eq!(f.store.load(&h).await.expect("load"), None);
    // The run that held it cannot bring it back.
    let err = f
        .store
        .save(&mut lease, &Owner::anonymous(), snap("y"))
        .await;
    assert!(matches!(err, Err(StoreError::LeaseLost)), "{err:?}");
    f.store
        .remove(&Handle::mint())
        .await
        .expect("removing nothing is fine");
}

/// Median wall time of one save plus one load of a 4 KiB snapshot.
async fn save_load_latency(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    let payload = Snapshot {
        kind: SnapshotKind::Monty,
        payload: vec![42; 4096],
    };
    let mut times = Vec::new();
    for _ in 0..300 {
        let started = Instant::now();
        f.store
            .save(&mut lease, &Owner::anonymous(), payload.clone())
            .await
            .expect("save");
        f.store.load(&h).await.expect("load").expect("stored");
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "FIGURE {kind:?}: median save+load of 4 KiB = {:?} (p90 {:?})",
        times[150], times[270]
    );
}

// ---- behaviours of the shared stores (file, redis) ----

async fn two_opens_share_sessions(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let other = f.reopen(key());
    let h = Handle::mint();
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    f.store
        .save(&mut lease, &Owner::anonymous(), snap("shared"))
        .await
        .expect("save");
    let seen = other
        .load(&h)
        .await
        .expect("load")
        .expect("seen by the other");
    assert_eq!(seen.snapshot, snap("shared"));
    assert!(matches!(
        other.acquire(&h, Duration::from_millis(50)).await,
        Err(StoreError::Busy)
    ));
    f.store.release(lease).await.expect("release");
    let mut theirs = other
        .acquire(&h, Duration::ZERO)
        .await
        .expect("other acquires");
    assert_eq!(
        other
            .save(&mut theirs, &Owner::anonymous(), snap("theirs"))
            .await
            .expect("save"),
        2
    );
    // A gateway with another key refuses every record it did not seal.
    let stranger = f.reopen(SealKey::ephemeral());
    let err = stranger.load(&h).await.expect_err("foreign key");
    assert!(
        matches!(err, StoreError::Rejected(Reason::Tampered)),
        "{err}"
    );
}

async fn flipped_stored_byte_is_refused(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    f.store
        .save(&mut lease, &Owner::of_token(Some("t")), snap("value = 1"))
        .await
        .expect("save");
    let mut record = f.raw_get(&h);
    let middle = record.len() / 2;
    record[middle] ^= 0x20;
    f.raw_put(&h, &record);
    let err = f.store.load(&h).await.expect_err("tampered record loaded");
    assert!(
        matches!(err, StoreError::Rejected(Reason::Tampered)),
        "{err}"
    );
    assert!(err.to_string().contains("tampered"), "{err}");
}

async fn record_copied_to_another_handle_is_refused(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let (victim, attacker) = (Handle::mint(), Handle::mint());
    let mut lease = f
        .store
        .acquire(&victim, Duration::ZERO)
        .await
        .expect("acquire");
    f.store
        .save(&mut lease, &Owner::of_token(Some("victim")), snap("secret"))
        .await
        .expect("save");
    f.raw_put(&attacker, &f.raw_get(&victim));
    let err = f
        .store
        .load(&attacker)
        .await
        .expect_err("moved record loaded");
    assert!(
        matches!(err, StoreError::Rejected(Reason::Tampered)),
        "{err}"
    );
}

async fn oversized_stored_record_is_refused(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    f.raw_put(&h, &vec![0; 4 * f.limits.max_snapshot_bytes]);
    let err = f.store.load(&h).await.expect_err("huge record loaded");
    assert!(
        matches!(err, StoreError::Rejected(Reason::TooLarge { .. })),
        "{err}"
    );
}

/// 10,000 sessions with a short idle time: once they expire, the store is
/// back near its size before them.
async fn expired_sessions_give_their_space_back(kind: Kind) {
    let idle = Duration::from_secs(8);
    let Some(f) = Fixture::new(kind, limits(idle.as_millis() as u64, 1_000)).await else {
        return;
    };
    let baseline = f.footprint();
    let payload = Snapshot {
        kind: SnapshotKind::Monty,
        payload: vec![5; 1024],
    };
    let started = Instant::now();
    futures::stream::iter(0..10_000)
        .for_each_concurrent(32, |_| {
            let (store, payload) = (Arc::clone(&f.store), payload.clone());
            async move {
                let h = Handle::mint();
                let mut lease = store.acquire(&h, Duration::ZERO).await.expect("acquire");
                store
                    .save(&mut lease, &Owner::anonymous(), payload)
                    .await
                    .expect("save");
                store.release(lease).await.expect("release");
            }
        })
        .await;
    let created_in = started.elapsed();
    let full = f.footprint();
    let deadline = Instant::now() + idle + Duration::from_secs(10);
    let mut after = f.footprint();
    while after.0 > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = f.footprint();
    }
    // One more sweep period, for the space to follow the rows.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let after = f.footprint();
    println!(
        "FIGURE {kind:?}: 10,000 sessions of 1 KiB created in {created_in:?}; (sessions, bytes): \
         baseline {baseline:?}, full {full:?}, after expiry {after:?}"
    );
    if created_in < idle {
        assert_eq!(full.0, 10_000, "all sessions stored");
    }
    assert_eq!(after.0, 0, "every session expired and was removed");
    let slack = baseline.1 / 2 + (1 << 20);
    assert!(
        after.1 <= baseline.1 + slack,
        "size back near baseline: {after:?} vs {baseline:?}"
    );
}

/// Whoever can write the store puts an older, authentic record of a session
/// back: it is refused (its version is not the store's), not loaded as if
/// the later saves never happened.
async fn stale_session_record_is_refused(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let (h, owner) = (Handle::mint(), Owner::anonymous());
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    f.store
        .save(&mut lease, &owner, snap("balance = 100"))
        .await
        .expect("save 1");
    let old = f.raw_get(&h);
    f.store
        .save(&mut lease, &owner, snap("balance = 0"))
        .await
        .expect("save 2");
    f.store.release(lease).await.expect("release");
    f.raw_replace_record(&h, &old);
    let err = f
        .store
        .load(&h)
        .await
        .expect_err("an older record is refused");
    assert!(
        matches!(
            err,
            StoreError::Rejected(Reason::Stale {
                record: 1,
                store: 2
            })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("older record"), "{err}");
}

// ---- Redis outages ----

async fn killed_redis_is_unavailable_then_recovers(kind: Kind) {
    let Some(mut f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    f.store.probe().await.expect("up");
    f.redis.as_mut().expect("redis").stop();
    let started = Instant::now();
    let err = f.store.load(&h).await.expect_err("Redis is down");
    let failed_in = started.elapsed();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err}");
    assert!(failed_in < Duration::from_millis(2_500), "{failed_in:?}");
    let err = f
        .store
        .acquire(&h, Duration::from_secs(1))
        .await
        .expect_err("still down");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err}");
    f.redis.as_mut().expect("redis").start();
    let started = Instant::now();
    let recovered = loop {
        match f.store.load(&h).await {
            Ok(found) => break found,
            Err(e) => assert!(
                started.elapsed() < Duration::from_secs(5),
                "no recovery: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    println!(
        "FIGURE redis: down → Unavailable in {failed_in:?}; recovered {:?} after restart",
        started.elapsed()
    );
    assert_eq!(
        recovered, None,
        "the restarted Redis kept nothing (--save '')"
    );
    let mut lease = f
        .store
        .acquire(&h, Duration::ZERO)
        .await
        .expect("acquire after restart");
    f.store
        .save(&mut lease, &Owner::anonymous(), snap("again"))
        .await
        .expect("save after restart");
}

async fn frozen_redis_is_unavailable_not_a_hang(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    f.store
        .save(&mut lease, &Owner::anonymous(), snap("kept"))
        .await
        .expect("save");
    let redis = f.redis.as_ref().expect("redis");
    redis.signal(libc::SIGSTOP);
    let started = Instant::now();
    let err = f.store.load(&h).await.expect_err("Redis is frozen");
    let failed_in = started.elapsed();
    redis.signal(libc::SIGCONT);
    assert!(matches!(err, StoreError::TimedOut { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("session store did not answer within 2 s (redis redis://"),
        "the error says what happened and where: {err}"
    );
    assert!(failed_in < Duration::from_millis(2_500), "{failed_in:?}");
    println!("FIGURE redis: frozen → Unavailable in {failed_in:?}");
    let started = Instant::now();
    let found = loop {
        match f.store.load(&h).await {
            Ok(found) => break found,
            Err(e) => assert!(
                started.elapsed() < Duration::from_secs(5),
                "no recovery: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(found.expect("kept").snapshot, snap("kept"));
}

/// A call's store operations against a Redis that froze share one store
/// timeout: a lease taken before the freeze, then the load and the save (the
/// stall starting between them); and a second store of half the timeout (the
/// saved helpers' read) before the session's lease, as a tool call makes them.
async fn frozen_redis_costs_one_call_one_timeout(kind: Kind) {
    let Some(f) = Fixture::new(kind, limits(60_000, 60_000)).await else {
        return;
    };
    let timeout = f.limits.call_timeout;
    let (h, owner) = (Handle::mint(), Owner::anonymous());
    let mut lease = f.store.acquire(&h, Duration::ZERO).await.expect("acquire");
    f.store
        .save(&mut lease, &owner, snap("kept"))
        .await
        .expect("save");
    let helpers = open(
        &f.spec,
        key(),
        StoreLimits {
            call_timeout: timeout / 2,
            ..f.limits
        },
    )
    .expect("open a second store");
    let redis = f.redis.as_ref().expect("redis");
    redis.signal(libc::SIGSTOP);
    let started = Instant::now();
    let (loaded, saved) = one_call(async {
        let loaded = f.store.load(&h).await;
        let saved = f.store.save_and_release(lease, &owner, snap("lost")).await;
        (loaded, saved)
    })
    .await;
    let load_and_save = started.elapsed();
    let started = Instant::now();
    let (read, leased) = one_call(async {
        let read = helpers.load(&Handle::mint()).await;
        let leased = f.store.acquire(&h, Duration::from_secs(30)).await;
        (read, leased)
    })
    .await;
    let read_and_lease = started.elapsed();
    redis.signal(libc::SIGCONT);
    // Each names the call's budget as it stood: the helpers' read came first.
    let outcomes = [
        (loaded.map(|_| ()), "2 s"),
        (saved.map(|_| ()), "2 s"),
        (read.map(|_| ()), "1 s"),
        (leased.map(|_| ()), "2 s"),
    ];
    for (outcome, budget) in outcomes {
        let err = outcome.expect_err("Redis is frozen");
        assert!(matches!(err, StoreError::TimedOut { .. }), "{err}");
        assert!(
            err.to_string()
                .contains(&format!("did not answer within {budget}")),
            "the call's budget is named: {err}"
        );
    }
    println!(
        "FIGURE redis frozen, one call: load + save {load_and_save:?}; helpers read + lease {read_and_lease:?} (store timeout {timeout:?})"
    );
    let margin = Duration::from_millis(700);
    assert!(load_and_save < timeout + margin, "{load_and_save:?}");
    assert!(read_and_lease < timeout + margin, "{read_and_lease:?}");
    assert!(read_and_lease >= timeout, "{read_and_lease:?}");
}

// ---- a writer killed with SIGKILL (file store) ----

const CHILD_DB: &str = "CODEMCP_TEST_STORE_CHILD_DB";
const CHILD_HANDLE: &str = "CODEMCP_TEST_STORE_CHILD_HANDLE";

/// Runs only as the child of `file_survives_a_killed_writer`: saves, says so,
/// then waits to be killed while still holding the lease.
#[tokio::test]
async fn file_writer_child() {
    let (Some(db), Some(handle)) = (std::env::var_os(CHILD_DB), std::env::var(CHILD_HANDLE).ok())
    else {
        return;
    };
    let store = open(&StoreSpec::File(db.into()), key(), limits(60_000, 60_000)).expect("open");
    let h = Handle::parse(&handle).expect("handle");
    let mut lease = store.acquire(&h, Duration::ZERO).await.expect("acquire");
    store
        .save(
            &mut lease,
            &Owner::anonymous(),
            snap("written before kill -9"),
        )
        .await
        .expect("save");
    println!("SAVED");
    tokio::time::sleep(Duration::from_secs(60)).await;
}

#[tokio::test]
async fn file_survives_a_killed_writer() {
    use std::io::BufRead;
    let Some(f) = Fixture::new(Kind::File, limits(60_000, 60_000)).await else {
        return;
    };
    let h = Handle::mint();
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        // The child is this test binary running only that test (by its full path).
        .args(["session_store::file_writer_child", "--exact", "--nocapture"])
        .env(CHILD_DB, f.file().expect("file"))
        .env(CHILD_HANDLE, h.as_str())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let saved = stdout
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("SAVED"));
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    assert!(saved, "the child saved");
    let stored = f.store.load(&h).await.expect("load").expect("survived");
    assert_eq!(stored.snapshot, snap("written before kill -9"));
    // The kernel freed the dead child's lease (a file lock) with its process:
    // the next run need not wait out the lease time.
    let lease = f
        .store
        .acquire(&h, Duration::ZERO)
        .await
        .expect("the dead writer's lease is free at once");
    assert_eq!(lease.version(), 1);
}

/// Another process in the middle of a write: the store's statements, which
/// first try without waiting, wait for it instead of failing.
#[tokio::test]
async fn a_write_lock_held_by_another_process_is_waited_for_not_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("sessions.sqlite3");
    let store = open(&StoreSpec::File(db.clone()), key(), limits(60_000, 60_000)).expect("open");
    let h = Handle::mint();
    let mut lease = store.acquire(&h, Duration::ZERO).await.expect("acquire");
    let other = rusqlite::Connection::open(&db).expect("a second connection");
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let holder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        other.execute_batch("COMMIT").expect("commit");
    });
    let started = Instant::now();
    store
        .save(
            &mut lease,
            &Owner::anonymous(),
            snap("after the other writer"),
        )
        .await
        .expect("the save waits for the lock, then goes in");
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "it did wait"
    );
    holder.join().expect("holder");
    store.release(lease).await.expect("release");
    let stored = store.load(&h).await.expect("load").expect("stored");
    assert_eq!(stored.snapshot.payload, b"after the other writer");
}

/// `session.key` replaced by a FIFO hung the gateway at start with no log
/// line: now it is refused at once, saying what it is.
#[test]
fn session_key_fifo_fails_fast_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new("mkfifo")
        .arg(dir.path().join("session.key"))
        .status()
        .unwrap();
    assert!(made.success());
    let state = dir.path().to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(SealKey::from_setting(None, &state).map(|_| ()));
    });
    let result = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("reading session.key returned instead of blocking on the FIFO");
    let err = result.expect_err("a FIFO is not a key").to_string();
    assert!(err.contains("a FIFO, not a regular file"), "{err}");
}

/// A key file others may write lets them forge session records.
#[test]
fn session_key_writable_by_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    SealKey::from_setting(None, dir.path()).unwrap();
    let key = dir.path().join("session.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o666)).unwrap();
    let err = SealKey::from_setting(None, dir.path())
        .expect_err("refused")
        .to_string();
    assert!(err.contains("chmod 600"), "{err}");
}
