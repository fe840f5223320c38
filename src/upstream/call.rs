//! Calling one upstream tool: a live connection (waiting a bounded time for
//! a server still starting), the per-call timeout, and what a broken
//! connection tells the agent.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Map, Value};

use super::{Catalog, UpstreamError, tool_value};
use codemcp_exec::{ToolFailure, ToolHost};
use codemcp_sdk::Sdk;

impl Catalog {
    /// Calls one upstream tool with the per-call timeout. A stdio server whose
    /// connection breaks mid-call fails the call at once.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<CallToolResult, UpstreamError> {
        let upstream = self
            .inner
            .upstream(server)
            .ok_or_else(|| UpstreamError::UnknownServer(server.to_owned()))?;
        let looking = codemcp_base::timing::start();
        upstream.touch();
        let live = if upstream.starting() {
            // As long as the server's own handshake may take (the operator's
            // `handshakeTimeout`, 30 s by default: a fixed 10 s failed calls
            // to servers that start slowly on a loaded machine), never longer
            // than one tool call may; the run's own deadline still applies.
            let wait = self
                .inner
                .tool_timeout
                .min(upstream.config.handshake_timeout);
            match tokio::time::timeout(wait, self.inner.peer(&upstream)).await {
                Ok(Ok(live)) => live,
                // Down: its backoff holds; the status says why it failed.
                Ok(Err(UpstreamError::Down { .. })) => return Err(upstream.still_starting(None)),
                Ok(Err(e)) => return Err(upstream.still_starting(Some(e.to_string()))),
                Err(_) => return Err(upstream.still_starting(None)),
            }
        } else {
            self.inner.peer(&upstream).await?
        };
        let _in_use = upstream.in_use();
        codemcp_base::timing::since("upstream peer", looking);
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let params = crate::telemetry::with_trace_meta(params);
        let calling = codemcp_base::timing::start();
        let timeout = self.inner.tool_timeout;
        let lost = async {
            match &live.liveness {
                Some(liveness) => liveness.lost().await,
                None => std::future::pending().await,
            }
        };
        let failure = tokio::select! {
            biased;
            outcome = tokio::time::timeout(timeout, live.peer.call_tool(params)) => match outcome {
                Ok(Ok(result)) => {
                    log_round_trip(calling);
                    return Ok(result);
                }
                Err(_) => {
                    let stuck = live.liveness.as_ref().filter(|l| l.unfinished_bytes() > 0);
                    let Some(liveness) = stuck else {
                        return Err(UpstreamError::Timeout {
                            server: server.to_owned(),
                            tool: tool.to_owned(),
                            seconds: timeout.as_secs_f64(),
                        });
                    };
                    // Later answers would queue behind the unfinished message.
                    liveness.lose(format!(
                        "no answer within {} s (CODEMCP_TOOL_TIMEOUT_MS), and the server's output \
                         stopped in the middle of a message ({} bytes without a line end)",
                        timeout.as_secs_f64(),
                        liveness.unfinished_bytes()
                    ));
                    rmcp::ServiceError::TransportClosed
                }
                Ok(Err(e)) => e,
            },
            reason = lost => {
                tracing::debug!(target: "codemcp::upstream", %server, %reason, "connection lost mid-call");
                rmcp::ServiceError::TransportClosed
            }
        };
        let closed =
            live.peer.is_transport_closed() || live.liveness.as_ref().is_some_and(|l| l.is_lost());
        if !closed {
            return Err(UpstreamError::Call {
                server: server.to_owned(),
                tool: tool.to_owned(),
                message: service_error_text(&failure),
            });
        }
        let reason = match &live.liveness {
            Some(liveness) if liveness.is_lost() => liveness.reason(),
            _ => service_error_text(&failure),
        };
        tracing::warn!(target: "codemcp::upstream", %server, %tool, %reason, "upstream connection lost");
        self.inner
            .mark_down(&upstream, live.generation, &reason)
            .await;
        Err(UpstreamError::Lost {
            server: server.to_owned(),
            tool: tool.to_owned(),
            reason,
        })
    }
}

/// An upstream call's round trip, split where the bytes left and came back
/// (stdio upstreams mark both; see `codemcp_base::timing`).
fn log_round_trip(started: Option<Instant>) {
    let Some(started) = started else {
        return;
    };
    let now = Instant::now();
    codemcp_base::timing::stage("upstream call", now - started);
    let (sent, read) = (
        codemcp_base::timing::UPSTREAM_SENT.take(),
        codemcp_base::timing::UPSTREAM_READ.take(),
    );
    if let (Some(sent), Some(read)) = (sent, read)
        && started <= sent
        && sent <= read
        && read <= now
    {
        codemcp_base::timing::stage("upstream sent", sent - started);
        codemcp_base::timing::stage("upstream answered", read - sent);
        codemcp_base::timing::stage("upstream received", now - read);
    }
}

/// What a failed call tells the agent, in words rather than rmcp's variant names.
pub(super) fn service_error_text(error: &rmcp::ServiceError) -> String {
    match error {
        rmcp::ServiceError::McpError(data) => format!("error {}: {}", data.code.0, data.message),
        rmcp::ServiceError::UnexpectedResponse => {
            "the server answered with something that is not a tool result".into()
        }
        rmcp::ServiceError::TransportClosed => "the answer did not arrive: the connection failed \
             (answers over 16 MiB are refused; the gateway log says why)"
            .into(),
        other => other.to_string(),
    }
}

impl ToolHost for Catalog {
    fn sdk(&self) -> Arc<Sdk> {
        Catalog::sdk(self)
    }

    fn call_tool(
        &self,
        _engine: &'static str,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<Value, ToolFailure>> {
        let catalog = self.clone();
        let (server, tool) = (server.to_owned(), tool.to_owned());
        Box::pin(async move {
            match catalog.call(&server, &tool, args).await {
                Ok(result) => tool_value(result),
                Err(e) => Err(ToolFailure {
                    message: e.to_string(),
                }),
            }
        })
    }
}
