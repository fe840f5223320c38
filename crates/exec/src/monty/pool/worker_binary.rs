//! Which binary the pool starts as its workers, and which Monty it runs.
//!
//! `CODEMCP_MONTY_BIN` names the worker; else codemcp is its own
//! (`codemcp subprocess`, see `selfworker.rs`) when built with `self-worker`;
//! else a `monty` installed beside it or on `PATH`; else the pinned PyPI
//! worker it provisions into its data directory (codemcp-image's
//! `monty_worker`: checked by SHA-256 before it is unpacked and on every
//! reuse). A worker must run the very Monty this gateway runs: a
//! session's saved state is Monty's own format, and monty-proto's handshake
//! only checks the wire schema version, which stays the same across Monty
//! releases (`Configure.monty_version` is informational). So a worker other
//! than this binary is asked its version before a pool starts, and refused
//! when it differs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Duration;

use monty_pool::{Pool, PoolConfig, ReplConfig, TurnEvent, on_print_sync};
use monty_types::MONTY_VERSION;

use super::PoolStartError;

/// The running executable, even after a `cargo install` replaced the file:
/// workers started later must run the same build as the gateway.
const THIS_EXE: &str = "/proc/self/exe";
/// How long a worker may take to print its version or answer `1 + 1`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// `codemcp --version`: `0.1.0 (monty 1.4.0)`, so another codemcp used as
/// the worker can be told apart by its Monty too.
pub fn version_line() -> &'static str {
    static LINE: OnceLock<String> = OnceLock::new();
    LINE.get_or_init(|| format!("{} (monty {MONTY_VERSION})", env!("CARGO_PKG_VERSION")))
}

/// Whether this build can serve as its own worker (feature `self-worker`).
pub const SELF_WORKER: bool = cfg!(feature = "self-worker");

/// `codemcp subprocess`: serves the pool protocol when this build can.
pub fn serve_as_worker() -> ExitCode {
    #[cfg(feature = "self-worker")]
    {
        crate::monty::selfworker::serve()
    }
    #[cfg(not(feature = "self-worker"))]
    {
        eprintln!("codemcp: {NOT_A_WORKER}; set CODEMCP_MONTY_BIN to a Monty worker");
        ExitCode::from(2)
    }
}

#[cfg_attr(feature = "self-worker", allow(dead_code))]
const NOT_A_WORKER: &str =
    "this codemcp was built without its Monty worker (cargo feature self-worker, Rust >= 1.96)";

/// Where the pool's worker comes from (`codemcp check` names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerSource {
    /// `CODEMCP_MONTY_BIN`.
    Configured,
    /// This binary (`codemcp subprocess`, feature `self-worker`).
    BuiltIn,
    /// A `monty` in codemcp's own directory (where pip puts the worker the
    /// wheel depends on).
    Beside,
    /// A `monty` on `PATH`.
    OnPath,
    /// The pinned PyPI worker codemcp unpacked into its data directory.
    Provisioned,
}

impl WorkerSource {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Configured => "configured (CODEMCP_MONTY_BIN)",
            Self::BuiltIn => "built in",
            Self::Beside => "installed beside codemcp",
            Self::OnPath => "found on PATH",
            Self::Provisioned => "provisioned from the pinned pydantic-monty-runtime wheel",
        }
    }
}

/// The worker binary a pool starts, and where it came from.
#[derive(Debug, Clone)]
pub struct Worker {
    pub binary: PathBuf,
    pub source: WorkerSource,
}

impl std::fmt::Display for Worker {
    /// `codemcp itself (built in)`, or where the binary came from and its path.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.source {
            WorkerSource::BuiltIn => write!(f, "codemcp itself (built in, `codemcp subprocess`)"),
            source => write!(f, "{}: {}", source.describe(), self.binary.display()),
        }
    }
}

/// The fixes named when there is no worker.
pub const NO_WORKER_FIX: &str = "run `codemcp setup pool` while online (it provisions the pinned worker), \
     set CODEMCP_MONTY_BIN to a Monty worker of the same version, or use a codemcp built with the self-worker feature";

