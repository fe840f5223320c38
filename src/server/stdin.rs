//! Our stdin as an MCP transport that notices the client leaving.
//!
//! When the client closes stdin (or dies), rmcp waits up to 5 s for in-flight
//! handlers before it ends the session, and does not cancel them first, so a
//! run would keep going (and keep calling tools) for nobody. End-of-file here
//! cancels the session's runs at once.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

pub struct WatchedStdin {
    inner: tokio::io::Stdin,
    closed: CancellationToken,
}

impl WatchedStdin {
    /// Cancels `closed` when stdin ends or fails.
    pub fn new(closed: CancellationToken) -> Self {
        Self {
            inner: tokio::io::stdin(),
            closed,
        }
    }
}

impl AsyncRead for WatchedStdin {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let wanted = buf.remaining() > 0;
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &polled {
            Poll::Ready(Ok(())) => wanted && buf.filled().len() == before,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended && !self.closed.is_cancelled() {
            tracing::info!(target: "codemcp::server", "the client closed stdin; cancelling its runs");
            self.closed.cancel();
        }
        polled
    }
}
