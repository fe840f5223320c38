//! Engine choice and escalation: Monty runs everything it can; code that needs
//! a feature Monty lacks goes to the CPython fallback, unless a tool with side
//! effects already ran (then the error comes back with the reason). A session
//! that escalated stays on CPython, so its later snippets see its state, and it
//! takes along the JSON-serializable variables it had set in Monty. Limits are
//! verdicts and never escalate.

use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::imports::{ImportVerdict, classify_import};
use super::syntax;
use super::worker::WorkerEngine;
use super::{
    Engine, ErrorKind, Execution, Run, RunControl, Saved, SessionId, Snapshot, SnapshotKind,
    ToolHost,
};

pub struct Router {
    monty: Arc<dyn Engine>,
    fallback: Option<Arc<WorkerEngine>>,
    /// Said when there is no fallback: how to enable one.
    no_fallback_hint: String,
    escalated: Mutex<HashSet<SessionId>>,
    /// What each session's Monty snippets left that can go along on
    /// escalation (Monty has no `globals()` to ask).
    carried: Mutex<HashMap<SessionId, Carried>>,
}

/// A Monty session's state as CPython can take it over.
#[derive(Default)]
struct Carried {
    /// Top-level names assigned: their JSON-able values go along.
    names: BTreeSet<String>,
    /// Imports and side-effect-free function definitions, in order, the
    /// latest of each name only: run again in CPython first.
    definitions: Vec<(String, String)>,
}

impl Carried {
    fn add(&mut self, outline: &syntax::Outline) {
        self.names.extend(outline.assigned.iter().cloned());
        for (name, source) in &outline.definitions {
            let key = if name.is_empty() { source } else { name };
            self.definitions
                .retain(|(n, s)| if n.is_empty() { s != key } else { n != key });
            self.definitions.push((name.clone(), source.clone()));
        }
    }

    /// The definitions as one snippet.
    fn prelude(&self) -> Option<String> {
        let sources: Vec<&str> = self.definitions.iter().map(|(_, s)| s.as_str()).collect();
        (!sources.is_empty()).then(|| sources.join("\n"))
    }
}

impl Router {
    pub fn new(
        monty: Arc<dyn Engine>,
        fallback: Option<Arc<WorkerEngine>>,
        no_fallback_hint: String,
    ) -> Self {
        Self {
            monty,
            fallback,
            no_fallback_hint,
            escalated: Mutex::default(),
            carried: Mutex::default(),
        }
    }

