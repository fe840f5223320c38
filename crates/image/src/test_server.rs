//! A files host on loopback for tests: answers `GET /path` from a table,
//! and can misbehave as a broken or hostile host would (fault injection:
//! truncated bodies, stalls, other bytes). Counts the requests.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What one path answers.
#[derive(Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    /// Send only this many bytes of the body (the length still claims all).
    pub cut_at: Option<usize>,
    /// Wait this long after the headers before sending the body.
    pub stall: Option<Duration>,
}

impl Answer {
    pub fn ok(body: &[u8]) -> Self {
        Self {
            status: 200,
            body: body.to_vec(),
            cut_at: None,
            stall: None,
        }
    }
}

pub struct Host {
    pub url: String,
    hits: Arc<AtomicUsize>,
}

impl Host {
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Serves `answers` (path → answer; any other path: 404) until the test ends.
pub async fn serve(answers: HashMap<String, Answer>) -> Host {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let answers = Arc::new(answers);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let answers = answers.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let answer = answers.get(&path).cloned().unwrap_or(Answer {
                    status: 404,
                    body: b"Not Found".to_vec(),
                    cut_at: None,
                    stall: None,
                });
                let head = format!(
                    "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    answer.status,
                    answer.body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                if let Some(stall) = answer.stall {
                    tokio::time::sleep(stall).await;
                }
                let end = answer.cut_at.unwrap_or(answer.body.len());
                let _ = socket.write_all(&answer.body[..end]).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Host { url, hits }
}
