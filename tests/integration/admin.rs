//! Changing a running gateway: real `codemcp` gateways (stdio and HTTP)
//! driven by the real `codemcp` CLI over their admin sockets, watched by a
//! real MCP client (rmcp). Each test has its own XDG_RUNTIME_DIR.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Setup, bin, odd};

/// A private runtime directory standing in for $XDG_RUNTIME_DIR.
struct Runtime {
    dir: tempfile::TempDir,
}

impl Runtime {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn env(&self) -> (&'static str, &str) {
        ("XDG_RUNTIME_DIR", self.dir.path().to_str().expect("utf-8"))
    }

    fn sockets(&self) -> PathBuf {
        self.dir.path().join("codemcp")
    }

    fn socket(&self, pid: u32) -> PathBuf {
        self.sockets().join(format!("{pid}.sock"))
    }

    /// Runs the `codemcp` CLI against this runtime directory.
    async fn cli(&self, args: &[&str]) -> Ran {
        let output = tokio::process::Command::new(bin())
            .args(args)
            .env("XDG_RUNTIME_DIR", self.dir.path())
            .env("CODEMCP_LOG", "warn")
            .output()
            .await
            .expect("run codemcp");
        Ran::from(output)
    }

    /// Waits until gateway `pid` has its socket.
    async fn wait_socket(&self, pid: u32) {
        let path = self.socket(pid);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !path.exists() {
            assert!(
                Instant::now() < deadline,
                "no admin socket {}",
                path.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A stdio gateway with no upstreams, its stdin held open.
    async fn bare_gateway(&self, args: &[&str]) -> (tokio::process::Child, tempfile::TempDir) {
        let config = tempfile::tempdir().expect("tempdir");
        std::fs::write(config.path().join("mcp.json"), r#"{"mcpServers": {}}"#).expect("write");
        let child = tokio::process::Command::new(bin())
            .arg("--config")
            .arg(config.path().join("mcp.json"))
            .args(args)
            .env("XDG_RUNTIME_DIR", self.dir.path())
            .env("CODEMCP_LOG", "warn")
            .env("CODEMCP_FALLBACK", "none")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn codemcp");
        self.wait_socket(child.id().expect("pid")).await;
        (child, config)
    }
}

struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl From<Output> for Ran {
    fn from(output: Output) -> Self {
        Self {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ok={} stdout:\n{}stderr:\n{}",
            self.ok, self.stdout, self.stderr
        )
    }
}

/// The line of `listing` about server `name`.
fn line<'a>(listing: &'a str, name: &str) -> &'a str {
    listing
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or("")
}

#[tokio::test]
async fn disable_and_enable_change_a_running_gateway_and_keep_the_session() {
    let runtime = Runtime::new();
    let setup = Setup::new(json!({"alpha": odd(json!({})), "beta": odd(json!({}))}));
    let client = setup.stdio(&[runtime.env()]).await;
    let pid = client.pid.expect("gateway pid");
    runtime.wait_socket(pid).await;
    let ran = client.exec("x = 41\nalpha_add_numbers(a=1, b=2)").await;
    assert!(!ran.is_error, "{}", ran.text);
    let alpha_pid = client.exec("alpha_pid()").await.result().clone();
    assert!(client.description().await.contains("beta_add_numbers("));

    let listed = runtime.cli(&["list"]).await;
    assert!(listed.ok, "{listed}");
    assert!(
        line(&listed.stdout, "beta").contains("connected"),
        "{listed}"
    );

    // Anything announced before the change is not what we wait for.
    while client.wait_changed(Duration::from_millis(300)).await {}
    let off = runtime.cli(&["disable", "beta"]).await;
    assert!(off.ok, "{off}");
    assert!(off.stdout.contains("disconnected: beta"), "{off}");
    assert!(
        client.wait_changed(Duration::from_secs(30)).await,
        "no tools/list_changed after disable"
    );
    let description = client.description().await;
    assert!(!description.contains("beta_add_numbers("), "{description}");
    assert!(description.contains("alpha_add_numbers("), "{description}");
    assert_eq!(client.exec("x + 1").await.result(), &json!(42));
    let gone = client.exec("beta_add_numbers(a=1, b=2)").await;
    assert!(gone.is_error, "{}", gone.text);

    let again = runtime.cli(&["disable", "beta"]).await;
    assert!(
        !again.ok && again.stderr.contains("'beta' is already disabled"),
        "{again}"
    );
    let unknown = runtime.cli(&["enable", "gamma"]).await;
    assert!(!unknown.ok, "{unknown}");
    assert!(
        unknown.stderr.contains("no server named 'gamma'")
            && unknown.stderr.contains("alpha, beta"),
        "{unknown}"
    );
    let listed = runtime.cli(&["list"]).await;
    assert!(
        line(&listed.stdout, "beta").contains("disabled at run time"),
        "{listed}"
    );

    let on = runtime.cli(&["enable", "beta"]).await;
    assert!(on.ok, "{on}");
    assert!(on.stdout.contains("connected: beta"), "{on}");
    assert!(line(&on.stdout, "beta").contains("connected"), "{on}");
    assert!(client.wait_changed(Duration::from_secs(30)).await);
    assert!(client.description().await.contains("beta_add_numbers("));
    let ran = client.exec("beta_add_numbers(a=x, b=1)").await;
    assert!(!ran.is_error, "{}", ran.text);
    // The session's variable survived; the untouched server kept its process.
    assert_eq!(client.exec("x + 1").await.result(), &json!(42));
    assert_eq!(client.exec("alpha_pid()").await.result(), &alpha_pid);

    let reload = runtime.cli(&["reload"]).await;
    assert!(
        reload.ok && reload.stdout.contains("no server changed"),
        "{reload}"
    );
    assert_eq!(client.exec("x").await.result(), &json!(41));
}

/// Replaces `path` as an editor that saves by rename does.
fn save_by_rename(path: &Path, text: &str) {
    let temp = path.with_extension("json.swp");
    std::fs::write(&temp, text).expect("write");
    std::fs::rename(&temp, path).expect("rename");
}

/// Polls `codemcp list` until `ready` holds for its output.
async fn wait_listing(runtime: &Runtime, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = runtime.cli(&["list"]).await;
        if listed.ok && ready(&listed.stdout) {
            return listed.stdout;
        }
        assert!(Instant::now() < deadline, "never ready: {listed}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn tool_names(client: &support::HttpClient) -> String {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools[0]
        .description
        .as_deref()
        .unwrap_or_default()
        .to_owned()
}

/// tests/clients/listen_changes.py: an mcp 2.x client listening for tool changes.
struct Listener {
    _child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Listener {
    /// Starts it and waits until its listen stream is open.
    async fn start(url: &str) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(support::python2())
            .arg(support::repo().join("tests/clients/listen_changes.py"))
            .arg(url)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start listen_changes.py");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await;
        let ready = ready
            .expect("ready within 60 s")
            .expect("read")
            .unwrap_or_default();
        assert_eq!(ready, "ready");
        Self {
            _child: child,
            lines,
        }
    }

    /// What it saw: its protocol and the description before and after the change.
    async fn changed(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(100), self.lines.next_line()).await;
        let line = line.expect("an answer within 100 s").expect("read");
        serde_json::from_str(&line.expect("tools/list_changed within 90 s")).expect("JSON")
    }
}

#[tokio::test]
async fn a_saved_config_is_reloaded_and_invalid_json_keeps_the_last_good_one() {
    let runtime = Runtime::new();
    let gateway = support::start_http(
        json!({"alpha": odd(json!({}))}),
        &[runtime.env(), ("CODEMCP_TOOL_TIMEOUT_MS", "30000")],
    )
    .await;
    let pid = gateway.child.id().expect("pid");
    let config = gateway.config();
    let instances = runtime.cli(&["instances"]).await;
    assert!(instances.ok, "{instances}");
    assert!(instances.stdout.contains(&format!("{pid} ")), "{instances}");
    assert!(instances.stdout.contains("http 127.0.0.1:0"), "{instances}");
    assert!(
        instances.stdout.contains(config.to_str().expect("utf-8")),
        "{instances}"
    );

    let client = support::http_connect(&gateway.url).await;
    let alpha_pid = support::http_exec(&client, "alpha_pid()")
        .await
        .result()
        .clone();
    assert!(tool_names(&client).await.contains("alpha_add_numbers("));

    // A new server, and a policy that denies one of alpha's tools.
    let mut alpha = odd(json!({}));
    alpha["policy"] = json!({"add_numbers": "deny"});
    let edited = json!({"mcpServers": {"alpha": alpha, "gamma": odd(json!({}))}});
    save_by_rename(&config, &edited.to_string());
    wait_listing(&runtime, |l| line(l, "gamma").contains("connected")).await;
    let description = tool_names(&client).await;
    assert!(description.contains("gamma_add_numbers("), "{description}");
    assert!(!description.contains("alpha_add_numbers("), "{description}");
    // Only the policy changed for alpha: the same process serves it.
    assert_eq!(
        support::http_exec(&client, "alpha_pid()").await.result(),
        &alpha_pid
    );

    std::fs::write(
        &config,
        "{\n  \"mcpServers\": {\n    \"alpha\": {\"command\": }\n",
    )
    .expect("write");
    let listing = wait_listing(&runtime, |l| l.contains("config error:")).await;
    assert!(line(&listing, "gamma").contains("connected"), "{listing}");
    let reload = runtime.cli(&["reload"]).await;
    assert!(!reload.ok, "{reload}");
    let position = regex::Regex::new(r"mcp\.json:3:\d+: ").expect("pattern");
    assert!(position.is_match(&reload.stderr), "{reload}");
    assert!(
        reload.stderr.contains("keeps its last good config"),
        "{reload}"
    );
    let ran = support::http_exec(&client, "gamma_add_numbers(a=2, b=3)").await;
    assert!(!ran.is_error, "{}", ran.text);

    // A deleted file is no reason to drop every server either.
    std::fs::remove_file(&config).expect("rm");
    let gone = runtime.cli(&["reload"]).await;
    assert!(!gone.ok && gone.stderr.contains("is gone"), "{gone}");
    assert!(line(&runtime.cli(&["list"]).await.stdout, "gamma").contains("connected"));

    // --make-default: the file says it, comments kept, the old file backed up.
    let commented = format!(
        "// my gateway\n{{\"mcpServers\": {{\n  \"gamma\": {}, // the new one\n}}}}\n",
        odd(json!({}))
    );
    std::fs::write(&config, &commented).expect("write");
    wait_listing(&runtime, |l| {
        !l.contains("config error:") && !line(l, "alpha").contains("connected")
    })
    .await;
    // A 2026-07-28 client (PyPI mcp 2.x) hears of it on its subscriptions/listen stream.
    let mut listener = Listener::start(&gateway.url).await;
    let off = runtime.cli(&["disable", "gamma", "--make-default"]).await;
    assert!(off.ok, "{off}");
    let heard = listener.changed().await;
    assert_eq!(heard["protocol"], "2026-07-28", "{heard}");
    assert!(
        heard["before"]
            .as_str()
            .unwrap()
            .contains("gamma_add_numbers("),
        "{heard}"
    );
    assert!(
        !heard["after"]
            .as_str()
            .unwrap()
            .contains("gamma_add_numbers("),
        "{heard}"
    );
    let written = std::fs::read_to_string(&config).expect("read");
    assert!(
        written.contains("// my gateway") && written.contains("// the new one"),
        "{written}"
    );
    assert!(written.contains("\"disabled\": true"), "{written}");
    let backup =
        std::fs::read_to_string(config.with_extension("json.codemcp-backup")).expect("backup");
    assert_eq!(backup, commented);
    let listed = runtime.cli(&["list"]).await;
    assert!(
        line(&listed.stdout, "gamma").contains("disabled"),
        "{listed}"
    );
    assert!(!listed.stdout.contains("at run time"), "{listed}");
    assert!(!tool_names(&client).await.contains("gamma_add_numbers("));
}

#[tokio::test]
async fn stale_socket_of_a_dead_gateway_is_ignored() {
    let runtime = Runtime::new();
    let none = runtime.cli(&["list"]).await;
    assert!(
        !none.ok && none.stderr.contains("no running codemcp gateway"),
        "{none}"
    );

    let (mut killed, _c1) = runtime.bare_gateway(&[]).await;
    let (mut work, _c2) = runtime.bare_gateway(&["serve", "--label", "work"]).await;
    let (killed_pid, work_pid) = (killed.id().expect("pid"), work.id().expect("pid"));
    let several = runtime.cli(&["list"]).await;
    assert!(!several.ok, "{several}");
    assert!(
        several.stderr.contains("2 codemcp gateways are running"),
        "{several}"
    );
    assert!(
        several.stderr.contains(&killed_pid.to_string()),
        "{several}"
    );
    let by_label = runtime.cli(&["list", "-i", "work"]).await;
    assert!(by_label.ok, "{by_label}");
    let by_pid = runtime
        .cli(&["reload", "-i", &killed_pid.to_string()])
        .await;
    assert!(by_pid.ok, "{by_pid}");
    let instances = runtime.cli(&["instances"]).await;
    let launcher = format!("(pid {})", std::process::id());
    let row = line(&instances.stdout, &work_pid.to_string());
    assert!(
        row.contains("work") && row.contains("stdio") && row.contains(&launcher),
        "{instances}"
    );

    // Killed outright, it leaves its socket behind: it is ignored and removed.
    killed.start_kill().expect("kill");
    killed.wait().await.expect("reaped");
    assert!(runtime.socket(killed_pid).exists());
    let instances = runtime.cli(&["instances"]).await;
    assert!(instances.ok, "{instances}");
    assert!(
        !instances.stdout.contains(&format!("\n{killed_pid} ")),
        "{instances}"
    );
    assert!(
        !runtime.socket(killed_pid).exists(),
        "the stale socket was removed"
    );
    let one = runtime.cli(&["list"]).await;
    assert!(one.ok, "{one}");

    // A normal exit (the client closed stdin) removes the socket too.
    let (mut closed, _c3) = runtime.bare_gateway(&[]).await;
    let closed_pid = closed.id().expect("pid");
    drop(closed.stdin.take());
    let exited = tokio::time::timeout(Duration::from_secs(30), closed.wait()).await;
    assert!(exited.is_ok(), "the gateway did not stop when stdin closed");
    assert!(
        !runtime.socket(closed_pid).exists(),
        "socket left after exit"
    );

    // SIGTERM: the gateway removes its socket on the way out.
    let status = std::process::Command::new("kill")
        .args(["-TERM", &work_pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exited = tokio::time::timeout(Duration::from_secs(30), work.wait()).await;
    assert!(exited.is_ok(), "the gateway did not stop on SIGTERM");
    assert!(
        !runtime.socket(work_pid).exists(),
        "socket left after SIGTERM"
    );
}

#[tokio::test]
async fn admin_socket_is_private_to_its_user() {
    let runtime = Runtime::new();
    let (_gateway, _config) = runtime.bare_gateway(&[]).await;
    let pid = _gateway.id().expect("pid");
    let socket = runtime.socket(pid);
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&runtime.sockets()), 0o700);
    assert_eq!(mode(&socket), 0o600);
    let me = std::fs::metadata(&socket).expect("meta").uid();
    if me != 0 {
        eprintln!("SKIPPED the other-uid checks: they need root to act as another user");
        return;
    }
    // Even with the file modes opened up, a peer of another uid is refused.
    let open = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    open(runtime.dir.path(), 0o711).expect("chmod");
    open(&runtime.sockets(), 0o711).expect("chmod");
    open(&socket, 0o666).expect("chmod");
    // The gateway may answer (and close) before the request is sent.
    let probe = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n\
                 try:\n    s.sendall(b'{\"op\":\"list\"}\\n')\nexcept OSError:\n    pass\n\
                 print(s.makefile().readline())";
    let output = std::process::Command::new("/usr/bin/python3")
        .args(["-c", probe, socket.to_str().expect("utf-8")])
        .current_dir("/")
        .uid(65534)
        .gid(65534)
        .output()
        .expect("python3 as nobody");
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_str(answer.trim()).expect("a JSON answer");
    let refusal = answer["err"].as_str().unwrap_or_default();
    assert!(
        refusal.contains("refused") && refusal.contains("uid 65534"),
        "{answer}"
    );
    open(&socket, 0o600).expect("chmod");

    // A socket its user does not own is refused by the client.
    std::os::unix::fs::chown(&socket, Some(65534), Some(65534)).expect("chown");
    let refused = runtime.cli(&["list"]).await;
    assert!(!refused.ok, "{refused}");
    assert!(
        refused.stderr.contains("belongs to uid 65534, not to you"),
        "{refused}"
    );
    std::os::unix::fs::chown(&socket, Some(0), Some(0)).expect("chown");
    assert!(runtime.cli(&["list"]).await.ok);
}