    fn carried(&self) -> parking_lot::MutexGuard<'_, HashMap<SessionId, Carried>> {
        self.carried.lock()
    }

    /// The session's Monty variables that survive a JSON round trip.
    async fn monty_globals(
        &self,
        session: SessionId,
        names: &BTreeSet<String>,
        tools: Arc<dyn ToolHost>,
    ) -> Option<Map<String, Value>> {
        if names.is_empty() {
            return None;
        }
        let export = Run::new(export_snippet(names), Duration::from_secs(5));
        let execution = self
            .monty
            .run(session, export, tools, RunControl::default())
            .await;
        match execution.result {
            Some(Value::Object(globals)) if !globals.is_empty() => Some(globals),
            _ => None,
        }
    }

    fn escalated(&self) -> parking_lot::MutexGuard<'_, HashSet<SessionId>> {
        self.escalated.lock()
    }

    /// Follows the engine that saved the session's state: a session another
    /// gateway (or this one before a restart) moved to CPython goes on there,
    /// one that went back to Monty elsewhere comes back. Without a fallback, a
    /// CPython state cannot be loaded: the run starts fresh and says so.
    fn follow_saved(&self, session: SessionId, run: &mut Run) -> Option<String> {
        let saved = run.saved.as_ref()?;
        match (saved.snapshot.kind, &self.fallback) {
            (SnapshotKind::Cpython, Some(_)) => {
                self.escalated().insert(session);
                None
            }
            (SnapshotKind::Cpython, None) => {
                run.saved = Some(Arc::new(Saved {
                    version: saved.version,
                    snapshot: Snapshot::fresh(),
                }));
                Some(format!(
                    "this session's state was saved by CPython, which this gateway does not run: it started fresh. {}",
                    self.no_fallback_hint
                ))
            }
            (SnapshotKind::Monty | SnapshotKind::Parked, _) => {
                if self.escalated().remove(&session) {
                    self.fallback_end(session);
                }
                None
            }
        }
    }

    fn fallback_end(&self, session: SessionId) {
        if let Some(fallback) = &self.fallback {
            fallback.end_session(session);
        }
    }

    async fn route(
        &self,
        session: SessionId,
        mut run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        let warning = self.follow_saved(session, &mut run);
        let mut execution = self.route_run(session, run, tools, control).await;
        execution.warnings.extend(warning);
        execution
    }

    async fn route_run(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        if let Some(fallback) = &self.fallback
            && self.escalated().contains(&session)
        {
            let ran = fallback
                .run_with_globals(session, run, tools, control, None)
                .await;
            if ran.no_worker {
                // Its CPython state went with its worker, and none can start
                // (the Docker engine stopped, say): back to Monty, afresh, so
                // snippets Monty can run keep working.
                self.escalated().remove(&session);
                self.monty.end_session(session);
            }
            let mut execution = ran.execution;
            execution.escalated = Some("this session moved to CPython earlier".into());
            return execution;
        }
        // Only a gateway that can escalate needs the outline.
        let outline = match (&self.fallback, &run.outline) {
            (Some(_), Some(read)) => read.clone(),
            (Some(_), None) => {
                let started = crate::timing::start();
                let outline = syntax::outline_safely(&run.code).await;
                crate::timing::since("outline", started);
                Arc::new(outline)
            }
            (None, _) => Arc::default(),
        };
        if let Some(fallback) = &self.fallback
            && let Some(reason) = unsupported_import(&outline.imports)
        {
            // Found before running: no tool call can have happened yet.
            return self
                .escalate(fallback, session, run, tools, control, reason)
                .await;
        }
        let mut execution = self
            .monty
            .run(session, run.clone(), tools.clone(), control.clone())
            .await;
        if self.fallback.is_some() {
            self.carried().entry(session).or_default().add(&outline);
        }
        let Some(error) = execution
            .error
            .as_mut()
            .filter(|e| e.kind == ErrorKind::Unsupported)
        else {
            return execution;
        };
        let reason = error.message.clone();
        match &self.fallback {
            None => {
                error.hint = Some(format!(
                    "{} {}",
                    error.hint.take().unwrap_or_default(),
                    self.no_fallback_hint
                ));
                execution
            }
            Some(_) if execution.side_effects > 0 => {
                error.hint = Some(format!(
                    "{} Not retried in CPython: a tool call with side effects already ran in this run; \
                     rewrite without the feature, or split the snippet so the side effects come after it.",
                    error.hint.take().unwrap_or_default()
                ));
                execution
            }
            Some(fallback) => {
                self.escalate(fallback, session, run, tools, control, reason)
                    .await
            }
        }
    }

    /// Moves the session to CPython, with its Monty variables, and runs there
    /// with the whole wall time again (Monty gave up on it).
    async fn escalate(
        &self,
        fallback: &Arc<WorkerEngine>,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
        reason: String,
    ) -> Execution {
        tracing::info!(target: "codemcp::exec", %reason, "escalating to CPython");
        crate::metrics::escalated();
        self.escalated().insert(session);
        let carried = self.carried().remove(&session).unwrap_or_default();
        let mut globals = self
            .monty_globals(session, &carried.names, tools.clone())
            .await;
        let mut warning = None;
        if let Some(prelude) = carried.prelude() {
            // Its imports and functions go along by running them again:
            // definitions without side effects, so nothing happens twice.
            let define = Run::new(prelude, Duration::from_secs(10));
            let ran = fallback
                .run_with_globals(
                    session,
                    define,
                    tools.clone(),
                    RunControl::default(),
                    globals.take(),
                )
                .await;
            if let Some(error) = ran.execution.error {
                warning = Some(format!(
                    "this session's functions and imports could not all be set up in CPython ({}: {}); \
                     define again what the code needs",
                    error.exc_type, error.message
                ));
            }
        }
        // The session's state comes along as `globals`, not as a snapshot.
        let run = Run {
            saved: None,
            ..run.restarted()
        };
        let ran = fallback
            .run_with_globals(session, run, tools, control, globals)
            .await;
        if ran.no_worker {
            // Nothing ran in CPython: the session stays in Monty, state intact.
            self.escalated().remove(&session);
        }
        let mut escalated = ran.execution;
        escalated.escalated = Some(reason);
        escalated.warnings.extend(warning);
        escalated
    }
}

