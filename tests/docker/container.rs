//! The Docker placement of the CPython worker: escalation into a container,
//! the container's lockdown (identity, capabilities, read-only root, no route
//! out), limits that kill a worker without hurting the gateway, the container
//! lifecycle (killed from outside, stale containers, gateway exit), a missing
//! engine or image, and the CPython the container runs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bollard::models::ContainerCreateBody;
use bollard::query_parameters::InspectContainerOptions;
use serde_json::json;

use crate::support::{self, Setup, everything};
use crate::{DOCKER_ONLY, containers_of, docker, image};

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

#[tokio::test]
async fn escalation_runs_in_a_container_with_cpythons_answer() {
    let Some(_docker) = docker().await else {
        return;
    };
    let setup = Setup::new(json!({"everything": everything()}));
    // auto is the default: Docker when an engine answers and the image exists.
    let client = setup.stdio(&[("CODEMCP_FALLBACK", "auto")]).await;
    let started = Instant::now();
    let ran = client
        .exec("import statistics\nstatistics.mean([1, 2, 3, 4])")
        .await;
    let cold = started.elapsed();
    assert_eq!(ran.result(), 2.5, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-docker", "{}", ran.text);
    assert!(
        ran.structured["escalated"]
            .as_str()
            .is_some_and(|r| r.contains("statistics")),
        "{}",
        ran.structured
    );
    println!(
        "cold first escalated call (container start included): {} ms",
        cold.as_millis()
    );
    for (code, expected) in [
        (
            "class A:\n    def f(self):\n        return 'a'\nclass B(A):\n    pass\nB().f()",
            json!("a"),
        ),
        ("def gen():\n    yield 1\n    yield 2\nsum(gen())", json!(3)),
        (
            "from collections import Counter\nCounter('abca').most_common(1)",
            json!([["a", 2]]),
        ),
        (
            "import enum\nclass C(enum.Enum):\n    RED = 1\nC.RED.name",
            json!("RED"),
        ),
        (
            "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\n@dataclass\nclass Q(P):\n    y: int = 2\nQ(1).x + Q(1).y",
            json!(3),
        ),
    ] {
        let ran = client.exec(code).await;
        assert_eq!(ran.result(), &expected, "{code}: {}", ran.text);
        assert_eq!(ran.structured["engine"], "cpython-docker", "{code}");
    }
    let ran = client
        .exec("class S(dict):\n    pass\nS(v=everything_get_sum(a=2, b=3))['v']")
        .await;
    assert_eq!(ran.result(), "The sum of 2 and 3 is 5.", "{}", ran.text);

    let mut plain = Vec::new();
    let mut one_tool = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        assert_eq!(client.exec("1 + 1").await.result(), 2);
        plain.push(started.elapsed());
        let started = Instant::now();
        let ran = client.exec("everything_get_sum(a=1, b=2)").await;
        one_tool.push(started.elapsed());
        assert_eq!(ran.result(), "The sum of 1 and 2 is 3.", "{}", ran.text);
    }
    println!(
        "warm Docker CPython, median of 15: `1 + 1` {:.1} ms, one tool call {:.1} ms",
        median_ms(plain),
        median_ms(one_tool)
    );
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one container, every lock checked in turn
async fn the_container_is_locked_down() {
    let Some(docker) = docker().await else {
        return;
    };
    let setup = Setup::new(json!({}));
    let client = setup.stdio(DOCKER_ONLY).await;
    // A host service on loopback that the worker must not reach.
    let decoy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    decoy.set_nonblocking(true).expect("nonblocking");
    let port = decoy.local_addr().expect("addr").port();
    let code = format!(
        r#"
import os, socket
status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())
def attempt(f):
    try:
        f()
        return 'ok'
    except OSError as e:
        return f'{{type(e).__name__}}: {{e.strerror or e}}'
def write_root():
    with open('/codemcp-probe', 'w') as f:
        f.write('x')
def write_tmp():
    with open('/tmp/probe', 'w') as f:
        f.write('x')
    os.remove('/tmp/probe')
def connect(addr):
    socket.create_connection(addr, timeout=3).close()
control = os.environ['CODEMCP_CONTROL_URL']
bridge = control.split('//')[1].rsplit(':', 1)[0]
result = {{
    'uid': os.getuid(), 'gid': os.getgid(),
    'cap_eff': status['CapEff'].strip(), 'cap_bnd': status['CapBnd'].strip(),
    'no_new_privs': status['NoNewPrivs'].strip(),
    'write_root': attempt(write_root), 'write_tmp': attempt(write_tmp),
    'tmp_mount': [l for l in open('/proc/mounts').read().splitlines() if l.split()[1] == '/tmp'],
    'routes': [l.split()[1] for l in open('/proc/net/route').read().splitlines()[1:]],
    'control': control,
    'loopback': attempt(lambda: connect(('127.0.0.1', {port}))),
    'host_on_bridge': attempt(lambda: connect((bridge, {port}))),
}}
"#
    );
    let ran = client.exec(&code).await;
    assert!(!ran.is_error, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-docker");
    let r = ran.result();
    println!("inside the worker container: {r}");
    assert_eq!(r["uid"], 65534, "{r}");
    assert_eq!(r["gid"], 65534, "{r}");
    assert_eq!(r["cap_eff"], "0000000000000000", "{r}");
    assert_eq!(r["cap_bnd"], "0000000000000000", "{r}");
    assert_eq!(r["no_new_privs"], "1", "{r}");
    assert!(
        r["write_root"]
            .as_str()
            .is_some_and(|w| w.contains("Read-only file system")),
        "{r}"
    );
    assert_eq!(r["write_tmp"], "ok", "{r}");
    assert!(r["tmp_mount"].to_string().contains("noexec"), "{r}");
    let routes = r["routes"].as_array().expect("routes");
    assert!(!routes.is_empty(), "{r}");
    if running_as_root() {
        assert!(
            !routes.iter().any(|d| d == "00000000"),
            "a default route: {r}"
        );
    } else {
        println!(
            "not root: the default route Docker < 26 adds on internal networks stays (see docs/engines.md)"
        );
    }
    assert_ne!(r["loopback"], "ok", "{r}");
    assert_ne!(r["host_on_bridge"], "ok", "{r}");
    assert!(
        decoy.accept().is_err(),
        "the loopback decoy got a connection"
    );
    // The control channel listens on the worker network's gateway only.
    let control = r["control"].as_str().expect("control url");
    let control_port: u16 = control
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("control port");
    assert!(!control.contains("127.0.0.1") && !control.contains("0.0.0.0"));
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", control_port)).is_err(),
        "the control channel answers on loopback"
    );
    // And the container carries the hardening flags.
    let pid = client.pid.expect("gateway pid");
    let ids = containers_of(&docker, pid).await;
    assert!(!ids.is_empty());
    // A spare being replaced can vanish between the listing and the inspection.
    let mut inspected = None;
    for id in &ids {
        if let Ok(inspect) = docker
            .inspect_container(id, None::<InspectContainerOptions>)
            .await
        {
            inspected = Some(inspect);
            break;
        }
    }
    let inspect = inspected.expect("inspect one of the gateway's containers");
    let host = inspect.host_config.expect("host config");
    assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
    assert_eq!(host.readonly_rootfs, Some(true));
    assert!(
        host.security_opt
            .unwrap_or_default()
            .iter()
            .any(|o| o.starts_with("no-new-privileges"))
    );
    assert_eq!(host.memory, Some(512 << 20));
    assert_eq!(host.memory_swap, Some(512 << 20));
    assert_eq!(host.pids_limit, Some(128));
    assert_eq!(host.nano_cpus, Some(1_000_000_000));
    assert_eq!(
        inspect.config.and_then(|c| c.user).as_deref(),
        Some("65534:65534")
    );
    let network = docker
        .inspect_network(
            "codemcp-workers",
            None::<bollard::query_parameters::InspectNetworkOptions>,
        )
        .await
        .expect("worker network");
    assert_eq!(network.internal, Some(true));
}

