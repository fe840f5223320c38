//! What only the stores shared between gateways (file, Redis) must also do:
//! two opens see one session, and a record changed, copied or put back is refused.

#[allow(clippy::wildcard_imports)]
use super::*;

pub(crate) async fn two_opens_share_sessions(kind: Kind) {
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

pub(crate) async fn flipped_stored_byte_is_refused(kind: Kind) {
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

pub(crate) async fn record_copied_to_another_handle_is_refused(kind: Kind) {
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

pub(crate) async fn oversized_stored_record_is_refused(kind: Kind) {
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
pub(crate) async fn expired_sessions_give_their_space_back(kind: Kind) {
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
pub(crate) async fn stale_session_record_is_refused(kind: Kind) {
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
