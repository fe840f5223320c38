//! The file store and the processes around it: a writer killed mid-lease, a
//! write lock held elsewhere, and key files that are not safe to read.

#[allow(clippy::wildcard_imports)]
use super::*;

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
        .args(["file_process::file_writer_child", "--exact", "--nocapture"])
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