/// The worker without downloading anything: `CODEMCP_MONTY_BIN`, this
/// binary when it can be its own worker, a `monty` beside codemcp or on
/// `PATH`, then a provisioned one that passes its check. A `monty` of
/// another Monty is not told apart here (see [`choose`]).
pub fn locate(configured: Option<&Path>) -> Result<Worker, PoolStartError> {
    if let Some(path) = configured {
        return Ok(Worker {
            binary: path.to_owned(),
            source: WorkerSource::Configured,
        });
    }
    if SELF_WORKER {
        return Ok(Worker {
            binary: this_binary()?,
            source: WorkerSource::BuiltIn,
        });
    }
    if let Some(found) = installed_candidates().into_iter().next() {
        return Ok(found);
    }
    provisioned().ok_or_else(|| PoolStartError::NoBinary {
        looked: format!("{NOT_A_WORKER}; no `monty` beside codemcp, on PATH or provisioned"),
    })
}

/// The worker a pool starts, provisioning it when there is none and
/// `pypi_files` is given (the files host; `None`: never download). An
/// installed `monty` of another Monty is passed over, with a warning.
pub async fn choose(
    configured: Option<&Path>,
    pypi_files: Option<&str>,
) -> Result<Worker, PoolStartError> {
    if configured.is_some() || SELF_WORKER {
        return locate(configured);
    }
    for found in installed_candidates() {
        match monty_version(&found.binary).await {
            Ok(version) if version == MONTY_VERSION => return Ok(found),
            Ok(version) => {
                tracing::warn!(target: "codemcp::worker", path = %found.binary.display(), version, "passing over a Monty worker of another Monty (this codemcp runs {MONTY_VERSION})");
            }
            Err(e) => {
                tracing::warn!(target: "codemcp::worker", path = %found.binary.display(), error = %e, "passing over a `monty` that does not say its version");
            }
        }
    }
    if let Some(found) = provisioned() {
        return Ok(found);
    }
    let Some(pypi_files) = pypi_files else {
        return Err(PoolStartError::NoBinary {
            looked: format!(
                "{NOT_A_WORKER}; no `monty` of Monty {MONTY_VERSION} beside codemcp, on PATH or provisioned"
            ),
        });
    };
    provision(pypi_files).await
}

/// `codemcp setup pool`, or the first pool start without a worker: the
/// pinned worker of this Monty, fetched, checked and unpacked (or reused).
pub async fn provision(pypi_files: &str) -> Result<Worker, PoolStartError> {
    use codemcp_image::monty_worker;
    let got = monty_worker::provision(
        &codemcp_image::data_dir(),
        &codemcp_image::cache_dir(),
        pypi_files,
        MONTY_VERSION,
        codemcp_image::fetch::Timeouts::default(),
    )
    .await
    .map_err(|e| PoolStartError::Unprovisioned { why: e.to_string() })?;
    Ok(Worker {
        binary: got.binary,
        source: WorkerSource::Provisioned,
    })
}

/// A `monty` beside the running codemcp, then each one on `PATH`.
fn installed_candidates() -> Vec<Worker> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("monty")))
        .map(|binary| Worker {
            binary,
            source: WorkerSource::Beside,
        });
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| Worker {
            binary: dir.join("monty"),
            source: WorkerSource::OnPath,
        });
    beside
        .into_iter()
        .chain(on_path)
        .filter(|w| w.binary.is_file())
        .collect()
}

/// The provisioned worker of this Monty, when it is there and passes its
/// check (one that fails is left to [`provision`], which replaces it).
fn provisioned() -> Option<Worker> {
    use codemcp_image::monty_worker;
    let pin = monty_worker::pin(MONTY_VERSION).ok()?;
    match monty_worker::installed(&codemcp_image::data_dir(), pin) {
        Ok(Some(binary)) => Some(Worker {
            binary,
            source: WorkerSource::Provisioned,
        }),
        Ok(None) => None,
        Err(why) => {
            tracing::warn!(target: "codemcp::worker", "the provisioned Monty worker is not used: {why}");
            None
        }
    }
}

/// This binary, for starting it as a worker.
fn this_binary() -> Result<PathBuf, PoolStartError> {
    if Path::new(THIS_EXE).exists() {
        return Ok(PathBuf::from(THIS_EXE));
    }
    std::env::current_exe().map_err(|e| PoolStartError::NoBinary {
        looked: format!("this executable: {e}"),
    })
}

