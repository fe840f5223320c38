#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::collections::HashMap;
use std::io::Write;

use super::*;
use crate::pins::WheelPin;
use crate::recipe::Deb;
use crate::test_server::{Answer, Host, serve};

/// netbase 6.6, the real pinned .deb.
const NETBASE: &[u8] = include_bytes!("testdata/netbase_6.6_all.deb");
const NETBASE_PATH: &str = "pool/main/n/netbase/netbase_6.6_all.deb";
const WHEEL_PATH: &str = "packages/demo-1-py3-none-any.whl";
const BOOTSTRAP: &str = "print('worker')\n";

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// A small wheel: a package with a module and a script.
fn demo_wheel() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    zip.start_file("demo/__init__.py", options).unwrap();
    zip.write_all(b"ANSWER = 42\n").unwrap();
    zip.start_file("demo-1.dist-info/RECORD", options).unwrap();
    zip.write_all(b"demo/__init__.py,,\n").unwrap();
    zip.finish().unwrap().into_inner()
}

/// netbase as the only .deb, and `wheel` as the wheel.
fn tiny_recipe(wheel: &[u8]) -> Recipe {
    let netbase = Deb {
        package: "netbase",
        version: "6.6",
        path: NETBASE_PATH,
        size: NETBASE.len() as u64,
        sha256: leak(sha256_hex(NETBASE)),
    };
    let pin: &'static WheelPin = Box::leak(Box::new(WheelPin {
        name: "demo",
        version: "1",
        machine: "x86_64",
        size: wheel.len() as u64,
        sha256: leak(sha256_hex(wheel)),
        path: WHEEL_PATH,
    }));
    Recipe {
        arch: "amd64",
        debs: vec![netbase],
        wheel: pin,
        ldconfig: netbase,
    }
}

async fn files_host(netbase: Answer, wheel: &[u8]) -> Host {
    serve(HashMap::from([
        (format!("/{NETBASE_PATH}"), netbase),
        (format!("/{WHEEL_PATH}"), Answer::ok(wheel)),
    ]))
    .await
}

