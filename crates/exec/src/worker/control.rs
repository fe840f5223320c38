//! The control channel workers dial: a WebSocket server on loopback (host
//! workers) or the workers' network gateway (containers); or, for sandboxed
//! workers, no listener at all: each gets one end of a socket pair at start
//! and the gateway speaks WebSocket on the other. A worker proves itself
//! with its per-worker token as the first frame; anything else is logged and
//! closed.
//!
//! Snippets can reach this port too (it is how their own worker talks), so a
//! connection that has not proved itself is bounded: it gets `TOKEN_TIMEOUT`
//! for the handshake and the token, and one peer address may have only
//! `MAX_UNPROVEN_PER_PEER` of them open; more are closed at once. Otherwise one
//! session could hold the gateway's file descriptors and starve every other
//! session's workers.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixStream};
use tokio::sync::oneshot;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::link::WorkerLink;

/// How long a connection may take to finish its handshake and present its token.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections from one address still to present a token. A worker makes one;
/// host workers all come from 127.0.0.1, so leave room for many starting at once.
const MAX_UNPROVEN_PER_PEER: usize = 16;
/// Pause after a failed accept (e.g. out of file descriptors) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<Arc<WorkerLink>>>>>;
type Unproven = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// One counted connection still to prove itself; uncounted on drop.
struct Admission {
    peer: IpAddr,
    unproven: Unproven,
}

impl Admission {
    fn try_new(peer: IpAddr, unproven: &Unproven) -> Option<Self> {
        let mut counts = unproven.lock();
        let count = counts.entry(peer).or_default();
        if *count >= MAX_UNPROVEN_PER_PEER {
            return None;
        }
        *count += 1;
        Some(Self {
            peer,
            unproven: unproven.clone(),
        })
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut counts = self.unproven.lock();
        if let Some(count) = counts.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.peer);
            }
        }
    }
}

pub struct ControlServer {
    /// The listener's address; `None` when workers are handed their socket.
    addr: Option<SocketAddr>,
    waiting: Waiting,
}

/// The URL a handed-in worker names in its handshake (no host is looked up).
const HANDED_IN_URL: &str = "ws://codemcp-worker/";

impl ControlServer {
    /// Listens on `bind` (loopback for host workers) on a free port.
    pub async fn start(bind: std::net::IpAddr) -> std::io::Result<Arc<Self>> {
        let listener = TcpListener::bind((bind, 0)).await?;
        let addr = listener.local_addr()?;
        let waiting: Waiting = Arc::default();
        let accepting = waiting.clone();
        let unproven: Unproven = Arc::default();
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Never give up listening: later workers must still get in.
                        tracing::warn!(target: "codemcp::worker", error = %e, "the worker control channel could not accept a connection");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                };
                let Some(admission) = Admission::try_new(peer.ip(), &unproven) else {
                    tracing::debug!(target: "codemcp::worker", %peer, "refused a control connection: too many unproven ones from this address");
                    continue; // dropping the stream closes it
                };
                let waiting = accepting.clone();
                tokio::spawn(async move {
                    admit(stream, &peer.to_string(), waiting, Some(admission)).await;
                });
            }
        });
        tracing::info!(target: "codemcp::worker", %addr, "worker control channel listening");
        Ok(Arc::new(Self {
            addr: Some(addr),
            waiting,
        }))
    }

    /// A control channel with no listener: each worker's socket is handed
    /// in at start ([`Self::admit_handed_in`]).
    pub fn handed_in() -> Arc<Self> {
        Arc::new(Self {
            addr: None,
            waiting: Arc::default(),
        })
    }

    pub fn url(&self) -> String {
        self.addr
            .map_or_else(|| HANDED_IN_URL.to_owned(), |addr| format!("ws://{addr}/"))
    }

    /// Our end of a socket handed to one worker: it must prove itself with
    /// a token like any other connection.
    pub fn admit_handed_in(&self, stream: UnixStream) {
        let waiting = self.waiting.clone();
        tokio::spawn(async move { admit(stream, "handed-in socket", waiting, None).await });
    }

    /// Registers a fresh token; the receiver yields the worker's link once a
    /// connection presents it.
    pub fn issue_token(&self) -> (String, oneshot::Receiver<Arc<WorkerLink>>) {
        let token = random_token();
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().insert(token.clone(), tx);
        (token, rx)
    }

    pub fn forget(&self, token: &str) {
        self.waiting.lock().remove(token);
    }
}

/// Messages up to tungstenite's 64 MiB message cap, in one frame: the worker
/// (Python `websockets`) never fragments, and a result over the default 16 MiB
/// frame cap would end the connection and the worker with it.
fn ws_config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    const MAX_MESSAGE: usize = 64 << 20;
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
}

/// `admission` counts a TCP connection until it has presented a token.
async fn admit<S>(stream: S, peer: &str, waiting: Waiting, admission: Option<Admission>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let proof = tokio::time::timeout(TOKEN_TIMEOUT, async {
        let mut ws = tokio_tungstenite::accept_async_with_config(stream, Some(ws_config()))
            .await
            .ok()?;
        let presented = match ws.next().await {
            Some(Ok(Message::Text(text))) => text.to_string(),
            _ => String::new(),
        };
        Some((ws, presented))
    })
    .await;
    drop(admission);
    let Ok(Some((ws, presented))) = proof else {
        tracing::debug!(target: "codemcp::worker", %peer, "a control connection sent no token in time");
        return;
    };
    let matched = {
        let mut waiting = waiting.lock();
        // Compare with every token, in constant time each.
        let key = waiting
            .keys()
            .find(|t| codemcp_base::secret::constant_time_eq(t.as_bytes(), presented.as_bytes()))
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

async fn close<S: AsyncRead + AsyncWrite + Unpin>(mut ws: WebSocketStream<S>) {
    // A peer that never reads must not keep the socket open.
    let _ = tokio::time::timeout(TOKEN_TIMEOUT, ws.close(None)).await;
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
    use tokio::net::TcpStream;

    /// A worker presenting `token` gets linked within 5 s.
    async fn assert_links<T>(
        server: &ControlServer,
        token: String,
        linked: tokio::sync::oneshot::Receiver<T>,
    ) {
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

    #[tokio::test]
    async fn a_wrong_token_is_closed_and_the_right_one_links() {
        let server = ControlServer::start("127.0.0.1".parse().expect("ip"))
            .await
            .expect("listen");
        let (token, linked) = server.issue_token();
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
        assert_links(&server, token, linked).await;
    }

    #[tokio::test]
    async fn idle_connections_from_one_peer_are_capped_and_do_not_block_workers() {
        use tokio::io::AsyncReadExt;
        let server = ControlServer::start("127.0.0.1".parse().expect("ip"))
            .await
            .expect("listen");
        let addr = server.addr.expect("a listener");
        // Connections that never start the handshake.
        let mut idle = Vec::new();
        for _ in 0..MAX_UNPROVEN_PER_PEER {
            idle.push(TcpStream::connect(addr).await.expect("connect"));
        }
        // Let the server count them before the next one arrives.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut over = TcpStream::connect(addr).await.expect("connect");
        let mut buf = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(2), over.read(&mut buf))
            .await
            .expect("the connection over the cap is closed at once");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        drop(idle);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (token, linked) = server.issue_token();
        assert_links(&server, token, linked).await;
    }

    #[test]
    fn tokens_are_long_and_different() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
