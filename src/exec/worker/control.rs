//! The control channel workers dial: a WebSocket server on loopback. A worker
//! proves itself with its per-worker token as the first frame; anything else
//! is logged and closed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::link::WorkerLink;

/// How long a connection may take to present its token.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(5);

type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<Arc<WorkerLink>>>>>;

pub struct ControlServer {
    addr: SocketAddr,
    waiting: Waiting,
}

impl ControlServer {
    /// Listens on `bind` (loopback for host workers) on a free port.
    pub async fn start(bind: std::net::IpAddr) -> std::io::Result<Arc<Self>> {
        let listener = TcpListener::bind((bind, 0)).await?;
        let addr = listener.local_addr()?;
        let waiting: Waiting = Arc::default();
        let accepting = waiting.clone();
        tokio::spawn(async move {
            while let Ok((stream, peer)) = listener.accept().await {
                let waiting = accepting.clone();
                tokio::spawn(async move { admit(stream, peer, waiting).await });
            }
        });
        tracing::info!(target: "codemcp::worker", %addr, "worker control channel listening");
        Ok(Arc::new(Self { addr, waiting }))
    }

    pub fn url(&self) -> String {
        format!("ws://{}/", self.addr)
    }

    /// Registers a fresh token; the receiver yields the worker's link once a
    /// connection presents it.
    pub fn expect(&self) -> (String, oneshot::Receiver<Arc<WorkerLink>>) {
        let token = random_token();
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), tx);
        (token, rx)
    }

    pub fn forget(&self, token: &str) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(token);
    }
}

async fn admit(stream: TcpStream, peer: SocketAddr, waiting: Waiting) {
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let first = tokio::time::timeout(TOKEN_TIMEOUT, ws.next()).await;
    let presented = match first {
        Ok(Some(Ok(Message::Text(text)))) => text.to_string(),
        _ => String::new(),
    };
    let matched = {
        let mut waiting = waiting.lock().unwrap_or_else(PoisonError::into_inner);
        // Compare with every token, in constant time each.
        let key = waiting
            .keys()
            .find(|t| crate::secret::constant_time_eq(t.as_bytes(), presented.as_bytes()))
            .cloned();
        key.and_then(|k| waiting.remove(&k))
    };
    match matched {
        Some(tx) => {
            let _ = tx.send(WorkerLink::start(ws));
        }
        None => {
            tracing::warn!(target: "codemcp::worker", %peer, "refused a worker connection with a wrong token");
            close(ws).await;
        }
    }
}

async fn close(mut ws: WebSocketStream<TcpStream>) {
    let _ = ws.close(None).await;
}

/// 32 random bytes as hex, from the kernel.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wrong_token_is_closed_and_the_right_one_links() {
        let server = ControlServer::start("127.0.0.1".parse().expect("ip"))
            .await
            .expect("listen");
        let (token, linked) = server.expect();
        let (mut wrong, _) = tokio_tungstenite::connect_async(server.url())
            .await
            .expect("connect");
        futures::SinkExt::send(&mut wrong, Message::text("not-the-token"))
            .await
            .expect("send");
        let end = tokio::time::timeout(Duration::from_secs(5), wrong.next())
            .await
            .expect("closed in time");
        assert!(
            matches!(end, None | Some(Ok(Message::Close(_))) | Some(Err(_))),
            "{end:?}"
        );
        let (mut right, _) = tokio_tungstenite::connect_async(server.url())
            .await
            .expect("connect");
        futures::SinkExt::send(&mut right, Message::text(token))
            .await
            .expect("send");
        assert!(
            tokio::time::timeout(Duration::from_secs(5), linked)
                .await
                .is_ok()
        );
    }

    #[test]
    fn tokens_are_long_and_different() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
