//! HTTP sessions that stop their runs the moment they end.
//!
//! When a session ends (DELETE, or rmcp's idle keep-alive), rmcp waits up to
//! 5 s for in-flight handlers before it cancels them, so a run would keep its
//! worker and keep calling tools for nobody. This wraps rmcp's local session
//! manager with one token per session that fires at once.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

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

type Open = Mutex<HashMap<SessionId, CancellationToken>>;

#[derive(Default)]
pub struct HttpSessions {
    inner: LocalSessionManager,
    open: Arc<Open>,
}

impl HttpSessions {
    /// The token of the HTTP session `context`'s request belongs to.
    pub fn closing_for(&self, context: &RequestContext<RoleServer>) -> Option<CancellationToken> {
        let parts = context.extensions.get::<http::request::Parts>()?;
        let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
        self.open().get(id).cloned()
    }

    fn open(&self) -> parking_lot::MutexGuard<'_, HashMap<SessionId, CancellationToken>> {
        lock(&self.open)
    }
}

fn lock(open: &Open) -> parking_lot::MutexGuard<'_, HashMap<SessionId, CancellationToken>> {
    open.lock()
}

/// Cancels the session's token and forgets it.
fn end(open: &Open, id: &SessionId) {
    if let Some(token) = lock(open).remove(id) {
        token.cancel();
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
        self.open().insert(id.clone(), CancellationToken::new());
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
