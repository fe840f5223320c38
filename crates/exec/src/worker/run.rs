//! One run in a session's CPython worker: the session checked out, its
//! saved state restored, the code sent with the catalog the worker lacks,
//! and the outcome settled (see `outcome.rs`).

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Map, Value};

use super::link::RunContext;
use super::outcome::Outcome;
use super::protocol::{FunctionInfo, RunParams, WorkerCatalog};
use super::{WorkerEngine, WorkerSession};
use crate::{Execution, Run, RunControl, SessionId, Snapshot, ToolHost};
use codemcp_sdk::Sdk;

impl WorkerEngine {
    /// Runs `run` in `session`'s CPython state, first setting `globals` (the
    /// variables a session brings along when it escalates from Monty).
    pub async fn run_with_globals(
        &self,
        session: SessionId,
        run: Run,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
        globals: Option<Map<String, Value>>,
    ) -> WorkerRun {
        let mut execution = Execution::of(self.spawner.engine());
        let checked_out = self
            .sessions
            .check_out(
                session,
                WorkerSession::default,
                run.deadline,
                &control.cancel,
            )
            .await;
        let mut guard = match checked_out {
            Ok(guard) => guard,
            Err(error) => {
                execution.error = Some(error);
                return WorkerRun::ran(execution);
            }
        };
        if let Err(failed) = self.ensure_worker(&mut guard, &run).await {
            return failed;
        }
        let name = session.0.to_string();
        let globals = match self.restore(&mut guard, &name, &run, &mut execution).await {
            Some(restored) => Some(restored),
            None => globals,
        };
        let Some(worker) = guard.worker.as_mut() else {
            return WorkerRun::ran(execution);
        };
        let sdk = tools.sdk();
        let catalog = self.catalog_for(&sdk);
        let version = catalog.version;
        // Only a worker that has not seen this catalog gets it sent.
        let catalog = (worker.catalog_version != Some(version)).then(|| (*catalog).clone());
        let context = Arc::new(RunContext {
            engine: self.spawner.engine(),
            tools,
            sdk,
            max_tool_calls: self.limits.max_tool_calls,
            tool_calls: AtomicU32::new(0),
            side_effects: AtomicU32::new(0),
            observer: control.on_tool_call.clone(),
        });
        let future_calls = run.calls().await.future_lines(&run.code);
        worker.link.begin_run(&name, context.clone());
        let params = RunParams {
            session: name.clone(),
            code: run.code.clone(),
            timeout_ms: u64::try_from(run.wall.as_millis()).unwrap_or(u64::MAX),
            max_output_bytes: self.limits.max_output_bytes,
            catalog,
            globals,
            return_globals: run.persist.then_some(self.limits.max_state_bytes),
            future_calls: Some(future_calls),
        };
        let params = serde_json::to_value(&params).unwrap_or(Value::Null);
        let link = worker.link.clone();
        let outcome = tokio::select! {
            reply = link.request("run", params) => Outcome::Reply(reply),
            // A container can die without its connection closing cleanly.
            exit = worker.process.exited() => Outcome::Exited(exit),
            () = tokio::time::sleep_until(run.deadline.into()) => Outcome::Deadline,
            () = control.cancel.cancelled() => Outcome::Cancelled,
        };
        worker.link.end_run(&name);
        execution.tool_calls = context
            .tool_calls
            .load(Ordering::Relaxed)
            .min(self.limits.max_tool_calls);
        let side_effects = context.side_effects.load(Ordering::Relaxed);
        if !self.settle(outcome, worker, version, &mut execution).await {
            guard.worker = None; // dropping the worker stops its process
            if run.persist {
                // Its state is gone: so is the saved one.
                execution.snapshot = Some(Snapshot::cpython(&Map::new()));
            }
        }
        if execution.snapshot.is_some() {
            guard.version = Some(run.version);
        }
        execution.side_effects = side_effects;
        WorkerRun::ran(execution)
    }

    /// The saved variables to seed when the store holds a newer state than
    /// the worker; the worker's own copy of the session is dropped first.
    async fn restore(
        &self,
        session: &mut WorkerSession,
        name: &str,
        run: &Run,
        execution: &mut Execution,
    ) -> Option<Map<String, Value>> {
        let saved = run.to_restore(session.version)?;
        let globals = saved.cpython_globals();
        if globals.is_none() {
            execution.warnings.push(
                "this session's state was saved by the Monty engine, which this gateway does not run; it started fresh"
                    .to_owned(),
            );
        }
        if let Some(worker) = session.worker.as_ref()
            && session.version.is_some()
        {
            let reset = serde_json::json!({ "session": name });
            if let Err(e) = worker.link.request("reset", reset).await {
                tracing::debug!(target: "codemcp::worker", error = %e, "resetting a session before a restore failed");
                session.worker = None;
            }
        }
        Some(globals.unwrap_or_default())
    }

    fn catalog_for(&self, sdk: &Arc<Sdk>) -> Arc<WorkerCatalog> {
        let mut cached = self.catalog.lock();
        match cached.as_ref() {
            Some((built_from, catalog)) if Arc::ptr_eq(built_from, sdk) => catalog.clone(),
            _ => {
                let catalog = Arc::new(catalog_of(sdk));
                *cached = Some((sdk.clone(), catalog.clone()));
                catalog
            }
        }
    }
}

/// A run of the worker engine.
pub struct WorkerRun {
    pub execution: Execution,
    /// No worker could be started (no Docker engine, say): nothing ran, and
    /// the session has no CPython state left.
    pub no_worker: bool,
}

impl WorkerRun {
    fn ran(execution: Execution) -> Self {
        Self {
            execution,
            no_worker: false,
        }
    }
}

/// The catalog as the worker sees it, with a version that changes with it.
fn catalog_of(sdk: &Sdk) -> WorkerCatalog {
    let functions: Vec<FunctionInfo> = sdk
        .functions()
        .iter()
        .map(|f| FunctionInfo {
            name: f.py_name.clone(),
            doc: format!("{}\n\n{}", f.signature(), f.description),
        })
        .collect();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for f in &functions {
        f.name.hash(&mut hasher);
        f.doc.hash(&mut hasher);
    }
    WorkerCatalog {
        version: hasher.finish(),
        functions,
    }
}
