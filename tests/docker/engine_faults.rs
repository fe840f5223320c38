//! An engine that stops (the test stops the machine's shared engine, so it is
//! ignored by default and run alone) or hangs under a running gateway: the
//! run in flight ends with a clear error, Monty runs go on, and Docker runs
//! recover when the engine is back.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{self, Setup};
use crate::{DOCKER_ONLY, containers_of, docker};

/// The engine `scripts/docker-engine.sh` started: dockerd's pid from its pid
/// file. Stopping it needs root.
fn hand_started_dockerd() -> Result<i32, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("stopping the Docker engine needs root".into());
    }
    let pid: i32 = std::fs::read_to_string("/var/run/docker.pid")
        .map_err(|e| format!("no /var/run/docker.pid ({e})"))?
        .trim()
        .parse()
        .map_err(|e| format!("/var/run/docker.pid: {e}"))?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm.trim() != "dockerd" {
        return Err(format!("pid {pid} from /var/run/docker.pid is not dockerd"));
    }
    Ok(pid)
}

/// Starts the engine again when dropped, however the test ends: every other
/// Docker test on this machine needs it.
struct RestartEngine {
    armed: bool,
}

impl RestartEngine {
    fn restart(&mut self) -> Result<(), String> {
        self.armed = false;
        let output = std::process::Command::new(support::repo().join("scripts/docker-engine.sh"))
            .output()
            .map_err(|e| format!("scripts/docker-engine.sh: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "scripts/docker-engine.sh failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }
}

impl Drop for RestartEngine {
    fn drop(&mut self) {
        if self.armed
            && let Err(e) = self.restart()
        {
            eprintln!("could not restart the Docker engine: {e}");
        }
    }
}

/// Bound on any one call in the engine-stop test: a hang fails it.
const NO_HANG: Duration = Duration::from_secs(30);

async fn exec_bounded(client: &support::Client, code: &str) -> support::Ran {
    tokio::time::timeout(NO_HANG, client.exec(code))
        .await
        .unwrap_or_else(|_| panic!("`{code}` got no answer within {NO_HANG:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "stops the shared Docker engine; scripts/test.sh runs it alone, after the other tests"]
async fn a_stopped_engine_gives_a_clear_error_and_runs_recover_when_it_is_back() {
    let Some(docker) = docker().await else {
        return;
    };
    let dockerd = match hand_started_dockerd() {
        Ok(pid) => pid,
        Err(reason) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true requires this test, but {reason}"
            );
            eprintln!("SKIPPED: {reason}");
            return;
        }
    };
    let setup = Setup::new(json!({}));
    let isolated = setup.stdio(DOCKER_ONLY).await;
    let escalating = setup.stdio(&[("CODEMCP_FALLBACK", "docker")]).await;
    assert_eq!(exec_bounded(&isolated, "kept = 1\nkept").await.result(), 1);
    let escalate = "import statistics\nstatistics.mean([1, 3])";
    let ran = exec_bounded(&escalating, escalate).await;
    assert_eq!(ran.result(), 2, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-docker");

    // A run in flight when the engine stops.
    let busy = setup.stdio(DOCKER_ONLY).await;
    assert_eq!(exec_bounded(&busy, "1").await.result(), 1);
    let sleeper =
        busy.exec_args(json!({"code": "import time\ntime.sleep(20)", "timeout_ms": 25000}));

    // Stop the engine as one stops the dockerd scripts/docker-engine.sh started.
    let mut guard = RestartEngine { armed: true };
    let stop = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let stopping = Instant::now();
        // SAFETY: plain kill(2) on the pid read from dockerd's pid file.
        let killed = unsafe { libc::kill(dockerd, libc::SIGTERM) };
        assert_eq!(killed, 0, "kill dockerd");
        while support::process_alive(u64::try_from(dockerd).unwrap_or_default()) {
            assert!(
                stopping.elapsed() < Duration::from_secs(30),
                "dockerd did not stop within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stopping.elapsed()
    };
    let run_started = Instant::now();
    let (in_flight, stop_took) = tokio::join!(tokio::time::timeout(NO_HANG, sleeper), stop);
    let in_flight_took = run_started.elapsed();
    let in_flight = in_flight.expect("the run in flight ends");
    assert!(
        in_flight
            .error_message()
            .contains("the Docker engine stopped")
            && in_flight.error_message().contains("state was lost"),
        "{}",
        in_flight.text
    );
    assert!(
        in_flight_took < Duration::from_secs(15),
        "{in_flight_took:?}"
    );
    assert!(docker.ping().await.is_err(), "the engine still answers");

    // Runs that need a container: a clear error at once, every time.
    let mut to_error = Vec::new();
    for code in ["kept", "1 + 1"] {
        let started = Instant::now();
        let ran = exec_bounded(&isolated, code).await;
        to_error.push(started.elapsed());
        assert!(ran.is_error, "{}", ran.text);
        let message = ran.error_message();
        assert!(
            message.contains("no Docker engine answers")
                && message.contains("scripts/docker-engine.sh"),
            "{message}"
        );
    }
    // The escalated session: the same error, then it is back on Monty (its
    // CPython state went with the container).
    let ran = exec_bounded(&escalating, escalate).await;
    assert!(
        ran.error_message().contains("no Docker engine answers"),
        "{}",
        ran.text
    );
    let started = Instant::now();
    let ran = exec_bounded(&escalating, "y = sum(range(10))\ny").await;
    let monty_took = started.elapsed();
    assert_eq!(ran.result(), 45, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "monty");
    // A new escalation fails the same way and leaves the session on Monty.
    let ran = exec_bounded(&escalating, escalate).await;
    assert!(
        ran.error_message().contains("no Docker engine answers"),
        "{}",
        ran.text
    );
    let ran = exec_bounded(&escalating, "y + 1").await;
    assert_eq!(ran.result(), 46, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "monty");

    // The engine comes back: the next run gets a new container.
    let restarting = Instant::now();
    let restarted = tokio::task::spawn_blocking(move || guard.restart())
        .await
        .expect("restart task");
    restarted.expect("the Docker engine restarts");
    let engine_back = restarting.elapsed();
    let started = Instant::now();
    let ran = exec_bounded(&isolated, "1 + 1").await;
    let recovered = started.elapsed();
    assert_eq!(ran.result(), 2, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-docker");
    let ran = exec_bounded(&escalating, escalate).await;
    assert_eq!(ran.result(), 2, "{}", ran.text);
    println!(
        "engine stop: dockerd gone after {} ms; the run in flight ended after {} ms ({}); \
         error after {:?} ms; Monty run meanwhile {} ms; \
         engine answering again after {} ms; first Docker run after that {} ms",
        stop_took.as_millis(),
        in_flight_took.as_millis(),
        in_flight.error_message(),
        to_error.iter().map(Duration::as_millis).collect::<Vec<_>>(),
        monty_took.as_millis(),
        engine_back.as_millis(),
        recovered.as_millis()
    );
    assert!(to_error.iter().all(|t| *t < Duration::from_secs(12)));
}

/// A Unix-socket proxy to the real engine that the test can freeze: frozen,
/// it still accepts connections but passes nothing on, like a hung dockerd.
struct EngineProxy {
    path: std::path::PathBuf,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl EngineProxy {
    fn start(dir: &std::path::Path) -> Self {
        use std::sync::atomic::Ordering;
        let path = dir.join("docker-proxy.sock");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind the proxy socket");
        let frozen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = frozen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(engine) = tokio::net::UnixStream::connect("/var/run/docker.sock").await
                else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (engine_read, engine_write) = engine.into_split();
                for (mut from, mut to) in [
                    (
                        Box::new(client_read) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
                        Box::new(engine_write) as Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
                    ),
                    (Box::new(engine_read), Box::new(client_write)),
                ] {
                    let flag = flag.clone();
                    tokio::spawn(async move {
                        use tokio::io::{AsyncReadExt, AsyncWriteExt};
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(n) = from.read(&mut buf).await {
                            while flag.load(Ordering::SeqCst) {
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            if n == 0 || to.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    });
                }
            }
        });
        Self { path, frozen }
    }

    fn freeze(&self, frozen: bool) {
        self.frozen
            .store(frozen, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_engine_gives_an_error_in_bounded_time_and_runs_recover() {
    let Some(docker) = docker().await else {
        return;
    };
    if !std::path::Path::new("/var/run/docker.sock").exists() {
        println!("SKIPPED: the engine is not on /var/run/docker.sock");
        return;
    }
    let setup = Setup::new(json!({}));
    let proxy = EngineProxy::start(setup.dir.path());
    let docker_host = format!("unix://{}", proxy.path.display());
    let client = setup
        .stdio(&[
            ("CODEMCP_ISOLATION", "DOCKER"),
            ("DOCKER_HOST", &docker_host),
        ])
        .await;
    let pid = client.pid.expect("gateway pid");
    assert_eq!(exec_bounded(&client, "1 + 1").await.result(), 2);

    // The engine hangs; the session's worker and the spare die, so the next
    // run needs a new container from an engine that never answers.
    proxy.freeze(true);
    for id in containers_of(&docker, pid).await {
        let _ = docker
            .kill_container(&id, None::<bollard::query_parameters::KillContainerOptions>)
            .await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let ran = exec_bounded(&client, "1 + 1").await;
    let to_error = started.elapsed();
    assert!(
        ran.error_message().contains("no Docker engine answers")
            && ran.error_message().contains("no answer within"),
        "{}",
        ran.text
    );
    assert!(to_error < Duration::from_secs(15), "{to_error:?}");

    proxy.freeze(false);
    let started = Instant::now();
    let ran = exec_bounded(&client, "1 + 1").await;
    assert_eq!(ran.result(), 2, "{}", ran.text);
    println!(
        "hung engine: error after {} ms; first run once it answers {} ms",
        to_error.as_millis(),
        started.elapsed().as_millis()
    );
}
