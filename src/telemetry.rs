//! Tracing: logs to stderr always; spans exported over OTLP/HTTP only when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (otherwise no span is even made);
//! and the W3C trace context (SEP-414: `traceparent` and `tracestate` in a
//! request's `params._meta`) of an `execute_python` call carried into the
//! `_meta` of every upstream call its run makes.
//!
//! The context travels in task-locals: the request's around the run (and
//! into `CallContext`, which the engines hand back with each call), the
//! call's around `Catalog::call`, which copies it into the request.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use rmcp::model::{CallToolRequestParams, MetaObject};
use tracing::Instrument;
use tracing::Level;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Layer as _, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Set once when spans are exported; read on every run.
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// The installed tracing; [`Telemetry::shutdown`] flushes spans not yet sent.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the global subscriber: logs to stderr (stdout is the stdio
    /// MCP channel), plus the OTLP exporter when it is configured. Call
    /// before the async runtime starts (the exporter's client blocks).
    pub fn init(filter: EnvFilter) -> Self {
        let provider = otlp_provider();
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_filter(filter);
        // Our own spans only, whatever `CODEMCP_LOG` lets through to stderr.
        let spans = provider.as_ref().map(|p| {
            tracing_opentelemetry::layer()
                .with_tracer(p.tracer("codemcp"))
                .with_filter(Targets::new().with_target("codemcp", Level::INFO))
        });
        tracing_subscriber::registry().with(logs).with(spans).init();
        if provider.is_some() {
            tracing::info!(target: "codemcp::telemetry", "exporting spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)");
        }
        Self { provider }
    }

    /// Sends the spans still queued, at exit.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(target: "codemcp::telemetry", error = %e, "flushing spans failed");
        }
    }
}

/// The OTLP/HTTP (protobuf) exporter the `OTEL_EXPORTER_OTLP_*` variables
/// describe, or nothing when no endpoint is set.
fn otlp_provider() -> Option<SdkTracerProvider> {
    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok()?;
    if endpoint.trim().is_empty() {
        return None;
    }
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(exporter) => exporter,
        Err(e) => {
            // The subscriber is not installed yet.
            eprintln!("codemcp: not exporting spans to {endpoint}: {e}");
            return None;
        }
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("codemcp");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    EXPORTING.store(true, Ordering::Release);
    Some(provider)
}

fn exporting() -> bool {
    EXPORTING.load(Ordering::Acquire)
}

/// The trace context of one `execute_python` request: what the client sent
/// (validated), and the run's span when spans are exported.
#[derive(Clone, Default)]
pub struct RunTrace {
    incoming: Option<opentelemetry::Context>,
    span: Option<tracing::Span>,
}

tokio::task_local! {
    static RUN: RunTrace;
    static CALL: MetaObject;
}

impl RunTrace {
    /// The context in `_meta`; a malformed `traceparent` counts as none.
    fn from_meta(meta: &MetaObject) -> Self {
        let mut carrier = HashMap::new();
        for key in ["traceparent", "tracestate"] {
            if let Some(value) = meta.0.get(key).and_then(serde_json::Value::as_str) {
                carrier.insert(key.to_owned(), value.to_owned());
            }
        }
        let incoming = TraceContextPropagator::new().extract(&carrier);
        let valid = incoming.span().span_context().is_valid();
        let span = exporting().then(|| {
            let span = tracing::info_span!(target: "codemcp::server", "execute_python", otel.kind = "server");
            if valid && span.set_parent(incoming.clone()).is_err() {
                tracing::debug!(target: "codemcp::telemetry", "the run's span could not take the request's parent");
            }
            span
        });
        Self {
            incoming: valid.then_some(incoming),
            span,
        }
    }

    /// The trace of the request this task serves (none outside one).
    pub fn current() -> Self {
        RUN.try_with(Clone::clone).unwrap_or_default()
    }

