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

use super::monty::classify::{ImportVerdict, classify_import};
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
    /// Top-level names each session's Monty snippets assigned: what to carry
    /// over on escalation (Monty has no `globals()` to ask).
    assigned: Mutex<HashMap<SessionId, BTreeSet<String>>>,
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
            assigned: Mutex::default(),
        }
    }

    fn assigned(&self) -> parking_lot::MutexGuard<'_, HashMap<SessionId, BTreeSet<String>>> {
        self.assigned.lock()
    }

    /// The session's Monty variables that survive a JSON round trip.
    async fn monty_globals(
        &self,
        session: SessionId,
        tools: Arc<dyn ToolHost>,
    ) -> Option<Map<String, Value>> {
        let names = self.assigned().remove(&session)?;
        if names.is_empty() {
            return None;
        }
        let export = Run::new(export_snippet(&names), Duration::from_secs(5));
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
        if let Some(fallback) = &self.fallback
            && let Some(reason) = unsupported_import(&run.code)
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
            self.assigned()
                .entry(session)
                .or_default()
                .extend(assigned_names(&run.code));
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
        self.escalated().insert(session);
        let globals = self.monty_globals(session, tools.clone()).await;
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
        self.assigned().remove(&session);
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

/// A module the snippet imports that CPython has and Monty lacks, found by
/// reading the source before running it.
fn unsupported_import(code: &str) -> Option<String> {
    let monty_modules = monty::builtin_module_names();
    for line in code.lines() {
        let line = line.trim_start();
        let module = match (line.strip_prefix("import "), line.strip_prefix("from ")) {
            (Some(rest), _) | (None, Some(rest)) => {
                rest.split([' ', ',', '.', '\t']).next().unwrap_or_default()
            }
            (None, None) => continue,
        };
        if module.is_empty() || monty_modules.contains(&module) {
            continue;
        }
        if let ImportVerdict::Unsupported { reason } = classify_import(module) {
            return Some(format!("Monty does not support {reason}"));
        }
    }
    None
}

/// Names a snippet binds at the top level: `x = …`, `x: T = …`, `x += …`,
/// `a, b = …`. Functions, classes and modules have no JSON form and are skipped.
fn assigned_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in code.lines() {
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let Some((target, rest)) = line.split_once('=') else {
            continue;
        };
        if rest.starts_with('=') || target.ends_with(['=', '!', '<', '>']) {
            continue; // a comparison, not an assignment
        }
        let target = target.split(':').next().unwrap_or_default();
        let target = target.trim_end_matches(['+', '-', '*', '/', '%', '|', '&', '^', '@']);
        for name in target.split(',').map(str::trim) {
            let mut chars = name.chars();
            let valid = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            if valid && !name.starts_with("__codemcp") {
                names.push(name.to_owned());
            }
        }
    }
    names
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

    #[test]
    fn imports_monty_lacks_are_found_before_running() {
        assert_eq!(unsupported_import("import json\nimport re"), None);
        assert!(unsupported_import("x = 1\nif x:\n    import statistics").is_some());
        assert!(unsupported_import("from enum import Enum").is_some());
        assert_eq!(
            unsupported_import("import subprocess"),
            None,
            "denied, not escalated"
        );
        assert_eq!(
            unsupported_import("import pandas"),
            None,
            "not a standard module"
        );
    }

    #[test]
    fn top_level_assignments_are_found() {
        let code = "x = 1\ny: int = 2\na, b = 3, 4\ntotal += 5\nif x == 1:\n    inner = 6\nprint(x == 2)\ndef f():\n    pass";
        assert_eq!(assigned_names(code), ["x", "y", "a", "b", "total"]);
    }
}
