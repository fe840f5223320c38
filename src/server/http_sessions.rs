//! HTTP sessions that stop their runs the moment they end, and belong to
//! the principal that opened them.
//!
//! When a session ends (DELETE, or rmcp's idle keep-alive), rmcp waits up to
//! 5 s for in-flight handlers before it cancels them, so a run would keep its
//! worker and keep calling tools for nobody. This wraps rmcp's local session
//! manager with one token per session that fires at once, and records each
//! session's owner (see `session_guard`, which refuses everyone else).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures::Stream;
use rmcp::RoleServer;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::service::RequestContext;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use tokio_util::sync::CancellationToken;

use codemcp_store::Owner;

tokio::task_local! {
    /// Who the `initialize` being served comes from (set by `session_guard`).
    static CREATOR: Owner;
}

/// Runs `serving` with `owner` as the owner of any session it creates.
pub async fn created_by<F: Future>(owner: Owner, serving: F) -> F::Output {
    CREATOR.scope(owner, serving).await
}

/// One open session.
struct Session {
    closing: CancellationToken,
    /// `None` when it was created outside `created_by`: nobody may use it.
    owner: Option<Owner>,
    last_used: Instant,
}

type Open = Mutex<HashMap<SessionId, Session>>;

/// Whether a caller may use the session an id names.
#[derive(Debug, PartialEq, Eq)]
pub enum Access {
    /// No such session here (rmcp answers 404).
    Unknown,
    /// The caller's own.
    Own,
    /// Someone else's.
    Refused,
}

pub struct HttpSessions {
    inner: LocalSessionManager,
    open: Arc<Open>,
}

impl HttpSessions {
    /// Sessions that see no request or message for `idle` end.
    pub fn new(idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        Self {
            inner,
            open: Arc::default(),
        }
    }

    /// The token of the HTTP session `context`'s request belongs to.
    pub fn closing_for(&self, context: &RequestContext<RoleServer>) -> Option<CancellationToken> {
        let parts = context.extensions.get::<http::request::Parts>()?;
        let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
        self.open().get(id).map(|s| s.closing.clone())
    }

    /// Whether `owner` may use session `id`; its own is marked as used now.
    pub fn access(&self, id: &str, owner: Owner) -> Access {
        let mut open = self.open();
        let Some(session) = open.get_mut(id) else {
            return Access::Unknown;
        };
        if session.owner != Some(owner) {
            return Access::Refused;
        }
        session.last_used = Instant::now();
        Access::Own
    }

    /// The sessions to end so that one more for `owner` keeps it under
    /// `per_owner` and everyone under `total`: its own least recently used
    /// first, then those of whoever holds the most.
    pub fn to_end_for(&self, owner: Owner, per_owner: usize, total: usize) -> Vec<SessionId> {
        let open = self.open();
        let mut alive: Vec<(&SessionId, Option<Owner>, Instant)> = open
            .iter()
            .map(|(id, s)| (id, s.owner, s.last_used))
            .collect();
        alive.sort_by_key(|(_, _, used)| *used);
        let mut ending = Vec::new();
        let count = |alive: &[(&SessionId, Option<Owner>, Instant)], who: Option<Owner>| {
            alive.iter().filter(|(_, o, _)| *o == who).count()
        };
        while count(&alive, Some(owner)) >= per_owner.max(1) {
            let Some(at) = alive.iter().position(|(_, o, _)| *o == Some(owner)) else {
                break;
            };
            ending.push(alive.remove(at).0.clone());
        }
        while alive.len() >= total.max(1) {
            let mut holders: HashMap<Option<Owner>, usize> = HashMap::new();
            for (_, o, _) in &alive {
                *holders.entry(*o).or_default() += 1;
            }
            let biggest = holders.into_iter().max_by_key(|(_, n)| *n).map(|(o, _)| o);
            let Some(at) = alive.iter().position(|(_, o, _)| Some(*o) == biggest) else {
                break;
            };
            ending.push(alive.remove(at).0.clone());
        }
        ending
    }

    pub fn len(&self) -> usize {
        self.open().len()
    }

    fn open(&self) -> parking_lot::MutexGuard<'_, HashMap<SessionId, Session>> {
        lock(&self.open)
    }
}

fn lock(open: &Open) -> parking_lot::MutexGuard<'_, HashMap<SessionId, Session>> {
    open.lock()
}

/// Cancels the session's token and forgets it.
fn end(open: &Open, id: &SessionId) {
    if let Some(session) = lock(open).remove(id) {
        session.closing.cancel();
    }
}

/// A session's transport that reports the session's end.
pub struct EndingTransport<T> {
    inner: T,
    id: SessionId,
    open: Weak<Open>,
}

impl<T> EndingTransport<T> {
    fn ended(&self) {
        if let Some(open) = self.open.upgrade() {
            end(&open, &self.id);
        }
    }
}

/// Also when the session never got going (its handshake failed).
impl<T> Drop for EndingTransport<T> {
    fn drop(&mut self) {
        self.ended();
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for EndingTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.inner.receive().await;
        if message.is_none() {
            self.ended();
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.ended();
        self.inner.close().await
    }
}

impl SessionManager for HttpSessions {
    type Error = LocalSessionManagerError;
    type Transport = EndingTransport<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, inner) = self.inner.create_session().await?;
        let session = Session {
            closing: CancellationToken::new(),
            owner: CREATOR.try_with(|owner| *owner).ok(),
            last_used: Instant::now(),
        };
        self.open().insert(id.clone(), session);
        let transport = EndingTransport {
            inner,
            id: id.clone(),
            open: Arc::downgrade(&self.open),
        };
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        end(&self.open, id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    fn event_store(
        &self,
    ) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>> {
        self.inner.event_store()
    }
}
