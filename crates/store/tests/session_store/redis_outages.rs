//! Redis going away or freezing under a gateway: unavailable, never a hang,
//! and one timeout per call.

#[allow(clippy::wildcard_imports)]
use super::*;

pub(crate) async fn killed_redis_is_unavailable_then_recovers(kind: Kind) {
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

pub(crate) async fn frozen_redis_is_unavailable_not_a_hang(kind: Kind) {
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
pub(crate) async fn frozen_redis_costs_one_call_one_timeout(kind: Kind) {
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
