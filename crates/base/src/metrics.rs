//! Every metric the gateway keeps, in one registry that `GET /metrics`
//! encodes (OpenMetrics text, which Prometheus scrapes). The rest of the code
//! records through the functions here, one line at each point where a thing
//! happens. Labels are bounded: engine names, server names from the config,
//! fixed outcome words; never arguments, tool names or session ids.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    engine: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EngineLabel {
    engine: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabel {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

type Latencies<L> = Family<L, Histogram, fn() -> Histogram>;

/// 1 ms to ~65 s, doubling.
fn latency_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

struct Metrics {
    registry: Registry,
    runs: Family<RunLabels, Counter>,
    run_seconds: Latencies<EngineLabel>,
    tool_calls: Family<CallLabels, Counter>,
    tool_call_seconds: Latencies<ServerLabel>,
    approvals: Family<OutcomeLabel, Counter>,
    escalations: Counter,
    sessions: Gauge,
    pool_workers: Gauge,
    containers: Gauge,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

impl Metrics {
    fn new() -> Self {
        let metrics = Self {
            registry: Registry::with_prefix("codemcp"),
            runs: Family::default(),
            run_seconds: Family::new_with_constructor(latency_buckets),
            tool_calls: Family::default(),
            tool_call_seconds: Family::new_with_constructor(latency_buckets),
            approvals: Family::default(),
            escalations: Counter::default(),
            sessions: Gauge::default(),
            pool_workers: Gauge::default(),
            containers: Gauge::default(),
        };
        metrics.register()
    }

    fn register(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "runs",
            "execute_python runs, by engine and outcome",
            self.runs.clone(),
        );
        r.register(
            "run_duration_seconds",
            "Wall time of execute_python runs",
            self.run_seconds.clone(),
        );
        r.register(
            "tool_calls",
            "Upstream tool calls made by runs, by server and outcome",
            self.tool_calls.clone(),
        );
        r.register(
            "tool_call_duration_seconds",
            "Round trip of upstream tool calls",
            self.tool_call_seconds.clone(),
        );
        r.register(
            "approvals",
            "Approvals of ask-policy tool calls: asked, approved, denied",
            self.approvals.clone(),
        );
        r.register(
            "escalations",
            "Runs moved from Monty to the CPython fallback",
            self.escalations.clone(),
        );
        r.register("sessions", "Live MCP sessions", self.sessions.clone());
        r.register(
            "pool_workers",
            "Monty pool workers held by sessions",
            self.pool_workers.clone(),
        );
        r.register(
            "containers",
            "Live CPython worker containers",
            self.containers.clone(),
        );
        self
    }
}

/// The registry in the OpenMetrics text format.
pub fn encode() -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &METRICS.registry)?;
    Ok(text)
}

/// A run ended (or was refused before it began); `outcome` is `ok`,
/// `parked` or the error's kind (`RunError`'s `ErrorKind::label`).
pub fn run_finished(engine: &str, outcome: &str, took: Duration) {
    METRICS
        .runs
        .get_or_create(&RunLabels {
            engine: engine.to_owned(),
            outcome: outcome.to_owned(),
        })
        .inc();
    METRICS
        .run_seconds
        .get_or_create(&EngineLabel {
            engine: engine.to_owned(),
        })
        .observe(took.as_secs_f64());
}

/// An upstream call returned (`outcome`: `ok`, `error`, `timeout`). Only
/// servers of the catalog get here: unknown names are refused before.
pub fn tool_call(server: &str, outcome: &'static str, took: Duration) {
    METRICS
        .tool_calls
        .get_or_create(&CallLabels {
            server: server.to_owned(),
            outcome: outcome.to_owned(),
        })
        .inc();
    METRICS
        .tool_call_seconds
        .get_or_create(&ServerLabel {
            server: server.to_owned(),
        })
        .observe(took.as_secs_f64());
}

/// The user was asked to approve a call.
pub fn approval_asked() {
    approval("asked");
}

/// An `ask` call went on (`approved`) or was refused (`denied`).
pub fn approval_decided(approved: bool) {
    approval(if approved { "approved" } else { "denied" });
}

fn approval(outcome: &str) {
    METRICS
        .approvals
        .get_or_create(&OutcomeLabel {
            outcome: outcome.to_owned(),
        })
        .inc();
}

pub fn escalated() {
    METRICS.escalations.inc();
}

/// Counts one live thing in a gauge for as long as it is held.
#[derive(Debug)]
pub struct Held(&'static Gauge);

impl Held {
    fn new(gauge: &'static Gauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// One live MCP session, while held.
pub fn session() -> Held {
    Held::new(&METRICS.sessions)
}

/// One Monty pool worker held by a session, while held.
pub fn pool_worker() -> Held {
    Held::new(&METRICS.pool_workers)
}

/// One worker container, while held.
pub fn container() -> Held {
    Held::new(&METRICS.containers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_names_every_family_with_the_prefix() {
        tool_call("everything", "ok", Duration::from_millis(3));
        let text = encode().unwrap_or_default();
        for name in [
            "codemcp_tool_calls_total{server=\"everything\",outcome=\"ok\"}",
            "codemcp_tool_call_duration_seconds_count{server=\"everything\"}",
            "codemcp_escalations_total",
            "codemcp_sessions",
            "codemcp_pool_workers",
            "codemcp_containers",
        ] {
            assert!(text.contains(name), "{name} missing from:\n{text}");
        }
    }

    #[test]
    fn a_held_gauge_goes_back_down_when_dropped() {
        let before = METRICS.containers.get();
        let held = container();
        assert_eq!(METRICS.containers.get(), before + 1);
        drop(held);
        assert_eq!(METRICS.containers.get(), before);
    }
}
