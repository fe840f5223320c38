#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::collections::HashMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

use super::*;
use crate::test_server::{Answer, Host, serve};

const PROGRAM: &[u8] = b"#!/bin/sh\necho monty-runtime 1.4.0\n";
const WHEEL_PATH: &str =
    "packages/ab/cd/pydantic_monty_runtime-1.4.0-py3-none-manylinux_2_28_test.whl";

/// A wheel laid out as PyPI's: the program under `.data/scripts/`.
fn fake_wheel() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file(
        "pydantic_monty_runtime-1.4.0.data/scripts/monty",
        options.unix_permissions(0o755),
    )
    .unwrap();
    zip.write_all(PROGRAM).unwrap();
    zip.start_file("pydantic_monty_runtime-1.4.0.dist-info/METADATA", options)
        .unwrap();
    zip.write_all(b"Name: pydantic-monty-runtime\nVersion: 1.4.0\n")
        .unwrap();
    zip.finish().unwrap().into_inner()
}

fn pin_of(wheel: &[u8]) -> &'static WheelPin {
    Box::leak(Box::new(WheelPin {
        name: WHEEL,
        version: "1.4.0",
        machine: std::env::consts::ARCH,
        size: wheel.len() as u64,
        sha256: Box::leak(sha256_hex(wheel).into_boxed_str()),
        path: WHEEL_PATH,
    }))
}

async fn host(answer: Answer) -> Host {
    serve(HashMap::from([(format!("/{WHEEL_PATH}"), answer)])).await
}

struct Dirs {
    data: tempfile::TempDir,
    cache: tempfile::TempDir,
}

fn dirs() -> Dirs {
    Dirs {
        data: tempfile::tempdir().unwrap(),
        cache: tempfile::tempdir().unwrap(),
    }
}

fn quick() -> fetch::Timeouts {
    fetch::Timeouts {
        connect: Duration::from_secs(5),
        read: Duration::from_secs(1),
        total: Duration::from_secs(60),
    }
}

async fn provision_from(
    dirs: &Dirs,
    host: &Host,
    pin: &'static WheelPin,
) -> Result<Provisioned, ProvisionError> {
    provision_pin(dirs.data.path(), dirs.cache.path(), &host.url, pin, quick()).await
}

/// Nothing of a worker under the data directory, not even a temporary.
fn nothing_installed(dirs: &Dirs) -> bool {
    let parent = dirs.data.path().join(PARENT);
    !parent.exists() || std::fs::read_dir(&parent).unwrap().count() == 0
}

#[tokio::test]
async fn the_worker_is_provisioned_once_then_reused_without_a_download() {
    let wheel = fake_wheel();
    let pin = pin_of(&wheel);
    let host = host(Answer::ok(&wheel)).await;
    let dirs = dirs();
    let got = provision_from(&dirs, &host, pin).await.unwrap();
    assert!(got.made);
    assert_eq!(got.version, "1.4.0");
    assert_eq!(
        got.binary,
        dirs.data
            .path()
            .join(format!("monty-worker/1.4.0-{}/monty", &pin.sha256[..8]))
    );
    assert_eq!(std::fs::read(&got.binary).unwrap(), PROGRAM);
    let out = std::process::Command::new(&got.binary).output().unwrap();
    assert_eq!(out.stdout, b"monty-runtime 1.4.0\n");
    assert_eq!(host.hits(), 1);
    let again = provision_from(&dirs, &host, pin).await.unwrap();
    assert!(!again.made);
    assert_eq!(again.binary, got.binary);
    assert_eq!(host.hits(), 1, "a provisioned worker downloads nothing");
    assert_eq!(
        installed(dirs.data.path(), pin).unwrap(),
        Some(got.binary.clone())
    );
}