/// Whether the gateway (started by this process) runs as root.
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn an_allocation_loop_ends_with_a_memory_error_and_the_gateway_survives() {
    let Some(_docker) = docker().await else {
        return;
    };
    let setup = Setup::new(json!({}));
    let client = setup
        .stdio(&[
            ("CODEMCP_ISOLATION", "DOCKER"),
            ("CODEMCP_DOCKER_MEMORY", "128m"),
        ])
        .await;
    assert_eq!(client.exec("kept = 1\nkept").await.result(), 1);
    let started = Instant::now();
    let ran = client
        .exec_args(json!({
            "code": "blocks = []\nwhile True:\n    blocks.append(bytearray(16 << 20))",
            "timeout_ms": 20000,
        }))
        .await;
    println!(
        "allocation loop ended after {} ms: {}",
        started.elapsed().as_millis(),
        ran.text
    );
    assert_eq!(ran.error_type(), "MemoryError", "{}", ran.text);
    assert!(
        ran.error_message().contains("memory"),
        "{}",
        ran.error_message()
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        client.exec("1 + 1").await.result(),
        2,
        "the gateway survives"
    );
}

#[tokio::test]
async fn a_fork_bomb_is_contained() {
    let Some(_docker) = docker().await else {
        return;
    };
    let setup = Setup::new(json!({}));
    let client = setup
        .stdio(&[
            ("CODEMCP_ISOLATION", "DOCKER"),
            ("CODEMCP_DOCKER_PIDS", "64"),
        ])
        .await;
    let code = r"
import os, signal, time
children, error = [], None
for _ in range(500):
    try:
        pid = os.fork()
    except OSError as e:
        error = e.strerror
        break
    if pid == 0:
        try:
            time.sleep(30)
        finally:
            os._exit(0)
    children.append(pid)
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
[len(children), error]
";
    let ran = client
        .exec_args(json!({"code": code, "timeout_ms": 20000}))
        .await;
    assert!(!ran.is_error, "{}", ran.text);
    let forked = ran.result()[0].as_u64().expect("count");
    println!(
        "fork bomb: {forked} of 500 forks succeeded, then: {}",
        ran.result()[1]
    );
    assert!(forked < 64, "{}", ran.text);
    assert!(
        ran.result()[1]
            .as_str()
            .is_some_and(|e| e.contains("Resource temporarily unavailable")),
        "{}",
        ran.text
    );
    assert_eq!(client.exec("1 + 1").await.result(), 2);
}

