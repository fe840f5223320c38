//! The DNS-rebinding check (`Host`, and `Origin` when a browser sends one)
//! for the routes we serve beside `/mcp`, with the same lists and matching
//! rules rmcp applies to `/mcp` itself (its check is private to its service).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::uri::Authority;

/// Which `Host` and `Origin` values a request may carry.
pub struct OriginCheck {
    /// `host` or `host:port`; empty allows every host (as in rmcp).
    pub hosts: Vec<String>,
    /// `scheme://host[:port]`, or `scheme://host:*` for any port.
    pub origins: Vec<String>,
}

impl OriginCheck {
    pub async fn check(self: Arc<Self>, request: Request, next: Next) -> Response {
        if !self.host_allowed(request.uri(), request.headers()) {
            tracing::warn!(target: "codemcp::server", "rejected request with a disallowed Host header (possible DNS rebinding)");
            return (
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed",
            )
                .into_response();
        }
        if !self.origin_allowed(request.headers()) {
            tracing::warn!(target: "codemcp::server", "rejected request with a disallowed Origin header");
            return (
                StatusCode::FORBIDDEN,
                "Forbidden: Origin header is not allowed",
            )
                .into_response();
        }
        next.run(request).await
    }

    fn host_allowed(&self, uri: &Uri, headers: &HeaderMap) -> bool {
        if self.hosts.is_empty() {
            return true;
        }
        let presented = match headers.get(header::HOST) {
            Some(value) => value
                .to_str()
                .ok()
                .and_then(|v| Authority::try_from(v).ok()),
            None => uri.authority().cloned(),
        };
        let Some(presented) = presented else {
            return false;
        };
        let host = normalize(presented.host());
        self.hosts.iter().any(|allowed| {
            let (name, port) = match Authority::try_from(allowed.trim()) {
                Ok(a) => (normalize(a.host()), a.port_u16()),
                Err(_) => (normalize(allowed), None),
            };
            name == host && port.is_none_or(|p| presented.port_u16() == Some(p))
        })
    }

    /// No `Origin` (not a browser) passes; one that is sent must be listed.
    fn origin_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return true;
        };
        let Some(origin) = origin.to_str().ok().and_then(parse_origin) else {
            return false;
        };
        self.origins.iter().any(|allowed| {
            let (base, any_port) = match allowed.trim().strip_suffix(":*") {
                Some(base) => (base, true),
                None => (allowed.trim(), false),
            };
            parse_origin(base).is_some_and(|a| {
                a.scheme == origin.scheme
                    && a.host == origin.host
                    && (any_port || a.port.is_none() || a.port == origin.port())
            })
        })
    }
}

struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    /// The port, the scheme's default when the origin omits it.
    fn port(&self) -> Option<u16> {
        self.port.or(match self.scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        })
    }
}

fn parse_origin(value: &str) -> Option<Origin> {
    let uri = Uri::try_from(value.trim()).ok()?;
    let authority = uri.authority()?;
    Some(Origin {
        scheme: uri.scheme_str()?.to_ascii_lowercase(),
        host: normalize(authority.host()),
        port: authority.port_u16(),
    })
}

fn normalize(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> OriginCheck {
        OriginCheck {
            hosts: vec!["localhost".into(), "::1".into(), "example.com:8080".into()],
            origins: vec!["http://localhost:*".into(), "https://example.com".into()],
        }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = value.parse() {
                map.insert(name.clone(), value);
            }
        }
        map
    }

    #[test]
    fn dns_rebinding_host_is_refused() {
        let uri = Uri::from_static("/metrics");
        let c = check();
        assert!(c.host_allowed(&uri, &headers(&[(header::HOST, "localhost:9000")])));
        assert!(c.host_allowed(&uri, &headers(&[(header::HOST, "[::1]:9000")])));
        assert!(c.host_allowed(&uri, &headers(&[(header::HOST, "example.com:8080")])));
        assert!(!c.host_allowed(&uri, &headers(&[(header::HOST, "example.com:9090")])));
        assert!(!c.host_allowed(&uri, &headers(&[(header::HOST, "evil.example:9000")])));
    }

    #[test]
    fn cross_origin_browser_request_is_refused() {
        let c = check();
        assert!(c.origin_allowed(&headers(&[])));
        assert!(c.origin_allowed(&headers(&[(header::ORIGIN, "http://localhost:3000")])));
        assert!(c.origin_allowed(&headers(&[(header::ORIGIN, "https://example.com")])));
        assert!(!c.origin_allowed(&headers(&[(header::ORIGIN, "https://evil.example")])));
        assert!(!c.origin_allowed(&headers(&[(header::ORIGIN, "null")])));
    }
}