/// Whether `binary` is this very executable (then it runs this Monty).
pub fn is_this_binary(binary: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let this = std::fs::metadata(THIS_EXE)
        .or_else(|_| std::env::current_exe().and_then(std::fs::metadata));
    match (std::fs::metadata(binary), this) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// The Monty version in a worker's `--version` line: the PyPI worker says
/// `monty-runtime 1.4.0`, codemcp says `codemcp 0.1.0 (monty 1.4.0)`.
pub fn monty_version_in(line: &str) -> Option<&str> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("monty-runtime ") {
        return rest.split_whitespace().next();
    }
    let start = line.find("(monty ")? + "(monty ".len();
    line[start..].split(')').next().map(str::trim)
}

/// The Monty version `binary` was built from.
pub async fn monty_version(binary: &Path) -> Result<String, PoolStartError> {
    let unknown = |message: String| PoolStartError::NoVersion {
        path: binary.display().to_string(),
        message,
    };
    if is_this_binary(binary) {
        return match SELF_WORKER {
            true => Ok(MONTY_VERSION.to_owned()),
            false => Err(unknown(NOT_A_WORKER.to_owned())),
        };
    }
    let run = tokio::process::Command::new(binary)
        .arg("--version")
        .env_clear()
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(PROBE_TIMEOUT, run).await {
        Ok(Ok(output)) if output.status.success() => output,
        Ok(Ok(output)) => {
            return Err(unknown(format!(
                "`--version` exited with {}",
                output.status
            )));
        }
        Ok(Err(e)) => return Err(unknown(format!("it does not start: {e}"))),
        Err(_) => return Err(unknown("`--version` did not answer within 10 s".into())),
    };
    let said = String::from_utf8_lossy(&output.stdout);
    monty_version_in(&said)
        .map(str::to_owned)
        .ok_or_else(|| unknown(format!("`--version` printed {:?}", said.trim())))
}

/// Refuses a worker built from another Monty than this gateway's.
pub async fn ensure_same_monty(binary: &Path) -> Result<(), PoolStartError> {
    let found = monty_version(binary).await?;
    if found == MONTY_VERSION {
        return Ok(());
    }
    Err(PoolStartError::OtherMonty {
        path: binary.display().to_string(),
        found,
    })
}

/// For `codemcp check`: the worker's Monty version once it has run `1 + 1`
/// through a pool of one.
pub async fn probe(binary: &Path) -> Result<String, String> {
    ensure_same_monty(binary).await.map_err(|e| e.to_string())?;
    let ran = tokio::time::timeout(PROBE_TIMEOUT, run_one(binary)).await;
    match ran {
        Ok(Ok(())) => Ok(MONTY_VERSION.to_owned()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err("it did not run `1 + 1` within 10 s".into()),
    }
}

async fn run_one(binary: &Path) -> Result<(), String> {
    let mut config = PoolConfig::subprocess(binary);
    config.min_processes = 0;
    config.max_processes = 1;
    let pool = Pool::new(config).await.map_err(|e| e.to_string())?;
    let mut checkout = pool
        .checkout(&ReplConfig::default())
        .await
        .map_err(|e| e.to_string())?;
    let mut quiet = on_print_sync(|_, _| {});
    let fed = checkout
        .feed("1 + 1", vec![], vec![], true, &mut quiet)
        .await;
    let finished = checkout.finish().await;
    pool.close().await;
    match fed {
        Ok(TurnEvent::Complete(_)) => finished.map_err(|e| e.to_string()),
        Ok(other) => Err(format!("`1 + 1` ended with {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monty_version_is_read_from_either_workers_version_line() {
        assert_eq!(monty_version_in("monty-runtime 1.3.0\n"), Some("1.3.0"));
        assert_eq!(
            monty_version_in("codemcp 0.2.0 (monty 1.5.1)"),
            Some("1.5.1")
        );
        assert_eq!(
            monty_version_in(&format!("codemcp {}", version_line())),
            Some(MONTY_VERSION)
        );
        assert_eq!(monty_version_in("Python 3.11.2"), None);
        assert_eq!(monty_version_in(""), None);
    }
}
