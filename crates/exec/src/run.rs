//! What a run is: the client's request, how the caller steers it, the
//! session it continues, and the checked [`Run`] engines are handed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::helpers;
use codemcp_store::{Snapshot, SnapshotKind};

/// One `execute_python` call.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub code: String,
    /// The handle of the session to continue; `None` starts a new one.
    pub session: Option<String>,
    /// The caller's own wall-time limit; never more than the configured one.
    pub timeout: Option<Duration>,
}

impl RunRequest {
    /// The run's wall-time limit: the caller's own, never more than `max`.
    pub fn wall_time(&self, max: Duration) -> Duration {
        self.timeout.map_or(max, |t| t.min(max))
    }
}

/// Called after each completed tool call with the number completed so far.
pub type ToolCallObserver = Arc<dyn Fn(u32) + Send + Sync>;

/// How the caller can steer a run from outside.
#[derive(Clone, Default)]
pub struct RunControl {
    pub cancel: CancellationToken,
    pub on_tool_call: Option<ToolCallObserver>,
}

/// Identifies the MCP session whose Python state a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub u64);

impl SessionId {
    /// A process-unique id for a new MCP session.
    pub fn next() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A run that passed the checks every engine relies on: only [`Executor`](crate::Executor)
/// makes one from a client's [`RunRequest`].
#[derive(Debug, Clone)]
pub struct Run {
    /// What the engine runs: the prelude's text (if any), then the agent's
    /// snippet. Engines run it as one code; [`Run::analysis`] describes it.
    pub code: String,
    /// The saved helpers defined before the snippet, at the start of
    /// `code`: its own part, so lines can be told apart (see
    /// [`Run::snippet`]).
    pub prelude: Option<Arc<helpers::Prelude>>,
    /// The run's wall-time limit…
    pub wall: Duration,
    /// …and the instant it ends.
    pub deadline: Instant,
    /// The session's state as last saved: the engine loads it unless the
    /// state it holds is that version already.
    pub saved: Option<Arc<Saved>>,
    /// The version the session's state has after this run.
    pub version: u64,
    /// Return the state after the run as [`Execution::snapshot`].
    pub persist: bool,
    /// What the code does (imports, bindings, calls that want a future),
    /// read once for the whole run: by the pre-flight check, else by the
    /// first reader (the router, an engine). See [`Run::facts`].
    pub analysis: codemcp_snippet::Analysis,
}

/// A session's state as an engine saved it, with its version.
#[derive(Debug)]
pub struct Saved {
    pub version: u64,
    pub snapshot: Snapshot,
}

impl Run {
    /// A run of `code` with `wall` time from now. Engines trust it: outside
    /// tests, only [`Executor`](crate::Executor) makes one, after its checks.
    pub fn new(code: String, wall: Duration) -> Self {
        Self {
            code,
            wall,
            deadline: Instant::now() + wall,
            saved: None,
            version: 0,
            persist: false,
            analysis: codemcp_snippet::Analysis::default(),
            prelude: None,
        }
    }

    /// Puts `prelude` in front of the snippet, as its own part.
    pub fn with_prelude(mut self, prelude: helpers::Prelude) -> Self {
        self.code.insert_str(0, &prelude.text);
        self.prelude = Some(Arc::new(prelude));
        self
    }

    /// Sets the analysis from the snippet's own `facts`, joined to the
    /// prelude's when it has one: it then describes exactly the code the
    /// engine runs, and the snippet is not parsed again.
    pub async fn know(&mut self, facts: &codemcp_snippet::Facts) {
        let known = match self.prelude.as_deref() {
            Some(prelude) => {
                let first = codemcp_snippet::Facts::of_safely(&prelude.text).await;
                codemcp_snippet::Facts::joined(&prelude.text, &first, self.snippet(), facts)
            }
            None => facts.clone(),
        };
        self.analysis = codemcp_snippet::Analysis::known(known);
    }

    /// The agent's own snippet: `code` without the prelude.
    pub fn snippet(&self) -> &str {
        let skip = self.prelude.as_ref().map_or(0, |p| p.text.len());
        self.code.get(skip..).unwrap_or(&self.code)
    }

    /// What the router needs to know of the code: read once per run.
    pub async fn facts(&self) -> Arc<codemcp_snippet::Facts> {
        self.analysis.facts(&self.code).await
    }

    /// Which of the code's calls want a future: what engines need to know
    /// of it, read once per run (not at all without `await` or `asyncio`).
    pub async fn calls(&self) -> Arc<codemcp_snippet::call_sites::SnippetCalls> {
        self.analysis.calls(&self.code).await
    }

    /// The saved state an engine holding `held` (its state's version, if it
    /// has one) must load first. A parked run is always loaded: it is not a
    /// session state any engine holds.
    pub fn to_restore(&self, held: Option<u64>) -> Option<&Snapshot> {
        let saved = self.saved.as_deref()?;
        let parked = saved.snapshot.kind == SnapshotKind::Parked;
        (parked || held != Some(saved.version)).then_some(&saved.snapshot)
    }

    /// The same code with its whole wall time again, from now: a run that
    /// moves to another engine before any of it ran there.
    pub fn restarted(self) -> Self {
        Self {
            deadline: Instant::now() + self.wall,
            ..self
        }
    }
}
