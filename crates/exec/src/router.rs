//! Engine choice and escalation: Monty runs everything it can; code that needs
//! a feature Monty lacks goes to the CPython fallback, unless a tool with side
//! effects already ran (then the error comes back with the reason). A session
//! that escalates takes along the JSON-serializable variables, imports and
//! functions it had set in Monty; after each run in CPython it comes back to
//! Monty the same way when all its state can be held there (JSON values and
//! functions whose source Monty runs), and stays on CPython otherwise.
//! Limits are verdicts and never escalate.

use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::worker::WorkerEngine;
use super::{
    Engine, ErrorKind, Execution, Run, RunControl, RunError, Saved, SessionId, Snapshot,
    SnapshotKind, ToolHost,
};
use codemcp_snippet::imports::{ImportVerdict, classify_import};
use codemcp_snippet::syntax;

mod carry;
use carry::{Carried, cpython_export_snippet, export_snippet, holdable_values, monty_load_snippet};

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
        // The run's one analysis (usually the pre-flight check's) has the
        // outline: what escalates, and what must not run on Monty at all.
        let started = codemcp_base::timing::start();
        let facts = run.facts().await;
        codemcp_base::timing::since("outline", started);
        let outline = &facts.outline;
        if let Some(fallback) = &self.fallback
            && self.escalated().contains(&session)
        {
            let (version, persist) = (run.version, run.persist);
            let ran = fallback
                .run_with_globals(session, run, tools.clone(), control, None)
                .await;
            let mut execution = ran.execution;
            execution.escalated = Some("this session moved to CPython earlier".into());
            if ran.no_worker {
                // Its CPython state went with its worker, and none can start
                // (the Docker engine stopped, say): back to Monty, afresh, so
                // snippets Monty can run keep working.
                self.escalated().remove(&session);
                self.carried().remove(&session);
                self.monty.end_session(session);
            } else {
                self.carried().entry(session).or_default().add(outline);
                let back = Back {
                    tools,
                    version,
                    persist,
                };
                self.come_back(fallback, session, &mut execution, back)
                    .await;
            }
            return execution;
        }
        if let Some(what) = &outline.needs_laziness {
            let reason =
                format!("this code depends on lazy iteration, which Monty does not have: {what}");
            // Found before running: no tool call can have happened yet.
            return match &self.fallback {
                Some(fallback) => {
                    self.escalate(fallback, session, (run, outline), tools, control, reason)
                        .await
                }
                None => self.refuse_eager(reason),
            };
        }
        if let Some(fallback) = &self.fallback
            && let Some(reason) = unsupported_import(&outline.imports).or_else(|| {
                outline
                    .differs_on_monty
                    .as_ref()
                    .map(|what| format!("Monty answers {what} differently from CPython"))
            })
        {
            // Found before running: no tool call can have happened yet.
            return self
                .escalate(fallback, session, (run, outline), tools, control, reason)
                .await;
        }
        // What Monty runs: the code, or its equivalent where Monty lacks the
        // construct as written (CPython, on escalation, gets the code).
        let on_monty = match &outline.eager_equivalent {
            Some(code) => Run {
                code: code.clone(),
                ..run.clone()
            },
            None => run.clone(),
        };
        let mut execution = self
            .monty
            .run(session, on_monty, tools.clone(), control.clone())
            .await;
        if self.fallback.is_some() {
            self.carried().entry(session).or_default().add(outline);
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
                self.escalate(fallback, session, (run, outline), tools, control, reason)
                    .await
            }
        }
    }

    /// Code whose answer depends on lazy iteration, with no CPython to run
    /// it: refused before its first line, so nothing ran and the session is
    /// as it was.
    fn refuse_eager(&self, reason: String) -> Execution {
        let hint = format!(
            "Monty computes generator expressions, map(), filter(), zip(), enumerate() and reversed() \
             in full, at once. Rewrite with a for loop that breaks at the first match (first = None; \
             for x in xs: if p(x): first = x; break), or a list comprehension when every item is \
             needed anyway; over items that call nothing, next(iter([x for x in xs if p(x)]), None) \
             runs on Monty. {}",
            self.no_fallback_hint
        );
        Execution {
            error: Some(
                RunError::new(ErrorKind::Unsupported, "NotImplementedError", reason)
                    .with_hint(hint.trim_end()),
            ),
            ..Execution::of(self.monty.name())
        }
    }

    /// Moves the session to CPython, with its Monty variables, and runs there
    /// with the whole wall time again (Monty gave up on it).
    async fn escalate(
        &self,
        fallback: &Arc<WorkerEngine>,
        session: SessionId,
        (run, outline): (Run, &syntax::Outline),
        tools: Arc<dyn ToolHost>,
        control: RunControl,
        reason: String,
    ) -> Execution {
        tracing::info!(target: "codemcp::exec", %reason, "escalating to CPython");
        codemcp_base::metrics::escalated();
        self.escalated().insert(session);
        let mut carried = self.carried().remove(&session).unwrap_or_default();
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
        let back = Back {
            tools: tools.clone(),
            version: run.version,
            persist: run.persist,
        };
        let ran = fallback
            .run_with_globals(session, run, tools, control, globals)
            .await;
        let mut escalated = ran.execution;
        escalated.escalated = Some(reason);
        escalated.warnings.extend(warning);
        if ran.no_worker {
            // Nothing ran in CPython: the session stays in Monty, state intact.
            self.escalated().remove(&session);
        } else {
            // What CPython now holds, for the way back.
            carried.add(outline);
            self.carried().insert(session, carried);
            self.come_back(fallback, session, &mut escalated, back)
                .await;
        }
        escalated
    }

    /// After a run in CPython: moves the session back to Monty when all
    /// its CPython state can be held there, so the next run starts on the
    /// safer (and faster) engine. Its JSON variables go along as values,
    /// its imports and functions by running their sources in Monty; a
    /// class, an object, a function whose source is unknown or does not
    /// run in Monty keeps the session on CPython.
    async fn come_back(
        &self,
        fallback: &Arc<WorkerEngine>,
        session: SessionId,
        execution: &mut Execution,
        back: Back,
    ) {
        if execution.error.is_some() {
            return; // a failed run may have left its state half-made
        }
        let (functions, prelude) = {
            let carried = self.carried();
            let Some(carried) = carried.get(&session) else {
                return;
            };
            let functions: Vec<String> = carried
                .definitions
                .iter()
                .filter(|(name, _)| !name.is_empty())
                .map(|(name, _)| name.clone())
                .collect();
            (functions, carried.prelude())
        };
        let export = Run::new(cpython_export_snippet(&functions), Duration::from_secs(5));
        let ran = fallback
            .run_with_globals(
                session,
                export,
                back.tools.clone(),
                RunControl::default(),
                None,
            )
            .await;
        let Some(values) = holdable_values(ran.execution.result) else {
            return;
        };
        let load = Run {
            version: back.version,
            persist: back.persist,
            ..Run::new(
                monty_load_snippet(prelude.as_deref(), &values),
                Duration::from_secs(10),
            )
        };
        self.monty.end_session(session);
        let loaded = self
            .monty
            .run(session, load, back.tools, RunControl::default())
            .await;
        if let Some(error) = loaded.error {
            tracing::debug!(target: "codemcp::exec", message = %error.message, "session stays on CPython");
            self.monty.end_session(session);
            return;
        }
        tracing::info!(target: "codemcp::exec", "session back on Monty");
        self.escalated().remove(&session);
        self.fallback_end(session);
        if let Some(carried) = self.carried().get_mut(&session) {
            carried.names = values.keys().cloned().collect();
        }
        if back.persist {
            // The saved state is Monty's now, so a restart resumes there.
            execution.snapshot = loaded.snapshot;
        }
    }
}

