//! The CPython root file system made from the real pinned .debs and wheel,
//! then run: CPython 3.14 starts inside it under bubblewrap and imports
//! websockets, with the tree mounted read-only as `/`.
//!
//! Needs the recipe's downloads in the cache (`codemcp setup docker` or a
//! first Docker escalation fills it) so it never leaves the machine, and
//! `bwrap` for the run; without them it prints why and passes.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::process::Command;

use codemcp_image::rootfs::{BOOTSTRAP_IN_ROOT, Verify, python_root_in};
use codemcp_image::{Sources, cache_dir, fetch, recipe};

/// Every download of this machine's recipe already in the cache.
fn all_cached() -> bool {
    let Some(recipe) = recipe::for_this_machine() else {
        return false;
    };
    let cache = cache_dir();
    recipe::downloads(recipe, &Sources::default(), false)
        .iter()
        .all(|item| fetch::is_cached(&cache, item))
}

#[tokio::test]
async fn cpython_starts_in_the_read_only_root_and_imports_websockets() {
    if !all_cached() {
        eprintln!(
            "SKIPPED: the recipe's downloads are not all in {}",
            cache_dir().display()
        );
        return;
    }
    let recipe = recipe::for_this_machine().unwrap();
    let data = tempfile::tempdir().unwrap();
    // Sources nobody answers: everything must come from the cache.
    let offline = Sources {
        debian_mirror: "http://127.0.0.1:9".into(),
        pypi_files: "http://127.0.0.1:9".into(),
    };
    let started = std::time::Instant::now();
    let made = python_root_in(
        data.path(),
        &cache_dir(),
        recipe,
        &offline,
        "print('bootstrap')\n",
        Verify::Quick,
    )
    .await
    .unwrap();
    let made_in = started.elapsed();
    assert!(made.made);
    let started = std::time::Instant::now();
    let again = python_root_in(
        data.path(),
        &cache_dir(),
        recipe,
        &offline,
        "print('bootstrap')\n",
        Verify::Quick,
    )
    .await
    .unwrap();
    eprintln!(
        "made in {made_in:?}, reused (quick check) in {:?}",
        started.elapsed()
    );
    assert!(!again.made);
    assert!(made.root.join(BOOTSTRAP_IN_ROOT).is_file());
    if Command::new("bwrap").arg("--version").output().is_err() {
        eprintln!("SKIPPED the run: no bwrap");
        return;
    }
    let probe = "import sys, os, websockets, websockets.asyncio.client; \
                 print(sys.version.split()[0]); \
                 print(open('/opt/codemcp/bootstrap.py').read().strip()); \
                 print(os.access('/usr/lib', os.W_OK))";
    let out = Command::new("bwrap")
        .arg("--ro-bind")
        .arg(&made.root)
        .arg("/")
        .args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"])
        .args(["--unshare-all", "--die-with-parent", "--clearenv"])
        .args(["--setenv", "PYTHONDONTWRITEBYTECODE", "1"])
        .args(["/usr/bin/python3", "-c", probe])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [recipe::PYTHON_VERSION, "print('bootstrap')", "False"]
    );
}
