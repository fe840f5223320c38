//! Who a request comes from: the bearer check in front of `/mcp`, and the
//! identity every handler derives from it (session owner, audit name, and
//! the principal's own view of the tools).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::RoleServer;
use rmcp::service::RequestContext;

use super::principals::{Principal, Principals};
use crate::upstream::Catalog;
use codemcp_sdk::Sdk;
use codemcp_sdk::policy::Decision;
use codemcp_store::Owner;

/// The caller of one request.
#[derive(Clone)]
pub struct Identity {
    /// Whose session handles it may use.
    pub owner: Owner,
    /// Its name in the audit log: the principal, else a token digest prefix.
    pub label: String,
    /// A principal of `CODEMCP_HTTP_TOKENS`, with its policy overrides.
    pub principal: Option<Arc<Principal>>,
}

impl Identity {
    /// Stdio, or HTTP with `CODEMCP_HTTP_TOKEN` (or no token at all).
    pub fn of_token(token: Option<&str>) -> Self {
        let owner = Owner::of_token(token);
        Self {
            owner,
            label: owner.label(),
            principal: None,
        }
    }

    pub fn of_principal(principal: Arc<Principal>) -> Self {
        Self {
            owner: principal.owner(),
            label: format!("principal:{}", principal.name),
            principal: Some(principal),
        }
    }

    /// The identity the authentication layer attached to the HTTP request.
    pub fn of_request(context: &RequestContext<RoleServer>) -> Self {
        match context.extensions.get::<http::request::Parts>() {
            Some(parts) => Self::of_http(&parts.extensions, &parts.headers),
            None => Self::of_token(None),
        }
    }

    /// The identity of an HTTP request that passed the bearer check.
    pub fn of_http(extensions: &http::Extensions, headers: &HeaderMap) -> Self {
        if let Some(principal) = extensions.get::<Arc<Principal>>() {
            return Self::of_principal(principal.clone());
        }
        Self::of_token(bearer(headers))
    }

    /// The SDK this caller sees: its denied tools do not exist for it.
    pub fn sdk(&self, catalog: &Catalog) -> Arc<Sdk> {
        match &self.principal {
            Some(principal) => principal.sdk(catalog),
            None => catalog.sdk(),
        }
    }

    /// `server.tool`'s policy for this caller; `None` for an unknown tool.
    pub fn policy(&self, catalog: &Catalog, server: &str, tool: &str) -> Option<Decision> {
        match &self.principal {
            Some(principal) => catalog.policy_with(&principal.overrides, server, tool),
            None => catalog.policy(server, tool),
        }
    }

    /// The policy of a resource or prompt `method` (`resources/read`, …) of
    /// `server` for this caller; `None` for an unknown server.
    pub fn resource_policy(
        &self,
        catalog: &Catalog,
        server: &str,
        method: &str,
    ) -> Option<Decision> {
        let operator = catalog.resource_policy(server, method)?;
        Some(match &self.principal {
            Some(principal) => principal.overrides.apply(server, method, operator),
            None => operator,
        })
    }
}

/// The bearer token of a request, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
}

/// Which bearer tokens `/mcp` accepts.
pub struct Authenticator {
    /// `CODEMCP_HTTP_TOKEN`: one shared token.
    pub token: Option<Arc<str>>,
    /// `CODEMCP_HTTP_TOKENS`: a token per principal.
    pub principals: Option<Arc<Principals>>,
}

impl Authenticator {
    pub fn is_open(&self) -> bool {
        self.token.is_none() && self.principals.is_none()
    }

    /// Lets a request with a known token through, its principal attached.
    pub async fn check(self: Arc<Self>, mut request: Request, next: Next) -> Response {
        let presented = bearer(request.headers()).map(str::to_owned);
        if let Some(presented) = presented {
            let principal = self
                .principals
                .as_ref()
                .and_then(|all| all.authenticate(&presented));
            if let Some(principal) = principal {
                request.extensions_mut().insert(principal);
                return next.run(request).await;
            }
            let shared = self.token.as_ref().is_some_and(|token| {
                codemcp_base::secret::constant_time_eq(presented.as_bytes(), token.as_bytes())
            });
            if shared {
                return next.run(request).await;
            }
        }
        tracing::warn!(target: "codemcp::server", "rejected HTTP request without a valid bearer token");
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or invalid bearer token",
        )
            .into_response()
    }
}
