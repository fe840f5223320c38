//! Engine choice and escalation: Monty runs everything it can; code that needs
//! a feature Monty lacks goes to the CPython fallback, unless a tool with side
//! effects already ran (then the error comes back with the reason). A session
//! that escalated stays on CPython, so its later snippets see its state. Limits
//! are verdicts and never escalate.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use super::worker::WorkerEngine;
use super::{Engine, ErrorKind, Execution, RunControl, RunRequest, SessionId, ToolHost};

pub struct Router {
    monty: Box<dyn Engine>,
    fallback: Option<Arc<WorkerEngine>>,
    /// Said when there is no fallback: how to enable one.
    no_fallback_hint: String,
    escalated: Mutex<HashSet<SessionId>>,
}

impl Router {
    pub fn new(
        monty: Box<dyn Engine>,
        fallback: Option<Arc<WorkerEngine>>,
        no_fallback_hint: String,
    ) -> Self {
        Self {
            monty,
            fallback,
            no_fallback_hint,
            escalated: Mutex::default(),
        }
    }

    fn escalated(&self) -> std::sync::MutexGuard<'_, HashSet<SessionId>> {
        self.escalated
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    async fn route(
        &self,
        session: SessionId,
        request: RunRequest,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> Execution {
        if let Some(fallback) = &self.fallback
            && self.escalated().contains(&session)
        {
            let (mut execution, _) = fallback
                .run_arc(session, request, tools, control, None)
                .await;
            execution.escalated = Some("this session moved to CPython earlier".into());
            return execution;
        }
        let mut execution = self
            .monty
            .run(session, request.clone(), tools.clone(), control.clone())
            .await;
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
                tracing::info!(target: "codemcp::exec", %reason, "escalating to CPython");
                self.escalated().insert(session);
                let (mut escalated, _) = fallback
                    .run_arc(session, request, tools, control, None)
                    .await;
                escalated.escalated = Some(reason);
                escalated.elapsed_ms += execution.elapsed_ms;
                escalated
            }
        }
    }
}

impl Engine for Router {
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
        request: RunRequest,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
    ) -> BoxFuture<'_, Execution> {
        Box::pin(self.route(session, request, tools, control))
    }

    fn end_session(&self, session: SessionId) {
        self.escalated().remove(&session);
        self.monty.end_session(session);
        if let Some(fallback) = &self.fallback {
            fallback.end_session_state(session);
        }
    }

    fn expire_idle(&self) {
        self.monty.expire_idle();
        if let Some(fallback) = &self.fallback {
            fallback.expire_idle_state();
        }
    }
}