#[tokio::test]
async fn a_worker_killed_from_outside_is_replaced_and_exit_removes_containers() {
    let Some(docker) = docker().await else {
        return;
    };
    let setup = Setup::new(json!({}));
    let client = setup.stdio(DOCKER_ONLY).await;
    let pid = client.pid.expect("gateway pid");
    assert_eq!(client.exec("x = 1\nx").await.result(), 1);

    // Between runs: the next run gets a fresh worker.
    for id in containers_of(&docker, pid).await {
        let _ = docker
            .kill_container(&id, None::<bollard::query_parameters::KillContainerOptions>)
            .await;
    }
    let ran = client.exec("x").await;
    assert_eq!(ran.error_type(), "NameError", "state is gone: {}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-docker");
    assert_eq!(client.exec("1 + 1").await.result(), 2);

    // During a run: the run ends at once, saying the state was lost.
    let kill = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        for id in containers_of(&docker, pid).await {
            let _ = docker
                .kill_container(&id, None::<bollard::query_parameters::KillContainerOptions>)
                .await;
        }
    };
    let started = Instant::now();
    let (ran, ()) = tokio::join!(
        client.exec_args(json!({"code": "import time\ntime.sleep(15)", "timeout_ms": 25000})),
        kill
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{}", ran.text);
    assert!(
        ran.error_message().contains("state was lost"),
        "{}",
        ran.text
    );
    assert_eq!(client.exec("'back'").await.result(), "back");

    // Gateway exit: its containers go too.
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !containers_of(&docker, pid).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "containers of an exited gateway are still there"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn containers_of_a_dead_gateway_are_removed_at_start() {
    let Some(docker) = docker().await else {
        return;
    };
    let mut gone = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let dead_pid = gone.id();
    gone.wait().expect("wait");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    let labels = HashMap::from([
        ("codemcp.worker".to_owned(), "1".to_owned()),
        ("codemcp.gateway.host".to_owned(), host.trim().to_owned()),
        ("codemcp.gateway.pid".to_owned(), dead_pid.to_string()),
        ("codemcp.gateway.start".to_owned(), "0".to_owned()),
    ]);
    // Created, never started: costs no container start.
    let stale = docker
        .create_container(
            None::<bollard::query_parameters::CreateContainerOptions>,
            ContainerCreateBody {
                image: Some(image()),
                cmd: Some(vec!["true".to_owned()]),
                labels: Some(labels),
                network_disabled: Some(true),
                ..Default::default()
            },
        )
        .await
        .expect("create a stale container");
    let setup = Setup::new(json!({}));
    let client = setup.stdio(DOCKER_ONLY).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let inspect = docker
            .inspect_container(&stale.id, None::<InspectContainerOptions>)
            .await;
        if inspect.is_err() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stale container is still there"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(client.exec("1 + 1").await.result(), 2);
}

/// Runs `codemcp exec` with extra environment; returns (success, stderr+stdout).
fn exec_cli(setup: &Setup, env: &[(&str, &str)], code: &str) -> (bool, String) {
    let output = std::process::Command::new(support::bin())
        .arg("--config")
        .arg(setup.config())
        .args(["exec", code])
        .env("CODEMCP_MONTY_BIN", support::monty_bin())
        .env("CODEMCP_LOG", "warn")
        .envs(env.iter().copied())
        .output()
        .expect("run codemcp exec");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    (output.status.success(), text)
}

#[test]
fn without_an_engine_errors_name_the_fix() {
    // No engine at all: a socket path nobody listens on (no Docker needed).
    let setup = Setup::new(json!({}));
    let nowhere = setup.dir.path().join("no-docker.sock");
    let docker_host = format!("unix://{}", nowhere.display());
    let (ok, text) = exec_cli(
        &setup,
        &[
            ("DOCKER_HOST", &docker_host),
            ("CODEMCP_ISOLATION", "DOCKER"),
        ],
        "1",
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("scripts/docker-engine.sh")
            && text.contains("the operator's job")
            && text.contains("codemcp setup docker"),
        "{text}"
    );
    // auto, with neither Docker nor bubblewrap, falls back to no fallback,
    // and the error says how to get one.
    let (ok, text) = exec_cli(
        &setup,
        &[
            ("DOCKER_HOST", &docker_host),
            ("CODEMCP_FALLBACK", "auto"),
            ("CODEMCP_BWRAP", "/nonexistent/bwrap"),
        ],
        "import statistics",
    );
    assert!(!ok, "{text}");
    assert!(text.contains("scripts/docker-engine.sh"), "{text}");
    // The sandbox's fix too, and never the unsandboxed host as the way out.
    assert!(text.contains("apt-get install bubblewrap"), "{text}");
    assert!(!text.contains("CODEMCP_FALLBACK=host"), "{text}");
}

#[tokio::test]
async fn a_missing_image_is_built_and_a_failed_build_names_the_fix() {
    let Some(_docker) = docker().await else {
        return;
    };
    let setup = Setup::new(json!({}));
    // Mirrors on a loopback port nobody listens on, and an empty download
    // cache: the build the missing image starts fails at once, offline.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = format!("http://127.0.0.1:{port}");
    let cache = setup.dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let (ok, text) = exec_cli(
        &setup,
        &[
            ("CODEMCP_ISOLATION", "DOCKER"),
            ("CODEMCP_DOCKER_IMAGE", "codemcp-no-such-image:0"),
            ("CODEMCP_DEBIAN_MIRROR", &nowhere),
            ("CODEMCP_PYPI_FILES", &nowhere),
            ("XDG_CACHE_HOME", cache),
        ],
        "1",
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("codemcp-no-such-image:0")
            && text.contains("building it failed")
            && text.contains("could not be downloaded")
            && text.contains("codemcp setup docker"),
        "{text}"
    );
}

/// Monty follows CPython 3.14, and so does the worker image: a snippet that
/// escalates runs the same version (3.11's worker had no itertools.batched).
#[tokio::test]
async fn worker_runs_the_cpython_version_monty_follows() {
    let Some(_docker) = docker().await else {
        return;
    };
    let client = Setup::new(json!({})).stdio(DOCKER_ONLY).await;
    let ran = client.exec("import sys\nlist(sys.version_info[:2])").await;
    assert_eq!(ran.result(), &json!([3, 14]), "{}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-docker", "{}", ran.text);
}

/// `itertools.batched` (3.12+) works on Monty and must keep working when
/// something else in the snippet makes it escalate.
#[tokio::test]
async fn itertools_batched_works_after_escalation() {
    let Some(_docker) = docker().await else {
        return;
    };
    let client = Setup::new(json!({}))
        .stdio(&[("CODEMCP_FALLBACK", "docker")])
        .await;
    let ran = client
        .exec("import itertools, statistics\n[list(b) for b in itertools.batched('abcde', 2)]")
        .await;
    assert_eq!(
        ran.result(),
        &json!([["a", "b"], ["c", "d"], ["e"]]),
        "{}",
        ran.text
    );
    assert_eq!(ran.structured["engine"], "cpython-docker", "{}", ran.text);
}

/// The worker's own frames do not count against a snippet's recursion limit,
/// so lowering it does not kill the container's worker.
#[tokio::test]
async fn low_recursion_limit_does_not_kill_the_docker_worker() {
    let Some(_docker) = docker().await else {
        return;
    };
    let client = Setup::new(json!({})).stdio(DOCKER_ONLY).await;
    let ran = client
        .exec(
            "import sys\nsys.setrecursionlimit(10)\ndef f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n\
             deep = None\ntry:\n    f(50)\nexcept RecursionError:\n    deep = 'RecursionError'\n\
             [sys.getrecursionlimit(), f(5), deep]",
        )
        .await;
    assert_eq!(
        ran.result(),
        &json!([10, 5, "RecursionError"]),
        "{}",
        ran.text
    );
    assert_eq!(client.exec("'alive'").await.result(), "alive");
}

/// An interpreter that dies by a signal is reported as a crash. The worker is
/// PID 1 in its container, which ignores a signal it sends itself, so the
/// crash is a real one: abort() falls through to a fault the kernel delivers.
#[tokio::test]
async fn interpreter_crash_in_a_container_is_reported_as_a_crash() {
    let Some(_docker) = docker().await else {
        return;
    };
    let client = Setup::new(json!({})).stdio(DOCKER_ONLY).await;
    let ran = client.exec("import os\nos.abort()").await;
    let message = ran.error_message();
    assert!(
        message.contains("the CPython worker crashed (signal")
            && message.contains("state was lost"),
        "{}",
        ran.text
    );
    assert_eq!(client.exec("'back'").await.result(), "back");
}