impl Engine for Router {
    fn name(&self) -> &'static str {
        self.monty.name()
    }

    fn describe(&self) -> String {
        match &self.fallback {
            Some(fallback) => format!(
                "{}; escalates to {}",
                self.monty.describe(),
                fallback.describe()
            ),
            None => format!("{}; no CPython fallback", self.monty.describe()),
        }
    }

    fn run(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> BoxFuture<'_, Execution> {
        Box::pin(self.route(session, run, tools, control))
    }

    fn holds(&self, session: SessionId, version: u64) -> bool {
        match &self.fallback {
            Some(fallback) if self.escalated().contains(&session) => {
                fallback.holds(session, version)
            }
            _ => self.monty.holds(session, version),
        }
    }

    fn end_session(&self, session: SessionId) {
        self.escalated().remove(&session);
        self.carried().remove(&session);
        self.monty.end_session(session);
        self.fallback_end(session);
    }

    fn expire_idle(&self) {
        self.monty.expire_idle();
        if let Some(fallback) = &self.fallback {
            fallback.expire_idle();
        }
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.monty.shutdown().await;
            if let Some(fallback) = &self.fallback {
                fallback.shutdown().await;
            }
        })
    }
}

/// A module the snippet imports (anywhere in it) that CPython has and Monty
/// lacks, found before running it.
fn unsupported_import(imports: &[String]) -> Option<String> {
    let monty_modules = monty::builtin_module_names();
    for module in imports.iter().map(String::as_str) {
        if monty_modules.contains(&module) {
            continue;
        }
        if let ImportVerdict::Unsupported { reason } = classify_import(module) {
            return Some(format!("Monty does not support {reason}"));
        }
    }
    None
}

/// Monty code whose value is a dict of the variables that exist and survive
/// a JSON round trip (anything else is skipped).
fn export_snippet(names: &BTreeSet<String>) -> String {
    let mut code = String::from("import json as __codemcp_json\n__codemcp_globals = {}\n");
    for name in names {
        code.push_str(&format!(
            "try:\n    __codemcp_globals['{name}'] = __codemcp_json.loads(__codemcp_json.dumps({name}))\nexcept Exception:\n    pass\n"
        ));
    }
    code.push_str("__codemcp_globals\n");
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsupported(code: &str) -> Option<String> {
        unsupported_import(&syntax::outline(code).imports)
    }

    #[test]
    fn imports_monty_lacks_are_found_before_running() {
        assert_eq!(unsupported("import json\nimport re"), None);
        assert!(unsupported("x = 1\nif x:\n    import statistics").is_some());
        assert!(unsupported("from enum import Enum").is_some());
        assert!(unsupported("import json, statistics").is_some());
        assert!(unsupported("def f():\n    import statistics").is_some());
        assert_eq!(unsupported("s = '''\nimport statistics\n'''"), None);
        assert_eq!(
            unsupported("import subprocess"),
            None,
            "denied, not escalated"
        );
        assert_eq!(unsupported("import pandas"), None, "not a standard module");
    }

    #[test]
    fn a_redefined_function_is_carried_once_in_its_latest_form() {
        let mut carried = Carried::default();
        carried.add(&syntax::outline("import json\ndef f():\n    return 1"));
        carried.add(&syntax::outline(
            "import json\ndef f():\n    return 2\nx = 3",
        ));
        assert_eq!(
            carried.prelude().as_deref(),
            Some("import json\ndef f():\n    return 2")
        );
        assert!(carried.names.contains("x"));
    }
}
