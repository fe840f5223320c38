//! A stdio upstream's process as an rmcp transport whose output is watched.
//!
//! rmcp alone would silently drop a line over its size cap (the call then waits
//! for the per-call timeout, and a line that never ends wedges the connection),
//! and it keeps pending calls waiting for seconds after the server's output
//! closed. Here either event marks the connection [`Liveness::lose`]: calls in
//! flight fail at once with the reason, and the next call starts a new process.

use parking_lot::Mutex;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio_util::sync::CancellationToken;

/// How long a server whose input we closed may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Whether a connection still works, and why not once it does not.
#[derive(Debug, Default)]
pub struct Liveness {
    lost: CancellationToken,
    reason: Mutex<Option<String>>,
    /// Bytes of a message the server has begun but not ended with a newline.
    unfinished: AtomicUsize,
}

impl Liveness {
    /// Marks the connection lost; the first reason wins.
    pub fn lose(&self, reason: impl Into<String>) {
        let mut slot = self.reason.lock();
        if slot.is_none() {
            *slot = Some(reason.into());
        }
        self.lost.cancel();
    }

    /// Bytes of the message in progress: when a call times out with some, the
    /// server's output is stuck mid-message and every later answer would queue
    /// behind it.
    pub fn unfinished_bytes(&self) -> usize {
        self.unfinished.load(Ordering::Relaxed)
    }

    pub fn is_lost(&self) -> bool {
        self.lost.is_cancelled()
    }

    pub fn reason(&self) -> String {
        self.reason
            .lock()
            .clone()
            .unwrap_or_else(|| "the connection was lost".into())
    }

    /// Resolves with the reason once the connection is lost.
    pub async fn lost(&self) -> String {
        self.lost.cancelled().await;
        self.reason()
    }
}

/// The server's stdout: bytes pass through untouched until a line grows past
/// `max_line` bytes or the stream ends; then the connection is lost and rmcp
/// reads end-of-file.
struct WatchedOutput<R> {
    inner: R,
    /// Bytes of the current line seen so far.
    line: usize,
    max_line: usize,
    liveness: Arc<Liveness>,
}

impl<R: AsyncRead + Unpin> AsyncRead for WatchedOutput<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.liveness.is_lost() || buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let fresh = &buf.filled()[before..];
        codemcp_base::timing::UPSTREAM_READ.set();
        if fresh.is_empty() {
            this.liveness
                .lose("the server closed its output (it exited or crashed)");
            return Poll::Ready(Ok(()));
        }
        let mut rest = fresh;
        while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
            if this.line + newline > this.max_line {
                this.line += newline;
                break;
            }
            this.line = 0;
            rest = &rest[newline + 1..];
        }
        if this.line <= this.max_line {
            this.line += rest.len();
        }
        this.liveness.unfinished.store(this.line, Ordering::Relaxed);
        if this.line > this.max_line {
            this.liveness.lose(format!(
                "the server sent a message over the {} limit (CODEMCP_MAX_TOOL_RESULT_BYTES)",
                human_bytes(this.max_line)
            ));
            buf.set_filled(before);
        }
        Poll::Ready(Ok(()))
    }
}

pub fn human_bytes(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{bytes} bytes")
    }
}

/// A spawned stdio server: the rmcp transport plus the process it talks to.
pub struct ChildTransport {
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, WatchedOutput<ChildStdout>, ChildStdin>,
    liveness: Arc<Liveness>,
}

impl ChildTransport {
    /// Spawns `command` with piped stdin/stdout/stderr.
    pub fn spawn(
        mut command: CommandWrap,
        max_message: usize,
    ) -> std::io::Result<(Self, Arc<Liveness>, Option<ChildStderr>)> {
        command
            .command_mut()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stdin = child.inner_mut().stdin().take();
        let stdout = child.inner_mut().stdout().take();
        let stderr = child.inner_mut().stderr().take();
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            let _ = child.start_kill();
            return Err(std::io::Error::other("the child's stdio was not piped"));
        };
        let liveness = Arc::new(Liveness::default());
        let output = WatchedOutput {
            inner: stdout,
            line: 0,
            max_line: max_message,
            liveness: liveness.clone(),
        };
        // rmcp's own cap stays just above ours, as a backstop.
        let transport = AsyncRwTransport::new(output, stdin)
            .with_max_line_length(max_message.saturating_add(1));
        let this = Self {
            child: Some(child),
            transport,
            liveness: liveness.clone(),
        };
        Ok((this, liveness, stderr))
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sending = self.transport.send(item);
        async move {
            let sent = sending.await;
            codemcp_base::timing::UPSTREAM_SENT.set();
            sent
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Closes the server's input, gives it a moment to exit, then kills it
    /// (and its process group); a lost server is killed at once.
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.transport.close().await?;
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if !self.liveness.is_lost() && tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok()
        {
            return Ok(());
        }
        Box::into_pin(child.kill()).await
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL to the group now; tokio reaps the process in the background.
            if let Err(e) = child.start_kill() {
                tracing::debug!(target: "codemcp::upstream", error = %e, "killing an upstream process failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn read_all(input: &'static [u8], max_line: usize) -> (Vec<u8>, Arc<Liveness>) {
        let liveness = Arc::new(Liveness::default());
        let mut output = WatchedOutput {
            inner: input,
            line: 0,
            max_line,
            liveness: liveness.clone(),
        };
        let mut got = Vec::new();
        let mut chunk = [0u8; 4];
        loop {
            match output.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
            }
        }
        (got, liveness)
    }

    #[tokio::test]
    async fn lines_within_the_cap_pass_untouched_and_the_end_is_reported() {
        let (got, liveness) = read_all(b"{\"a\":1}\n{\"b\":22}\n", 8).await;
        assert_eq!(got, b"{\"a\":1}\n{\"b\":22}\n");
        assert!(liveness.reason().contains("closed its output"));
    }

    #[tokio::test]
    async fn a_line_over_the_cap_loses_the_connection_and_stops_the_bytes() {
        let (got, liveness) = read_all(b"ok\n0123456789abcdef\nnever\n", 10).await;
        assert!(got.len() < 16, "{:?}", String::from_utf8_lossy(&got));
        assert!(got.starts_with(b"ok\n"));
        assert!(liveness.reason().contains("over the 10 bytes limit"));
    }

    #[tokio::test]
    async fn a_message_without_its_line_end_is_counted() {
        let (_, liveness) = read_all(b"{\"a\":1}\n{\"jsonrpc\"", 100).await;
        assert_eq!(liveness.unfinished_bytes(), 10);
        let (_, liveness) = read_all(b"{\"a\":1}\n", 100).await;
        assert_eq!(liveness.unfinished_bytes(), 0);
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_bytes(16 << 20), "16.0 MiB");
        assert_eq!(human_bytes(1000), "1000 bytes");
    }
}
