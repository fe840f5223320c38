//! Which binary the pool starts as its workers, and which Monty it runs.
//!
//! By default codemcp is its own worker (`codemcp subprocess`, see
//! `selfworker.rs`); `CODEMCP_MONTY_BIN` names another one, such as the PyPI
//! `monty` worker. A worker must run the very Monty this gateway runs: a
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

/// The worker when `CODEMCP_MONTY_BIN` is unset: this binary, or in a build
/// without `self-worker` a `monty` on `PATH` or in the default install place.
pub fn default_worker() -> Result<PathBuf, PoolStartError> {
    if SELF_WORKER {
        return this_binary();
    }
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|dir| dir.join("monty"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".local/share/codemcp/monty-runtime/bin/monty"));
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| PoolStartError::NoBinary {
            looked: format!(
                "{NOT_A_WORKER}; looked at CODEMCP_MONTY_BIN, PATH, ~/.local/share/codemcp/monty-runtime/bin"
            ),
        })
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
