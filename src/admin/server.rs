//! The gateway's admin socket: bound 0600 in the private runtime directory,
//! each peer's uid checked (`SO_PEERCRED`), one request per line, removed
//! when the gateway exits.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::protocol::{Answer, MAX_LINE, Request};
use super::{AdminError, Control, dir};

/// The socket file, to remove at exit.
#[derive(Debug, Clone)]
pub struct SocketFile {
    path: PathBuf,
    inode: u64,
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes it, unless another gateway's socket took its place.
    pub fn remove(&self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.inode) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The bound socket; dropping it stops serving and removes the file.
pub struct AdminSocket {
    file: SocketFile,
    task: tokio::task::JoinHandle<()>,
}

impl AdminSocket {
    pub fn file(&self) -> &SocketFile {
        &self.file
    }
}

impl Drop for AdminSocket {
    fn drop(&mut self) {
        self.task.abort();
        self.file.remove();
    }
}

/// Binds `<runtime dir>/<pid>.sock` and serves `control` on it.
///
/// # Errors
/// [`AdminError`] when the directory is not private or the bind fails.
pub fn listen(control: Arc<Control>) -> Result<AdminSocket, AdminError> {
    let dir = dir::runtime_dir();
    dir::ensure_private(&dir)?;
    let path = dir::socket_path(&dir, std::process::id());
    // Left by an earlier process that had our pid and was killed.
    let _ = std::fs::remove_file(&path);
    let failed = |source| AdminError::Socket {
        path: path.clone(),
        source,
    };
    let listener = UnixListener::bind(&path).map_err(failed)?;
    // The directory is 0700 already; the mode is a second lock.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
    let inode = std::fs::symlink_metadata(&path).map_err(failed)?.ino();
    tracing::info!(target: "codemcp::admin", path = %path.display(), "admin socket listening");
    let task = tokio::spawn(accept(listener, control));
    Ok(AdminSocket {
        file: SocketFile { path, inode },
        task,
    })
}

async fn accept(listener: UnixListener, control: Arc<Control>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve_peer(stream, control.clone()));
            }
            Err(e) => {
                tracing::warn!(target: "codemcp::admin", error = %e, "admin socket accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// Answers one peer's requests, after checking it runs as our user.
async fn serve_peer(mut stream: UnixStream, control: Arc<Control>) {
    let you = dir::euid();
    let peer = stream.peer_cred().map(|c| c.uid());
    if peer.as_ref().ok() != Some(&you) {
        let who = peer.map_or_else(|e| format!("unknown ({e})"), |uid| format!("uid {uid}"));
        tracing::warn!(target: "codemcp::admin", peer = %who, "admin request of another user refused");
        let refusal = Answer::Err(format!(
            "refused: this gateway belongs to uid {you}, and you are {who}"
        ));
        let _ = write_answer(&mut stream, &refusal).await;
        return;
    }
    let (read, mut write) = stream.split();
    let mut lines = BufReader::new(read.take(MAX_LINE * 16));
    let mut line = String::new();
    loop {
        line.clear();
        match (&mut lines).take(MAX_LINE).read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let answer = match serde_json::from_str::<Request>(line.trim()) {
            Ok(request) => control.answer(request).await,
            Err(e) => Answer::Err(format!("not a request this gateway knows: {e}")),
        };
        if write_answer(&mut write, &answer).await.is_err() {
            return;
        }
    }
}

async fn write_answer(
    out: &mut (impl AsyncWriteExt + Unpin),
    answer: &Answer,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(answer).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line).await?;
    out.flush().await
}
