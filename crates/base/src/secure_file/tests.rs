#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use super::*;

const SECRET: Rules = Rules {
    what: "the test secret",
    max_bytes: 64,
    follow_symlink: false,
    owner: Owner::Me,
    private_writes: true,
};

fn file(dir: &Path, mode: u32) -> PathBuf {
    let path = dir.join("secret");
    std::fs::write(&path, b"hello").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn a_private_regular_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), 0o600);
    assert_eq!(read_trusted(&path, &SECRET).unwrap(), b"hello");
    let missing = read_trusted(&dir.path().join("none"), &SECRET).unwrap_err();
    assert!(missing.is_missing(), "{missing}");
}

#[test]
fn a_file_writable_by_group_or_others_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [0o620, 0o602, 0o666] {
        let path = file(dir.path(), mode);
        let err = read_trusted(&path, &SECRET).unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
    }
}

#[test]
fn a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let started = Instant::now();
    let err = read_trusted(&path, &SECRET).unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.contains("a FIFO, not a regular file"), "{err}");
}

#[test]
fn a_device_or_a_large_file_is_not_read() {
    let anyone = Rules {
        follow_symlink: true,
        owner: Owner::Anyone,
        private_writes: false,
        ..SECRET
    };
    let err = read_trusted(Path::new("/dev/zero"), &anyone)
        .unwrap_err()
        .to_string();
    assert!(err.contains("a character device"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::write(&big, [b'x'; 65]).unwrap();
    let err = read_trusted(&big, &anyone).unwrap_err().to_string();
    assert!(err.contains("65 bytes"), "{err}");
}

#[test]
fn a_symlink_is_refused_unless_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), 0o600);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let err = read_trusted(&link, &SECRET).unwrap_err().to_string();
    assert!(err.contains("is a symlink"), "{err}");
    let follow = Rules {
        follow_symlink: true,
        ..SECRET
    };
    assert_eq!(read_trusted(&link, &follow).unwrap(), b"hello");
}

#[test]
fn a_file_or_directory_of_another_user_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        return; // only root can hand a file to someone else
    }
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), 0o600);
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    let err = read_trusted(&path, &SECRET).unwrap_err().to_string();
    assert!(err.contains("owned by uid 65534"), "{err}");
    std::os::unix::fs::chown(dir.path(), Some(65534), None).unwrap();
    let err = check_dir(dir.path(), "the test dir")
        .unwrap_err()
        .to_string();
    assert!(err.contains("owned by uid 65534"), "{err}");
}

#[test]
fn a_directory_others_may_write_is_refused_unless_sticky() {
    let dir = tempfile::tempdir().unwrap();
    check_dir(dir.path(), "the test dir").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = check_dir(dir.path(), "the test dir")
        .unwrap_err()
        .to_string();
    assert!(err.contains("chmod go-w"), "{err}");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    check_dir(dir.path(), "the test dir").unwrap();
}
