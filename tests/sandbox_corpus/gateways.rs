//! The gateways the cases run on (one stdio gateway per mode, one
//! `serve --http` gateway for cases with several sessions), and what the
//! corpus checks on them after every case: alive, quick, and their resident
//! memory within its bounds.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

use crate::fixture::Fixture;
use crate::support::{self, HttpGateway, Ran, unpack};
use crate::{
    CASE_LEFTOVER_BOUND, CASE_PEAK_BOUND, ENV_SECRET, FROZEN_LEFTOVER_BOUND, LIMITS, LIVENESS,
    Mode, RSS_GROWTH_BOUND, SETTLE, SETTLED,
};

pub(crate) type Session = RunningService<RoleClient, ()>;

pub(crate) fn gateway_env(mode: &Mode) -> Vec<(&'static str, &'static str)> {
    let mut env: Vec<(&str, &str)> = LIMITS.to_vec();
    // Each mode's verdicts, not an escalation to whatever fallback this machine has.
    env.push(("CODEMCP_FALLBACK", "none"));
    env.extend_from_slice(mode.env);
    env.push(("CODEMCP_CORPUS_SECRET", ENV_SECRET));
    env
}

/// A stdio gateway: one process, one session.
pub(crate) struct StdioGateway {
    pub(crate) session: Session,
    pub(crate) pid: u32,
    pub(crate) config: PathBuf,
    pub(crate) _setup: support::Setup,
}

impl StdioGateway {
    pub(crate) async fn start(fixture: &Fixture, mode: &Mode) -> Self {
        let setup = support::Setup::new(fixture.servers());
        let config = setup.config();
        let mut command = tokio::process::Command::new(support::bin());
        command
            .arg("--config")
            .arg(&config)
            .env("CODEMCP_STARTUP_WAIT_MS", support::STARTUP_WAIT_MS)
            .envs(gateway_env(mode))
            .env("CODEMCP_LOG", "error");
        let (transport, _) = TokioChildProcess::builder(command)
            .spawn()
            .expect("spawn codemcp");
        let pid = transport.id().expect("gateway pid");
        let session = tokio::time::timeout(Duration::from_secs(60), ().serve(transport))
            .await
            .expect("stdio handshake within 60 s")
            .expect("MCP handshake with codemcp");
        Self {
            session,
            pid,
            config,
            _setup: setup,
        }
    }
}

/// A `serve --http` gateway plus a session that only answers liveness probes.
pub(crate) struct HttpGw {
    pub(crate) gateway: HttpGateway,
    pub(crate) probe: Session,
    pub(crate) pid: u32,
}

impl HttpGw {
    pub(crate) async fn start(fixture: &Fixture, mode: &Mode) -> Self {
        let gateway = support::start_http(fixture.servers(), &gateway_env(mode)).await;
        let pid = gateway.child.id().expect("gateway pid");
        let probe = connect_http(&gateway.url).await.expect("probe session");
        Self {
            gateway,
            probe,
            pid,
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.gateway
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.split('/').next())
            .and_then(|p| p.parse().ok())
            .expect("port in the gateway URL")
    }
}

pub(crate) async fn connect_http(url: &str) -> Result<Session, String> {
    support::init_tls();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
        .await
        .map_err(|_| "HTTP handshake took over 30 s".to_owned())?
        .map_err(|e| format!("HTTP handshake failed: {e}"))
}

/// Runs `code`; `Err` is a transport failure or a hang, never a Python error.
pub(crate) async fn exec(session: &Session, code: &str, bound: Duration) -> Result<Ran, String> {
    let args = json!({"code": code})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let call = session.call_tool(CallToolRequestParams::new("execute_python").with_arguments(args));
    match tokio::time::timeout(bound, call).await {
        Ok(Ok(result)) => Ok(unpack(result)),
        Ok(Err(e)) => Err(format!("tools/call failed: {e}")),
        Err(_) => Err(format!("no answer within {bound:?}")),
    }
}

/// The worker control channel's port: the TCP port `pid` listens on other
/// than the HTTP gateway's; `None` in modes without workers.
pub(crate) fn control_port(pid: u32, http_port: u16) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    ["tcp", "tcp6"].iter().find_map(|table| {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).ok()?;
        text.lines().skip(1).find_map(|line| {
            // sl local_address rem_address st ... inode
            let fields: Vec<&str> = line.split_whitespace().collect();
            let port = u16::from_str_radix(fields.get(1)?.rsplit(':').next()?, 16).ok()?;
            let listening = fields.get(3) == Some(&"0A");
            (listening
                && port != http_port
                && inodes.iter().any(|i| Some(&i.as_str()) == fields.get(9)))
            .then_some(port)
        })
    })
}

