//! SIGTERM and SIGINT: the admin socket is removed before the process ends.

use super::server::SocketFile;

/// Resolves when SIGTERM or SIGINT arrives, with its number.
pub async fn terminated() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => tokio::select! {
            _ = term.recv() => libc::SIGTERM,
            _ = int.recv() => libc::SIGINT,
        },
        _ => std::future::pending().await,
    }
}

/// For stdio serving, which has no graceful stop of its own: on SIGTERM or
/// SIGINT, removes `socket` and exits as the signal would have (128 + n).
/// Upstream children and workers die with the process (`die_with_parent`).
pub fn exit_on_signal(socket: Option<SocketFile>) {
    tokio::spawn(async move {
        let signal = terminated().await;
        if let Some(socket) = socket {
            socket.remove();
        }
        tracing::info!(target: "codemcp::admin", signal, "stopping on signal");
        std::process::exit(128 + signal);
    });
}