#[tokio::test]
async fn a_wheel_with_one_wrong_byte_is_refused_before_anything_is_unpacked() {
    let wheel = fake_wheel();
    let pin = pin_of(&wheel);
    let mut tampered = wheel.clone();
    // Inside the program's compressed bytes: same length, other content.
    tampered[60] ^= 0x01;
    let host = host(Answer::ok(&tampered)).await;
    let dirs = dirs();
    let err = provision_from(&dirs, &host, pin).await.unwrap_err();
    assert!(
        matches!(err, ProvisionError::Fetch(FetchError::Digest { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("refused"), "{err}");
    assert!(nothing_installed(&dirs));
    assert_eq!(std::fs::read_dir(dirs.cache.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn a_truncated_download_is_refused_and_leaves_nothing() {
    let wheel = fake_wheel();
    let pin = pin_of(&wheel);
    let host = host(Answer {
        cut_at: Some(wheel.len() / 2),
        ..Answer::ok(&wheel)
    })
    .await;
    let dirs = dirs();
    let err = provision_from(&dirs, &host, pin).await.unwrap_err();
    assert!(
        matches!(
            err,
            ProvisionError::Fetch(FetchError::Unavailable { .. } | FetchError::Digest { .. })
        ),
        "{err}"
    );
    assert!(nothing_installed(&dirs));
    assert_eq!(std::fs::read_dir(dirs.cache.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn a_host_that_stalls_is_given_up_on_within_the_read_timeout() {
    let wheel = fake_wheel();
    let pin = pin_of(&wheel);
    let host = host(Answer {
        stall: Some(Duration::from_secs(120)),
        ..Answer::ok(&wheel)
    })
    .await;
    let dirs = dirs();
    let started = Instant::now();
    let err = provision_from(&dirs, &host, pin).await.unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(err, ProvisionError::Fetch(FetchError::Unavailable { .. })),
        "{err}"
    );
    // The read timeout is 1 s; the stall 120 s. A loaded machine may be slow
    // to notice, never that slow.
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert!(nothing_installed(&dirs));
}

#[tokio::test]
async fn a_wheel_the_host_does_not_have_names_the_404() {
    let wheel = fake_wheel();
    let pin = pin_of(&wheel);
    let host = serve(HashMap::new()).await;
    let dirs = dirs();
    let err = provision_from(&dirs, &host, pin).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("404") && text.contains(&host.url), "{text}");
    assert!(nothing_installed(&dirs));
}

#[tokio::test]
async fn two_gateways_provisioning_at_once_end_with_one_worker() {
    let wheel = fake_wheel();
    let pin = pin_of(&wheel);
    let host = host(Answer::ok(&wheel)).await;
    let dirs = dirs();
    let (a, b) = tokio::join!(
        provision_from(&dirs, &host, pin),
        provision_from(&dirs, &host, pin)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.binary, b.binary);
    assert!(a.made != b.made, "exactly one put its worker in place");
    assert_eq!(std::fs::read(&a.binary).unwrap(), PROGRAM);
    let entries: Vec<String> = std::fs::read_dir(dirs.data.path().join(PARENT))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries.len(), 1, "no temporary left: {entries:?}");
}

#[tokio::test]
async fn a_tampered_installed_worker_is_never_reused() {
    let wheel = fake_wheel();
    let pin = pin_of(&wheel);
    let host = host(Answer::ok(&wheel)).await;
    let dirs = dirs();
    let got = provision_from(&dirs, &host, pin).await.unwrap();
    // Same length, same mode, other program.
    let evil = b"#!/bin/sh\necho EVIL!-runtime 1.4.0\n";
    assert_eq!(evil.len(), PROGRAM.len());
    std::fs::set_permissions(&got.binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(&got.binary, evil).unwrap();
    std::fs::set_permissions(&got.binary, std::fs::Permissions::from_mode(0o555)).unwrap();
    let why = installed(dirs.data.path(), pin).unwrap_err();
    assert!(why.contains("SHA-256"), "{why}");
    let again = provision_from(&dirs, &host, pin).await.unwrap();
    assert!(again.made, "unpacked again from the checked wheel");
    assert_eq!(std::fs::read(&again.binary).unwrap(), PROGRAM);
    assert_eq!(
        host.hits(),
        1,
        "the wheel came from the cache, checked again"
    );
    let entries = std::fs::read_dir(dirs.data.path().join(PARENT))
        .unwrap()
        .count();
    assert_eq!(entries, 1, "the tampered copy is gone");
}

#[test]
fn the_linked_montys_wheel_is_pinned_and_another_version_is_not() {
    let pin = pin("1.4.0").unwrap();
    assert_eq!(pin.name, WHEEL);
    assert!(pin.size > 10_000_000);
    let err = super::pin("0.0.1").unwrap_err();
    assert!(err.to_string().contains("0.0.1"), "{err}");
}
