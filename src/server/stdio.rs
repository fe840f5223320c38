//! stdin and stdout as the MCP transport reads and writes them.
//!
//! An MCP client starts us with pipes. Those are read and written by the
//! runtime's own I/O driver, nonblocking, like an upstream's pipes. Tokio's
//! `stdin()`/`stdout()` instead hand every read and write to a helper thread:
//! two more thread wake-ups per message, each a wait for a free CPU on a
//! busy machine. A terminal or a file keeps tokio's stdio, and so does a
//! stdout that shares its pipe with stderr (nonblocking would reach the log
//! writes too, which cannot wait).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// Our stdin.
pub enum Input {
    Pipe(pipe::Receiver),
    Blocking(tokio::io::Stdin),
}

/// Our stdout; tells `codemcp_base::timing` when an answer has left.
pub enum Output {
    Pipe(pipe::Sender),
    Blocking(tokio::io::Stdout),
}

/// Call inside the runtime.
pub fn input() -> Input {
    match duplicate(io::stdin().as_fd()).and_then(pipe::Receiver::from_file) {
        Ok(pipe) => Input::Pipe(pipe),
        Err(e) => {
            tracing::debug!(target: "codemcp::server", error = %e, "stdin is read through a helper thread");
            Input::Blocking(tokio::io::stdin())
        }
    }
}

/// Call inside the runtime.
pub fn output() -> Output {
    let pipe = duplicate(io::stdout().as_fd()).and_then(|file| {
        if shares_with_stderr(&file)? {
            return Err(io::Error::other("stdout and stderr are one pipe"));
        }
        pipe::Sender::from_file(file)
    });
    match pipe {
        Ok(pipe) => Output::Pipe(pipe),
        Err(e) => {
            tracing::debug!(target: "codemcp::server", error = %e, "stdout is written through a helper thread");
            Output::Blocking(tokio::io::stdout())
        }
    }
}

/// A descriptor of our own for `fd`'s file, so dropping the pipe leaves `fd` open.
fn duplicate(fd: BorrowedFd<'_>) -> io::Result<File> {
    Ok(File::from(fd.try_clone_to_owned()?))
}

fn shares_with_stderr(stdout: &File) -> io::Result<bool> {
    let out = stdout.metadata()?;
    let Ok(err) = duplicate(io::stderr().as_fd()).and_then(|file| file.metadata()) else {
        return Ok(false); // no stderr: nothing to share
    };
    Ok(out.dev() == err.dev() && out.ino() == err.ino())
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Input::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            Input::Blocking(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_write(cx, buf),
            Output::Blocking(stdout) => Pin::new(stdout).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flushed = match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_flush(cx),
            Output::Blocking(stdout) => Pin::new(stdout).poll_flush(cx),
        };
        if matches!(flushed, Poll::Ready(Ok(()))) {
            codemcp_base::timing::RESPONSE_READY.log_since("response written");
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_shutdown(cx),
            Output::Blocking(stdout) => Pin::new(stdout).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_pipe_is_read_and_written_nonblocking() {
        let (tx, rx) = pipe::pipe().expect("pipe");
        let mut output = Output::Pipe(tx);
        let mut input = Input::Pipe(rx);
        output.write_all(b"{}\n").await.expect("write");
        output.flush().await.expect("flush");
        let mut got = [0u8; 3];
        input.read_exact(&mut got).await.expect("read");
        assert_eq!(&got, b"{}\n");
    }
}
