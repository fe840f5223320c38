//! A request's body is read whole, within a time and a size, before it
//! reaches `/mcp`: a client that sends its headers and then drips the body
//! a byte a minute is answered 408 instead of holding its connection (and
//! rmcp's handler) for as long as it likes.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// rmcp's own bound on a POST body (4 MiB), which it checks again.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The body, as read, for the layers after this one to look at.
#[derive(Clone)]
pub struct Buffered(pub Bytes);

/// Reads the body within `timeout` and hands the request on with it.
pub async fn read_within(timeout: Duration, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY_BYTES)).await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body refused (at most {MAX_BODY_BYTES} bytes): {e}"),
            )
                .into_response();
        }
        Err(_) => {
            tracing::debug!(target: "codemcp::server", "a request body did not arrive in time");
            return (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "Request Timeout: the body did not arrive within {} ms",
                    timeout.as_millis()
                ),
            )
                .into_response();
        }
    };
    let mut request = Request::from_parts(parts, Body::from(bytes.clone()));
    request.extensions_mut().insert(Buffered(bytes));
    next.run(request).await
}
