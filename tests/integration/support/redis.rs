//! A `redis-server` of the test's own, for the tests that share sessions
//! between gateways.

use std::process::Stdio;
use std::time::{Duration, Instant};

/// A `redis-server` of our own on a free loopback port, no persistence,
/// stopped on drop.
pub struct Redis {
    pub port: u16,
    child: Option<std::process::Child>,
}

impl Redis {
    /// `None` (with a SKIPPED line) when redis-server is missing, unless `CI=true`.
    pub fn start_or_skip() -> Option<Self> {
        let present = std::process::Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !present {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true requires redis-server on PATH"
            );
            eprintln!("SKIPPED: redis-server not found (apt-get install redis-server)");
            return None;
        }
        let mut redis = Self {
            port: super::free_port(),
            child: None,
        };
        redis.start();
        Some(redis)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn start(&mut self) {
        let port = self.port.to_string();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port, "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` to the running server (`SIGSTOP` pauses it, `SIGCONT`
    /// resumes it).
    pub fn signal(&self, signal: i32) {
        let pid = self.child.as_ref().expect("running").id();
        let pid = i32::try_from(pid).expect("pid");
        // SAFETY: kill(2) on our own child's pid, which is not reaped yet.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill -{signal}");
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
