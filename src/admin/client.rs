//! The CLI's side: finding this user's running gateways and asking one.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::protocol::{Answer, InstanceInfo, Reply, Request};
use super::{AdminError, dir};

/// How long `info` may take; changes wait for connections, so get longer.
const INFO_TIMEOUT: Duration = Duration::from_secs(5);
const CHANGE_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest answer read.
const MAX_ANSWER: u64 = 16 * 1024 * 1024;

/// One socket in the runtime directory.
#[derive(Debug)]
pub struct Found {
    pub pid: u32,
    pub path: PathBuf,
    /// Who it is, or why it cannot be asked (another user's socket, …).
    pub info: Result<InstanceInfo, AdminError>,
}

/// This user's gateways, by pid. Sockets of processes that are gone (killed
/// without cleaning up) are removed on the way.
///
/// # Errors
/// [`AdminError::RuntimeDir`] when the directory is not private to us.
pub async fn discover() -> Result<Vec<Found>, AdminError> {
    let dir = dir::runtime_dir();
    if !dir.exists() {
        return Ok(Vec::new());
    }
    dir::check_private(&dir)?;
    let entries = std::fs::read_dir(&dir).map_err(|e| AdminError::RuntimeDir {
        path: dir.clone(),
        message: e.to_string(),
    })?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = dir::pid_of(&path) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            stale(&path, "its process is gone");
            continue;
        }
        let info = match request_with(&path, pid, &Request::Info, INFO_TIMEOUT).await {
            Ok(Reply::Info(info)) => Ok(info),
            Ok(_) => Err(AdminError::Protocol {
                pid,
                message: "answered info with something else".into(),
            }),
            Err(AdminError::Socket { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                ) =>
            {
                stale(&path, "nothing listens on it");
                continue;
            }
            Err(e) => Err(e),
        };
        found.push(Found { pid, path, info });
    }
    found.sort_by_key(|f| f.pid);
    Ok(found)
}

fn stale(path: &Path, why: &str) {
    tracing::debug!(target: "codemcp::admin", path = %path.display(), why, "removing a stale admin socket");
    let _ = std::fs::remove_file(path);
}

/// The gateway `wanted` names (a pid or a label), or the only one running.
///
/// # Errors
/// None running, several and none named, or none of that name.
pub async fn pick(wanted: Option<&str>) -> Result<Found, AdminError> {
    let mut found = discover().await?;
    let list = || describe(&found);
    let index = match wanted {
        None => match found.len() {
            0 => return Err(AdminError::NoGateway(dir::runtime_dir())),
            1 => 0,
            count => {
                return Err(AdminError::Several {
                    count,
                    list: list(),
                });
            }
        },
        Some(wanted) => found
            .iter()
            .position(|f| {
                f.pid.to_string() == wanted
                    || f.info
                        .as_ref()
                        .is_ok_and(|i| i.label.as_deref() == Some(wanted))
            })
            .ok_or_else(|| AdminError::NotFound {
                wanted: wanted.to_owned(),
                list: list(),
            })?,
    };
    Ok(found.swap_remove(index))
}

/// One line per gateway, for error messages.
#[must_use]
pub fn describe(found: &[Found]) -> String {
    if found.is_empty() {
        return "  (none)".to_owned();
    }
    found
        .iter()
        .map(|f| match &f.info {
            Ok(info) => format!(
                "  {}{} {} config {} (started by {})",
                f.pid,
                info.label
                    .as_ref()
                    .map_or_else(String::new, |l| format!(" [{l}]")),
                info.transport,
                info.config.as_deref().unwrap_or("none"),
                info.launcher
            ),
            Err(e) => format!("  {} ({e})", f.pid),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Sends `request` to the gateway behind `found`.
///
/// # Errors
/// The gateway's refusal (e.g. a name not in its config) or why it could
/// not be asked.
pub async fn request(found: &Found, request: &Request) -> Result<Reply, AdminError> {
    if let Err(e) = &found.info {
        return Err(AdminError::Refused(format!("gateway {}: {e}", found.pid)));
    }
    request_with(&found.path, found.pid, request, CHANGE_TIMEOUT).await
}

async fn request_with(
    path: &Path,
    pid: u32,
    request: &Request,
    within: Duration,
) -> Result<Reply, AdminError> {
    check_owner(path)?;
    let socket = |source| AdminError::Socket {
        path: path.to_owned(),
        source,
    };
    let exchange = async {
        let mut stream = UnixStream::connect(path).await.map_err(socket)?;
        let mut line = serde_json::to_vec(request).map_err(|e| AdminError::Protocol {
            pid,
            message: e.to_string(),
        })?;
        line.push(b'\n');
        stream.write_all(&line).await.map_err(socket)?;
        let mut answer = String::new();
        BufReader::new(stream.take(MAX_ANSWER))
            .read_line(&mut answer)
            .await
            .map_err(socket)?;
        Ok(answer)
    };
    let answer =
        tokio::time::timeout(within, exchange)
            .await
            .map_err(|_| AdminError::Protocol {
                pid,
                message: format!("no answer within {} s", within.as_secs()),
            })??;
    match serde_json::from_str::<Answer>(answer.trim()) {
        Ok(Answer::Ok(reply)) => Ok(*reply),
        Ok(Answer::Err(message)) => Err(AdminError::Refused(message)),
        Err(_) if answer.is_empty() => Err(AdminError::Protocol {
            pid,
            message: "closed the connection without an answer".into(),
        }),
        Err(e) => Err(AdminError::Protocol {
            pid,
            message: format!("unreadable answer: {e}"),
        }),
    }
}

/// Refuses a socket our user does not own: whoever owns it could answer in
/// the gateway's name.
fn check_owner(path: &Path) -> Result<(), AdminError> {
    let meta = std::fs::symlink_metadata(path).map_err(|source| AdminError::Socket {
        path: path.to_owned(),
        source,
    })?;
    let you = dir::euid();
    if meta.uid() == you {
        Ok(())
    } else {
        Err(AdminError::Foreign {
            path: path.to_owned(),
            owner: meta.uid(),
            you,
        })
    }
}
