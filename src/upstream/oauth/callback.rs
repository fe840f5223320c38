//! The loopback redirect target of a login: an HTTP listener on 127.0.0.1 at
//! a port the OS picks, answering `GET /callback` once.
//!
//! It hands on only a redirect whose `state` is the one this login sent, so
//! a page that forges a callback (login CSRF: making us store the attacker's
//! code) is answered 400 and the login keeps waiting for the real one.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use subtle::ConstantTimeEq;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::OAuthError;

/// What the authorization server sent back through the browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// The approval, with the whole callback URL for rmcp to read
    /// (`code`, `state`, and the RFC 9207 `iss`).
    Approved { url: String },
    /// `error=access_denied` and the like.
    Refused {
        error: String,
        description: Option<String>,
    },
}

/// A bound listener waiting for one redirect.
pub struct Listener {
    addr: SocketAddr,
    received: mpsc::Receiver<Redirect>,
    stop: CancellationToken,
}

struct Shared {
    expected_state: tokio::sync::OnceCell<String>,
    addr: SocketAddr,
    sink: mpsc::Sender<Redirect>,
}

impl Listener {
    /// Binds 127.0.0.1 on a random port and starts answering.
    pub async fn bind() -> Result<(Self, StateSetter), OAuthError> {
        let socket = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| OAuthError::Callback(format!("cannot listen on 127.0.0.1: {e}")))?;
        let addr = socket
            .local_addr()
            .map_err(|e| OAuthError::Callback(e.to_string()))?;
        let (sink, received) = mpsc::channel(1);
        let shared = Arc::new(Shared {
            expected_state: tokio::sync::OnceCell::new(),
            addr,
            sink,
        });
        let app = axum::Router::new()
            .route("/callback", get(callback))
            .with_state(shared.clone());
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let served = axum::serve(socket, app)
                .with_graceful_shutdown(stopped.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::warn!(target: "codemcp::oauth", error = %e, "login callback listener failed");
            }
        });
        Ok((
            Self {
                addr,
                received,
                stop,
            },
            StateSetter(shared),
        ))
    }

    /// The `redirect_uri` to register and send.
    pub fn redirect_uri(&self) -> String {
        format!("http://{}/callback", self.addr)
    }

    /// Waits for the redirect that carries our `state`.
    pub async fn wait(mut self) -> Result<Redirect, OAuthError> {
        let got = self.received.recv().await;
        self.stop.cancel();
        got.ok_or_else(|| OAuthError::Callback("the callback listener stopped".to_owned()))
    }
}

/// Tells the listener which `state` to accept, once the authorization URL
/// (which rmcp generates with a fresh random state) is known.
pub struct StateSetter(Arc<Shared>);

impl StateSetter {
    pub fn expect(&self, state: &str) {
        let _ = self.0.expected_state.set(state.to_owned());
    }
}

async fn callback(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HashMap<String, String>>,
) -> (StatusCode, &'static str) {
    let Some(expected) = shared.expected_state.get() else {
        return (StatusCode::BAD_REQUEST, "No login is waiting here.\n");
    };
    let state = query.get("state").map(String::as_str).unwrap_or_default();
    if !bool::from(state.as_bytes().ct_eq(expected.as_bytes())) {
        tracing::warn!(target: "codemcp::oauth", "refused a login callback with the wrong state (forged or from an older login)");
        return (
            StatusCode::BAD_REQUEST,
            "This callback does not belong to the login codemcp is waiting for (state mismatch); it was ignored.\n",
        );
    }
    let redirect = match query.get("error") {
        Some(error) => Redirect::Refused {
            error: error.clone(),
            description: query.get("error_description").cloned(),
        },
        None => {
            let mut url = format!("http://{}/callback?", shared.addr);
            url.push_str(&serde_urlencoded_pairs(&query));
            Redirect::Approved { url }
        }
    };
    let refused = matches!(redirect, Redirect::Refused { .. });
    if shared.sink.try_send(redirect).is_err() {
        return (StatusCode::CONFLICT, "This login was already completed.\n");
    }
    if refused {
        (
            StatusCode::OK,
            "The login was refused. You can close this tab; codemcp says why.\n",
        )
    } else {
        (
            StatusCode::OK,
            "codemcp is logged in. You can close this tab.\n",
        )
    }
}

/// The query again, for rmcp's callback URL parser.
fn serde_urlencoded_pairs(query: &HashMap<String, String>) -> String {
    let mut url = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in query {
        url.append_pair(key, value);
    }
    url.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(url: &str) -> (u16, String) {
        // reqwest is built without a TLS provider; main() installs ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let response = reqwest::get(url).await.expect("listener answers");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    }

    #[tokio::test]
    async fn callback_with_a_forged_state_is_refused() {
        let (listener, state) = Listener::bind().await.expect("binds");
        state.expect("the-real-state");
        let base = listener.redirect_uri();
        assert!(base.starts_with("http://127.0.0.1:"), "{base}");
        let (status, body) = get(&format!("{base}?code=attacker&state=forged")).await;
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("state mismatch"), "{body}");
        let (status, _) = get(&format!("{base}?code=attacker")).await;
        assert_eq!(status, 400, "a callback without state is refused too");
        // The login is still waiting, and takes the genuine redirect.
        let (status, _) = get(&format!("{base}?code=genuine&state=the-real-state")).await;
        assert_eq!(status, 200);
        match listener.wait().await.expect("a redirect") {
            Redirect::Approved { url } => {
                assert!(url.contains("code=genuine"), "{url}");
                assert!(!url.contains("attacker"), "{url}");
            }
            other => panic!("expected the approval, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_refused_login_reports_the_servers_error() {
        let (listener, state) = Listener::bind().await.expect("binds");
        state.expect("s");
        let base = listener.redirect_uri();
        let (status, _) = get(&format!(
            "{base}?error=access_denied&error_description=nope&state=s"
        ))
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            listener.wait().await.expect("a redirect"),
            Redirect::Refused {
                error: "access_denied".into(),
                description: Some("nope".into())
            }
        );
    }
}