/// A field of `/proc/PID/status` given in kB, in bytes.
pub(crate) fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

pub(crate) fn rss_bytes(pid: u32) -> Option<u64> {
    status_bytes(pid, "VmRSS:")
}

/// Starts `pid`'s peak resident size (`VmHWM`) afresh, so it tells one case's peak.
pub(crate) fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// One gateway's resident memory as the corpus follows it.
pub(crate) struct Memory {
    /// Right after the gateway started.
    pub(crate) start: u64,
    /// After the previous case, once settled.
    pub(crate) last: u64,
}

impl Memory {
    pub(crate) fn of(pid: u32) -> Self {
        let rss = rss_bytes(pid).unwrap_or(0);
        reset_peak(pid);
        Self {
            start: rss,
            last: rss,
        }
    }
}

/// What one case did to its gateway's resident memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CaseMemory {
    pub(crate) before: u64,
    pub(crate) peak: u64,
    pub(crate) after: u64,
    pub(crate) start: u64,
    /// The case's run was frozen inside one builtin (its memory stays held).
    pub(crate) froze: bool,
}

pub(crate) fn mib(bytes: u64) -> u64 {
    bytes >> 20
}

/// Signed MiB from `from` to `to`.
pub(crate) fn delta_mib(from: u64, to: u64) -> i64 {
    (to as i64 - from as i64) >> 20
}

/// The host checks after a case: alive, quick, its peak within what the
/// limits allow, and back near its size before the case and since its start
/// (see `CASE_PEAK_BOUND`, `CASE_LEFTOVER_BOUND`, `RSS_GROWTH_BOUND`).
pub(crate) async fn host_check(
    session: &Session,
    pid: u32,
    memory: &mut Memory,
    froze: bool,
) -> Result<CaseMemory, String> {
    let started = Instant::now();
    let ran = exec(session, "1 + 1", LIVENESS).await?;
    if ran.result() != &json!(2) {
        return Err(format!("the trivial call answered {}", ran.text));
    }
    let took = started.elapsed();
    if took > LIVENESS {
        return Err(format!("the trivial call took {took:?}"));
    }
    let before = memory.last;
    let peak = status_bytes(pid, "VmHWM:").ok_or("the gateway process is gone")?;
    if peak > before + CASE_PEAK_BOUND {
        return Err(format!(
            "gateway RSS peaked at +{} MiB ({} -> {} MiB), over the {} MiB a case may add",
            delta_mib(before, peak),
            mib(before),
            mib(peak),
            mib(CASE_PEAK_BOUND)
        ));
    }
    let may_leave = if froze {
        FROZEN_LEFTOVER_BOUND
    } else {
        CASE_LEFTOVER_BOUND
    };
    // Freed memory may take a moment to go back to the OS.
    let deadline = Instant::now() + SETTLE;
    loop {
        let rss = rss_bytes(pid).ok_or("the gateway process is gone")?;
        let left = rss.saturating_sub(before);
        // A frozen run's memory is judged by `may_leave`; the gateway restarts after it.
        let grown = if froze {
            0
        } else {
            rss.saturating_sub(memory.start)
        };
        let settled = left <= SETTLED || Instant::now() > deadline;
        if settled && left <= may_leave && grown <= RSS_GROWTH_BOUND {
            memory.last = rss;
            reset_peak(pid);
            return Ok(CaseMemory {
                before,
                peak,
                after: rss,
                start: memory.start,
                froze,
            });
        }
        if Instant::now() > deadline {
            return Err(if left > may_leave {
                format!(
                    "the case left +{} MiB resident ({} -> {} MiB) after {SETTLE:?}, over the {} MiB a case may leave",
                    mib(left),
                    mib(before),
                    mib(rss),
                    mib(may_leave)
                )
            } else {
                format!(
                    "the gateway grew +{} MiB since it started ({} -> {} MiB), over the {} MiB it may grow",
                    mib(grown),
                    mib(memory.start),
                    mib(rss),
                    mib(RSS_GROWTH_BOUND)
                )
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
