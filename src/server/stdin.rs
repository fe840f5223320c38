//! Our stdin as an MCP transport that notices the client leaving.
//!
//! When stdin ends, rmcp waits up to 5 s for in-flight handlers and does not
//! cancel them, so a run of a client that is gone would keep going (and keep
//! calling tools) for nobody. But a closed stdin alone is also how a script
//! that pipes its requests in (`printf … | codemcp`) ends, and it still reads
//! the answers. So: once stdin ends, the session's runs are cancelled as soon
//! as nobody reads our stdout any more, and after `DRAIN` at the latest. The
//! drain starts once the upstreams are up (or their startup wait is over):
//! the piped requests wait for them before they run.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// Long enough for the quick runs of a piped script, short enough that a client
/// shutting down (stdin closed, then SIGTERM after about 2 s in the MCP SDKs) sees
/// the gateway exit by itself.
const DRAIN: Duration = Duration::from_millis(1500);
const CHECK_EVERY: Duration = Duration::from_millis(20);

pub struct WatchedStdin {
    inner: super::stdio::Input,
    closed: CancellationToken,
    /// Resolves when the upstreams are up; taken when stdin ends.
    upstreams_ready: Option<Shared<BoxFuture<'static, ()>>>,
    /// Once stdin ended: resolves when the end may be passed on to rmcp,
    /// whose own wait for in-flight requests (5 s) must not start while
    /// they still wait for the upstreams.
    hold_end: Option<BoxFuture<'static, ()>>,
}

impl WatchedStdin {
    /// Cancels `closed` once stdin has ended (or failed) and stdout's reader
    /// is gone, or `DRAIN` after stdin ended.
    pub fn new(closed: CancellationToken, upstreams_ready: BoxFuture<'static, ()>) -> Self {
        Self {
            inner: super::stdio::input(),
            closed,
            upstreams_ready: Some(upstreams_ready.shared()),
            hold_end: None,
        }
    }

    /// Stdin ended: the drain starts, and the end reaches rmcp once the
    /// upstreams are up or the session closed (a client that left).
    fn ended(&mut self) {
        if let Some(ready) = self.upstreams_ready.take() {
            let closed = self.closed.clone();
            tokio::spawn(cancel_when_unread(closed.clone(), ready.clone().boxed()));
            self.hold_end = Some(
                async move {
                    tokio::select! {
                        () = ready => {}
                        () = closed.cancelled() => {}
                    }
                }
                .boxed(),
            );
        }
    }
}

impl AsyncRead for WatchedStdin {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(hold) = self.hold_end.as_mut() {
            ready!(hold.as_mut().poll(cx));
            self.hold_end = None;
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let wanted = buf.remaining() > 0;
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &polled {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                codemcp_base::timing::REQUEST_READ.set();
                false
            }
            Poll::Ready(Ok(())) => wanted,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended && self.upstreams_ready.is_some() {
            self.ended();
            return self.poll_read(cx, buf);
        }
        polled
    }
}

async fn cancel_when_unread(closed: CancellationToken, upstreams_ready: BoxFuture<'static, ()>) {
    let reader_gone = async {
        while !codemcp_base::process::stdout_reader_gone() && !closed.is_cancelled() {
            tokio::time::sleep(CHECK_EVERY).await;
        }
    };
    tokio::select! {
        () = upstreams_ready => {}
        () = reader_gone => {}
    }
    let started = tokio::time::Instant::now();
    while !codemcp_base::process::stdout_reader_gone()
        && started.elapsed() < DRAIN
        && !closed.is_cancelled()
    {
        tokio::time::sleep(CHECK_EVERY).await;
    }
    if !closed.is_cancelled() {
        tracing::info!(target: "codemcp::server", "the client closed stdin; cancelling its runs");
        closed.cancel();
    }
}
