//! The stores under test: how to open each, raw access to what they stored,
//! and a `redis-server` of our own.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemcp_store::{
    Handle, SealKey, SessionStore, Snapshot, SnapshotKind, StoreLimits, StoreSpec, open,
};

const KEY: &str = "test-session-key-0123456789abcdefghijkl";

pub fn limits(idle_ms: u64, lease_ms: u64) -> StoreLimits {
    StoreLimits {
        idle: Duration::from_millis(idle_ms),
        max_snapshot_bytes: 64 << 10,
        lease_ttl: Duration::from_millis(lease_ms),
        // Above the frozen-Redis tests' bounds, which check Redis's own.
        call_timeout: Duration::from_secs(2),
    }
}

pub fn key() -> SealKey {
    SealKey::from_setting(Some(KEY), std::path::Path::new("/nonexistent")).expect("key")
}

pub fn snap(text: &str) -> Snapshot {
    Snapshot {
        kind: SnapshotKind::Monty,
        payload: text.as_bytes().to_vec(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Memory,
    File,
    Redis,
}

/// A store under test, plus raw access to what it stored.
pub struct Fixture {
    pub store: Arc<dyn SessionStore>,
    pub limits: StoreLimits,
    pub spec: StoreSpec,
    pub redis: Option<RedisServer>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    pub async fn new(kind: Kind, limits: StoreLimits) -> Option<Self> {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut redis = None;
        let spec = match kind {
            Kind::Memory => StoreSpec::Memory,
            Kind::File => StoreSpec::File(dir.path().join("state/sessions.sqlite3")),
            Kind::Redis => {
                let server = RedisServer::start_or_skip()?;
                let spec = StoreSpec::Redis(server.url());
                redis = Some(server);
                spec
            }
        };
        let store = open(&spec, key(), limits).expect("open store");
        Some(Self {
            store,
            limits,
            spec,
            redis,
            _dir: dir,
        })
    }

    /// The same store opened again, as a second gateway would.
    pub fn reopen(&self, key: SealKey) -> Arc<dyn SessionStore> {
        open(&self.spec, key, self.limits).expect("second open")
    }

    pub fn file(&self) -> Option<PathBuf> {
        match &self.spec {
            StoreSpec::File(path) => Some(path.clone()),
            _ => None,
        }
    }

    fn sql(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(self.file().expect("file store")).expect("sqlite");
        conn.busy_timeout(Duration::from_secs(2))
            .expect("busy timeout");
        conn
    }

    fn raw_redis(&self) -> redis::Connection {
        let url = self.redis.as_ref().expect("redis store").url();
        redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("raw redis")
    }

    /// The stored bytes under `handle`, bypassing the store.
    pub fn raw_get(&self, handle: &Handle) -> Vec<u8> {
        if self.file().is_some() {
            let sql = "SELECT record FROM records WHERE handle = ?1";
            return self
                .sql()
                .query_row(sql, [handle.as_str()], |r| r.get(0))
                .expect("row");
        }
        let key = format!("codemcp:s:{{{handle}}}");
        redis::cmd("HGET")
            .arg(key)
            .arg("rec")
            .query(&mut self.raw_redis())
            .expect("HGET")
    }

    /// Writes `record` as the stored bytes of `handle` (version 1), bypassing the store.
    pub fn raw_put(&self, handle: &Handle, record: &[u8]) {
        if self.file().is_some() {
            let conn = self.sql();
            let far_future_ms = 32_503_680_000_000_i64;
            let session =
                "INSERT OR REPLACE INTO sessions (handle, version, expires_at) VALUES (?1, 1, ?2)";
            conn.execute(session, rusqlite::params![handle.as_str(), far_future_ms])
                .expect("session");
            let sql = "INSERT OR REPLACE INTO records (handle, record) VALUES (?1, ?2)";
            conn.execute(sql, rusqlite::params![handle.as_str(), record])
                .expect("record");
            return;
        }
        let key = format!("codemcp:s:{{{handle}}}");
        let _: i64 = redis::cmd("HSET")
            .arg(&key)
            .arg("rec")
            .arg(record)
            .arg("ver")
            .arg("1")
            .query(&mut self.raw_redis())
            .expect("HSET");
    }

    /// Puts `record` back as the stored bytes of `handle`, leaving the
    /// store's version of the session as it is (a replayed record).
    pub fn raw_replace_record(&self, handle: &Handle, record: &[u8]) {
        if self.file().is_some() {
            let sql = "UPDATE records SET record = ?2 WHERE handle = ?1";
            let changed = self
                .sql()
                .execute(sql, rusqlite::params![handle.as_str(), record])
                .expect("record");
            assert_eq!(changed, 1);
            return;
        }
        let key = format!("codemcp:s:{{{handle}}}");
        let _: i64 = redis::cmd("HSET")
            .arg(&key)
            .arg("rec")
            .arg(record)
            .query(&mut self.raw_redis())
            .expect("HSET");
    }

    /// (sessions stored, bytes used): file and WAL sizes, or Redis's `used_memory`.
    pub fn footprint(&self) -> (u64, u64) {
        if let Some(path) = self.file() {
            let rows: i64 = self
                .sql()
                .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
                .expect("count");
            let size = |p: PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
            let wal = PathBuf::from(format!("{}-wal", path.display()));
            return (rows.unsigned_abs(), size(path) + size(wal));
        }
        let mut conn = self.raw_redis();
        let keys: u64 = redis::cmd("DBSIZE").query(&mut conn).expect("DBSIZE");
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query(&mut conn)
            .expect("INFO");
        let used = info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("used_memory");
        (keys, used)
    }
}

/// A `redis-server` of our own on a free loopback port, stopped on drop.
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    pub fn start_or_skip() -> Option<Self> {
        let found = Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true requires the Redis tests, but redis-server is not on PATH (.ci/run installs it)"
            );
            eprintln!(
                "SKIPPED: redis-server not found; to run the Redis tests: apt-get install redis-server"
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let mut server = Self { port, child: None };
        server.start();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    pub fn start(&mut self) {
        let port = self.port.to_string();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn signal(&self, signal: i32) {
        let pid = self.child.as_ref().expect("running").id();
        // SAFETY: kill(2) on our own child's pid; it has not been reaped yet.
        assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