/// What [`Router::come_back`] needs of the run it follows.
struct Back {
    tools: Arc<dyn ToolHost>,
    version: u64,
    persist: bool,
}

#[async_trait::async_trait]
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

    async fn run(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        self.route(session, run, tools, control).await
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

    async fn shutdown(&self) {
        self.monty.shutdown().await;
        if let Some(fallback) = &self.fallback {
            fallback.shutdown().await;
        }
    }
}

/// A module the snippet imports (anywhere in it) that CPython has and Monty
/// lacks, found before running it.
fn unsupported_import(imports: &[String]) -> Option<String> {
    let monty_modules = monty::builtin_module_names();
    for module in imports.iter().map(String::as_str) {
        // Monty runs `from __future__ import annotations` (and the rest of
        // `__future__`, all no-ops since 3.7).
        if monty_modules.contains(&module) || module == "__future__" {
            continue;
        }
        if let ImportVerdict::Unsupported { reason } = classify_import(module) {
            return Some(format!("Monty does not support {reason}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn unsupported(code: &str) -> Option<String> {
        unsupported_import(&codemcp_snippet::facts::Facts::of(code).outline.imports)
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
        assert_eq!(
            unsupported("from __future__ import annotations\nx: int = 1"),
            None,
            "Monty runs __future__"
        );
        assert!(unsupported("import gc").is_some(), "harmless: to CPython");
    }

    #[test]
    fn only_sessions_without_pinned_names_come_back() {
        let back = json!({"values": {"x": [1, "é"]}, "pinned": []});
        let values = holdable_values(Some(back)).unwrap_or_default();
        assert_eq!(values.get("x"), Some(&json!([1, "é"])));
        let stay = json!({"values": {"x": 1}, "pinned": ["obj"]});
        assert!(holdable_values(Some(stay)).is_none());
        let code = monty_load_snippet(Some("def f():\n    return 1"), &values);
        assert!(code.starts_with("def f():"), "{code}");
        assert!(
            code.contains(r#"x = __codemcp_json.loads("[1,\"é\"]")"#),
            "{code}"
        );
    }

    #[test]
    fn a_redefined_function_is_carried_once_in_its_latest_form() {
        let mut carried = Carried::default();
        carried
            .add(&codemcp_snippet::facts::Facts::of("import json\ndef f():\n    return 1").outline);
        carried.add(
            &codemcp_snippet::facts::Facts::of("import json\ndef f():\n    return 2\nx = 3")
                .outline,
        );
        assert_eq!(
            carried.prelude().as_deref(),
            Some("import json\ndef f():\n    return 2")
        );
        assert!(carried.names.contains("x"));
    }
}
