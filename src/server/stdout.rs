//! Our stdout as the MCP transport's writer: it tells `crate::timing` when an
//! answer has left.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

pub struct MarkedStdout {
    inner: tokio::io::Stdout,
}

impl MarkedStdout {
    pub fn new() -> Self {
        Self {
            inner: tokio::io::stdout(),
        }
    }
}

impl AsyncWrite for MarkedStdout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let flushed = Pin::new(&mut self.inner).poll_flush(cx);
        if matches!(flushed, Poll::Ready(Ok(()))) {
            crate::timing::RESPONSE_READY.log_since("response written");
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
