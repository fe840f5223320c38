//! Accepting and serving HTTP/1 connections with bounds: hyper's header
//! read timeout (which also ends kept-alive connections that stay idle), a
//! cap on open connections that keeps half of them for authenticated
//! clients ([`Connections`]), and descriptors freed when `accept` runs out.
//!
//! `axum::serve` has none of these: a few hundred sockets that never send
//! a byte held every descriptor and locked every client out.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::connections::{Admitted, Connections};

/// How long connections get to finish when the gateway stops.
const DRAIN: Duration = Duration::from_secs(5);
/// Between attempts when `accept` fails for want of descriptors and no
/// connection can give way.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `app` on `listener` until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    connections: Arc<Connections>,
    header_timeout: Duration,
    shutdown: CancellationToken,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let http = Arc::new(http);
    let tasks = tokio_util::task::TaskTracker::new();
    let mut warned: Option<Instant> = None;
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let stream = match stream {
            Ok((stream, _)) => stream,
            Err(e) => {
                out_of_descriptors(&e, &connections, &mut warned).await;
                continue;
            }
        };
        let Some(admitted) = connections.admit() else {
            warn_sometimes(&mut warned, || {
                tracing::warn!(target: "codemcp::server", max = connections.max(), "refused a connection: every slot is held by an authenticated client");
            });
            continue;
        };
        tasks.spawn(connection(
            stream,
            admitted,
            app.clone(),
            http.clone(),
            shutdown.clone(),
        ));
    }
    tasks.close();
    if tokio::time::timeout(DRAIN, tasks.wait()).await.is_err() {
        tracing::debug!(target: "codemcp::server", "connections still open at shutdown were dropped");
    }
}

/// One connection, until it ends, has to give way, or the gateway stops.
async fn connection(
    stream: TcpStream,
    admitted: Admitted,
    app: axum::Router,
    http: Arc<hyper::server::conn::http1::Builder>,
    shutdown: CancellationToken,
) {
    let mark = admitted.mark();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(mark.clone());
        let mut app = app.clone();
        async move {
            let request: Request = request.map(axum::body::Body::new);
            let response = tower::Service::call(&mut app, request).await;
            Ok::<_, Infallible>(response.unwrap_or_else(|never| match never {}))
        }
    });
    let conn = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        served = conn.as_mut() => {
            if let Err(e) = served {
                tracing::debug!(target: "codemcp::server", "HTTP connection ended: {e}");
            }
        }
        // Dropping the connection closes the socket.
        () = admitted.evicted.cancelled() => {
            tracing::debug!(target: "codemcp::server", "closed an unauthenticated connection to make room");
        }
        () = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(DRAIN, conn).await;
        }
    }
}

/// `accept` failed: when for want of descriptors, closes the oldest
/// unauthenticated connection so the next `accept` can go through.
async fn out_of_descriptors(
    error: &std::io::Error,
    connections: &Connections,
    warned: &mut Option<Instant>,
) {
    let exhausted = matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
    if exhausted && connections.make_room() {
        // Give the evicted connection's task a moment to close its socket.
        tokio::time::sleep(Duration::from_millis(1)).await;
        return;
    }
    warn_sometimes(warned, || {
        tracing::warn!(target: "codemcp::server", open = connections.open(), "cannot accept a connection: {error}");
    });
    tokio::time::sleep(ACCEPT_BACKOFF).await;
}

/// At most one such warning every 10 s: a flood must not flood the log.
fn warn_sometimes(last: &mut Option<Instant>, warn: impl FnOnce()) {
    if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(10)) {
        *last = Some(Instant::now());
        warn();
    }
}