fn sources(host: &Host) -> Sources {
    Sources {
        debian_mirror: host.url.clone(),
        pypi_files: host.url.clone(),
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// What is in `parent` besides finished trees (temporaries, leftovers).
fn leftovers(data: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(data.join(PARENT)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[tokio::test]
async fn the_tree_is_made_once_read_only_then_reused_without_a_download() {
    let wheel = demo_wheel();
    let host = files_host(Answer::ok(NETBASE), &wheel).await;
    let (data, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let recipe = tiny_recipe(&wheel);
    let made = python_root_in(
        data.path(),
        cache.path(),
        &recipe,
        &sources(&host),
        BOOTSTRAP,
        Verify::Quick,
    )
    .await
    .unwrap();
    assert!(made.made);
    let root = &made.root;
    let services = std::fs::read_to_string(root.join("etc/services")).unwrap();
    assert!(services.contains("http\t\t80/tcp"));
    assert_eq!(mode(&root.join("etc/services")), 0o444);
    assert_eq!(
        std::fs::read_to_string(root.join(BOOTSTRAP_IN_ROOT)).unwrap(),
        BOOTSTRAP
    );
    assert_eq!(mode(&root.join(BOOTSTRAP_IN_ROOT)), 0o444);
    let module = root.join(recipe::SITE_PACKAGES).join("demo/__init__.py");
    assert_eq!(std::fs::read(&module).unwrap(), b"ANSWER = 42\n");
    assert_eq!(
        std::fs::read_link(root.join("usr/bin/python3")).unwrap(),
        Path::new("python3.14")
    );
    assert_eq!(
        std::fs::read_link(root.join("lib")).unwrap(),
        Path::new("usr/lib")
    );
    // No directory takes new entries: the tree is read-only.
    assert_eq!(mode(&root.join("etc")), 0o555);
    assert!(root.join("usr/share/doc").symlink_metadata().is_err());
    let hits = host.hits();
    assert_eq!(hits, 2);
    let again = python_root_in(
        data.path(),
        cache.path(),
        &recipe,
        &sources(&host),
        BOOTSTRAP,
        Verify::Full,
    )
    .await
    .unwrap();
    assert!(!again.made);
    assert_eq!(again.root, made.root);
    assert_eq!(host.hits(), hits, "a reused tree downloads nothing");
    assert!(
        leftovers(data.path()).is_empty(),
        "{:?}",
        leftovers(data.path())
    );
}

#[tokio::test]
async fn another_bootstrap_makes_another_tree() {
    let wheel = demo_wheel();
    let host = files_host(Answer::ok(NETBASE), &wheel).await;
    let (data, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let recipe = tiny_recipe(&wheel);
    let first = python_root_in(
        data.path(),
        cache.path(),
        &recipe,
        &sources(&host),
        BOOTSTRAP,
        Verify::Quick,
    )
    .await
    .unwrap();
    let second = python_root_in(
        data.path(),
        cache.path(),
        &recipe,
        &sources(&host),
        "print(2)\n",
        Verify::Quick,
    )
    .await
    .unwrap();
    assert!(second.made);
    assert_ne!(first.root, second.root);
    assert_ne!(first.key, second.key);
}

/// Makes `path` writable so a test can tamper with it (as another program
/// of the same user could).
fn unlock(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn a_tree_changed_on_disk_is_made_again() {
    let wheel = demo_wheel();
    let host = files_host(Answer::ok(NETBASE), &wheel).await;
    let (data, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let recipe = tiny_recipe(&wheel);
    let src = sources(&host);
    let made = python_root_in(
        data.path(),
        cache.path(),
        &recipe,
        &src,
        BOOTSTRAP,
        Verify::Quick,
    )
    .await
    .unwrap();
    // A file rewritten with other bytes of the same length: only Full sees it.
    let bootstrap = made.root.join(BOOTSTRAP_IN_ROOT);
    unlock(&bootstrap);
    std::fs::write(&bootstrap, BOOTSTRAP.replace("worker", "WORKER")).unwrap();
    std::fs::set_permissions(&bootstrap, std::fs::Permissions::from_mode(0o444)).unwrap();
    let home = made.root.parent().unwrap();
    assert!(check(home, &made.key, Verify::Quick).is_ok());
    let why = check(home, &made.key, Verify::Full).unwrap_err();
    assert!(why.contains(BOOTSTRAP_IN_ROOT), "{why}");
    let again = python_root_in(
        data.path(),
        cache.path(),
        &recipe,
        &src,
        BOOTSTRAP,
        Verify::Full,
    )
    .await
    .unwrap();
    assert!(again.made, "the changed tree was made again");
    assert_eq!(
        std::fs::read_to_string(again.root.join(BOOTSTRAP_IN_ROOT)).unwrap(),
        BOOTSTRAP
    );
    // A file added to the tree is seen by the quick check.
    unlock(&again.root.join("etc"));
    std::fs::write(again.root.join("etc/planted"), b"x").unwrap();
    std::fs::set_permissions(
        again.root.join("etc"),
        std::fs::Permissions::from_mode(0o555),
    )
    .unwrap();
    let why = check(home, &again.key, Verify::Quick).unwrap_err();
    assert!(why.contains("paths on disk"), "{why}");
    // A file made writable is too (its mode differs).
    let third = python_root_in(
        data.path(),
        cache.path(),
        &recipe,
        &src,
        BOOTSTRAP,
        Verify::Quick,
    )
    .await
    .unwrap();
    assert!(third.made);
    unlock(&third.root.join("etc/services"));
    assert!(
        check(home, &third.key, Verify::Quick)
            .unwrap_err()
            .contains("etc/services")
    );
    assert!(
        leftovers(data.path()).is_empty(),
        "{:?}",
        leftovers(data.path())
    );
}

#[tokio::test]
async fn a_tampered_download_leaves_no_tree() {
    let wheel = demo_wheel();
    let mut tampered = NETBASE.to_vec();
    tampered[NETBASE.len() / 2] ^= 0xff;
    let host = files_host(Answer::ok(&tampered), &wheel).await;
    let (data, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let recipe = tiny_recipe(&wheel);
    let err = python_root_in(
        data.path(),
        cache.path(),
        &recipe,
        &sources(&host),
        BOOTSTRAP,
        Verify::Quick,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, ImageError::Fetch(crate::FetchError::Digest { .. })),
        "{err}"
    );
    let parent = data.path().join(PARENT);
    assert!(!parent.exists() || std::fs::read_dir(&parent).unwrap().count() == 0);
}

#[tokio::test]
async fn two_gateways_making_it_at_once_end_with_one_tree() {
    let wheel = demo_wheel();
    let host = files_host(Answer::ok(NETBASE), &wheel).await;
    let (data, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let recipe = tiny_recipe(&wheel);
    let src = sources(&host);
    let (a, b) = tokio::join!(
        python_root_in(
            data.path(),
            cache.path(),
            &recipe,
            &src,
            BOOTSTRAP,
            Verify::Quick
        ),
        python_root_in(
            data.path(),
            cache.path(),
            &recipe,
            &src,
            BOOTSTRAP,
            Verify::Quick
        ),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.root, b.root);
    assert!(a.made || b.made);
    assert!(check(a.root.parent().unwrap(), &a.key, Verify::Full).is_ok());
    let trees: Vec<_> = std::fs::read_dir(data.path().join(PARENT))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(trees.len(), 1, "one tree and no temporaries left");
}

#[test]
fn a_path_below_a_link_is_refused_and_nothing_is_written_outside() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut root = RootFs::default();
    root.symlink("etc", outside.path().to_str().unwrap());
    root.file("etc/passwd", 0o644, b"evil".to_vec());
    let err = root.write_to(&dir.path().join("tree")).unwrap_err();
    assert!(matches!(err, crate::UnpackError::BelowLink { .. }), "{err}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn a_stale_temporary_of_a_dead_process_is_removed() {
    let parent = tempfile::tempdir().unwrap();
    // Pid 0 is never a process of ours: /proc/0 does not exist.
    let stale = parent.path().join(".tmp-0-abc");
    std::fs::create_dir_all(stale.join("root/etc")).unwrap();
    std::fs::set_permissions(stale.join("root"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let live = parent
        .path()
        .join(format!(".tmp-{}-abc", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    remove_stale_temporaries(parent.path());
    assert!(!stale.exists());
    assert!(live.exists(), "a temporary of a live process is kept");
}
