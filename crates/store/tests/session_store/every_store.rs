//! The battery every store passes: memory, file and Redis alike.

#[allow(clippy::wildcard_imports)]
use super::*;

pub(crate) async fn round_trip_and_versions(kind: Kind) {
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

pub(crate) async fn idle_sessions_expire(kind: Kind) {
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

pub(crate) async fn second_acquire_waits_then_busy(kind: Kind) {
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

pub(crate) async fn crashed_holders_lease_frees_itself(kind: Kind) {
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

pub(crate) async fn save_with_lost_lease_is_refused(kind: Kind) {
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

pub(crate) async fn save_and_release_frees_the_lease_whatever_the_save_did(kind: Kind) {
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

pub(crate) async fn oversized_snapshot_is_not_saved(kind: Kind) {
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

pub(crate) async fn removed_session_is_gone(kind: Kind) {
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
pub(crate) async fn save_load_latency(kind: Kind) {
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