    /// What goes into an upstream call's `_meta`: the call's own span as
    /// parent when spans are exported, else the client's context unchanged.
    fn outgoing(&self, call_span: Option<&tracing::Span>) -> Option<MetaObject> {
        // A span no layer records has no context of its own.
        let own = call_span
            .map(OpenTelemetrySpanExt::context)
            .filter(|context| context.span().span_context().is_valid());
        let context = own.or_else(|| self.incoming.clone())?;
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&context, &mut carrier);
        let traceparent = carrier.remove("traceparent")?;
        let mut meta = MetaObject::new();
        meta.set_traceparent(traceparent);
        if let Some(state) = carrier.remove("tracestate").filter(|s| !s.is_empty()) {
            meta.set_tracestate(state);
        }
        Some(meta)
    }

    /// Runs one upstream call of this run: in a child span of the run's, its
    /// trace context handed to [`with_trace_meta`].
    pub async fn upstream_call<F: Future>(&self, server: &str, tool: &str, call: F) -> F::Output {
        let span = self.span.as_ref().map(|run| {
            tracing::info_span!(target: "codemcp::upstream", parent: run, "tools/call", server, tool, otel.kind = "client")
        });
        match (self.outgoing(span.as_ref()), span) {
            (Some(meta), Some(span)) => CALL.scope(meta, call.instrument(span)).await,
            (Some(meta), None) => CALL.scope(meta, call).await,
            (None, _) => call.await,
        }
    }
}

/// Serves one request with the trace context of its `_meta`: the run and
/// the tasks [`carry`] takes along see it as [`RunTrace::current`].
pub async fn traced_request<F: Future>(meta: &MetaObject, request: F) -> F::Output {
    let trace = RunTrace::from_meta(meta);
    match trace.span.clone() {
        Some(span) => RUN.scope(trace, request.instrument(span)).await,
        None => RUN.scope(trace, request).await,
    }
}

/// `future`, to be spawned, with this task's request trace.
pub fn carry<F: Future>(future: F) -> impl Future<Output = F::Output> {
    RUN.scope(RunTrace::current(), future)
}

/// An upstream request carrying the trace context of the call being made.
pub fn with_trace_meta(mut params: CallToolRequestParams) -> CallToolRequestParams {
    if let Ok(meta) = CALL.try_with(Clone::clone) {
        params.meta.get_or_insert_default().0.extend(meta);
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn meta(traceparent: &str) -> MetaObject {
        let mut meta = MetaObject::new();
        meta.set_traceparent(traceparent);
        meta.set_tracestate("vendor=abc");
        meta
    }

    #[tokio::test]
    async fn the_clients_context_reaches_the_upstream_request_unchanged() {
        let sent = traced_request(&meta(PARENT), async {
            let trace = RunTrace::current();
            trace
                .upstream_call("s", "t", async {
                    with_trace_meta(CallToolRequestParams::new("t"))
                })
                .await
        })
        .await;
        let sent = sent.meta.unwrap_or_default();
        assert_eq!(sent.get_traceparent(), Some(PARENT));
        assert_eq!(sent.get_tracestate(), Some("vendor=abc"));
    }

    #[tokio::test]
    async fn a_malformed_traceparent_is_not_forwarded() {
        let sent = traced_request(&meta("00-zz-not-a-trace"), async {
            RunTrace::current()
                .upstream_call("s", "t", async {
                    with_trace_meta(CallToolRequestParams::new("t"))
                })
                .await
        })
        .await;
        assert!(sent.meta.is_none());
    }

    #[tokio::test]
    async fn spawned_work_keeps_the_request_trace_only_when_carried() {
        let (carried, plain) = traced_request(&meta(PARENT), async {
            let has_trace = || async { RunTrace::current().incoming.is_some() };
            let carried = tokio::spawn(carry(has_trace())).await;
            let plain = tokio::spawn(has_trace()).await;
            (carried.unwrap_or(false), plain.unwrap_or(true))
        })
        .await;
        assert!(carried);
        assert!(!plain);
    }
}
