//! In front of rmcp's `/mcp`: a request that presents an `Mcp-Session-Id`
//! reaches the session only when the session belongs to its caller, and an
//! `initialize` first makes room under the per-principal and total caps.
//!
//! Without this, anyone with a token who learned a session id could run
//! code in that session or end it with a `DELETE`, and `initialize` calls
//! piled up sessions (and memory) without bound.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::SessionManager;

use super::http_sessions::{Access, HttpSessions, created_by};
use super::request_body::Buffered;
use crate::authority::identity::Identity;

/// The caps on MCP sessions.
pub struct SessionGuard {
    pub sessions: Arc<HttpSessions>,
    pub per_principal: usize,
    pub total: usize,
}

impl SessionGuard {
    pub async fn check(self: Arc<Self>, request: Request, next: Next) -> Response {
        let caller = Identity::of_http(request.extensions(), request.headers());
        let presented = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok());
        if let Some(id) = presented {
            if self.sessions.access(id, caller.owner) == Access::Refused {
                tracing::warn!(target: "codemcp::server", caller = %caller.label, method = %request.method(), "refused a request presenting another caller's MCP session id");
                return (
                    StatusCode::NOT_FOUND,
                    "Not Found: no MCP session with this id belongs to the caller",
                )
                    .into_response();
            }
            return next.run(request).await;
        }
        if request.method() == Method::POST && opens_session(&request) {
            self.make_room(&caller).await;
        }
        // Whatever session rmcp creates while serving this is the caller's.
        created_by(caller.owner, next.run(request)).await
    }

    /// Ends the sessions that one more for `caller` would put over a cap.
    async fn make_room(&self, caller: &Identity) {
        let ending = self
            .sessions
            .to_end_for(caller.owner, self.per_principal, self.total);
        for id in ending {
            tracing::info!(target: "codemcp::server", caller = %caller.label, open = self.sessions.len(), per_principal = self.per_principal, total = self.total, "ending the least recently used MCP session to stay under the session caps");
            if let Err(e) = self.sessions.close_session(&id).await {
                tracing::debug!(target: "codemcp::server", "ending an MCP session: {e}");
            }
        }
    }
}

/// Whether the (buffered) body is an `initialize` request.
fn opens_session(request: &Request) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    let Some(Buffered(body)) = request.extensions().get::<Buffered>() else {
        return false;
    };
    serde_json::from_slice::<Method<'_>>(body)
        .ok()
        .and_then(|m| m.method)
        .is_some_and(|m| m == "initialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_body(body: &str) -> Request {
        let mut request = Request::new(axum::body::Body::empty());
        request
            .extensions_mut()
            .insert(Buffered(axum::body::Bytes::from(body.to_owned())));
        request
    }

    #[test]
    fn an_initialize_is_told_from_other_requests() {
        assert!(opens_session(&with_body(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#
        )));
        assert!(!opens_session(&with_body(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        )));
        assert!(!opens_session(&with_body("not json")));
    }
}
