//! A 2026-07-28 call stands alone: its run goes on in its own task, so that a
//! question it asks can be answered `input_required` and the client's retry
//! (SEP-2322) can pick the same run up again (see `authority/pending.rs`).

use std::collections::BTreeMap;
use std::future::Future;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequiredResult,
    InputResponses,
};
use rmcp::service::RequestContext;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{AskRoute, Caller, Gateway, progress_observer, tool_result};
use crate::authority::guarded::{Asker, CallContext, RunEvent, approval_question};
use crate::authority::identity::Identity;
use crate::authority::pending::Waiting;
use crate::helpers::Snippet;
use codemcp_exec::{Execution, ParkedCall, RunControl};
use codemcp_store::Owner;

impl Gateway {
    /// A call that stands alone (2026-07-28, or HTTP without a session) or
    /// asks `input_required` (2026-07-28 on stdio too): the run goes on in
    /// its own task, so that a question it asks can be answered
    /// `input_required` and the client's retry can pick the run up again.
    /// A `lasting` call (stdio) runs in its MCP session's own Python session
    /// when it names none, and stops when the client leaves.
    pub(super) async fn run_detached(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        identity: Identity,
        lasting: bool,
    ) -> CallToolResponse {
        let owner = identity.owner;
        // Parking is for retries that may reach another gateway; a lasting
        // session's retry comes back to this one.
        let parks = self.shared.executor.parks_runs() && !lasting;
        let run = move |gateway: Gateway, control, asker: Asker| async move {
            let caller = Caller {
                identity,
                lasting,
                park: parks && matches!(asker, Asker::Relay(_)),
                asker,
            };
            gateway
                .execution(request.arguments.as_ref(), caller, control)
                .await
        };
        self.detach(context, owner, lasting, run).await
    }

    /// Runs `run` in a task of its own, with a way to ask the user when the
    /// request says its client can answer `input_required` with a form, and
    /// waits for its result or its question.
    async fn detach<F, R>(
        &self,
        context: &RequestContext<RoleServer>,
        owner: Owner,
        lasting: bool,
        run: F,
    ) -> CallToolResponse
    where
        F: FnOnce(Gateway, RunControl, Asker) -> R,
        R: Future<Output = Execution> + Send + 'static,
    {
        let (events_tx, events) = mpsc::unbounded_channel();
        // A lasting session's runs stop with it; the others outlive the
        // request (and its handler) until their retry or expiry.
        let cancel = if lasting {
            self.session.closing.child_token()
        } else {
            CancellationToken::new()
        };
        let control = RunControl {
            cancel: cancel.clone(),
            on_tool_call: progress_observer(context),
        };
        let asker = match AskRoute::of(context) {
            AskRoute::InputRequired => Asker::Relay(events_tx.clone()),
            AskRoute::Elicit | AskRoute::Nobody => Asker::Nobody,
        };
        let running = run(self.clone(), control, asker);
        let gateway = self.clone();
        tokio::spawn(crate::telemetry::carry(async move {
            let execution = running.await;
            let _ = events_tx.send(gateway.run_event(&execution));
        }));
        self.wait(Waiting { events, cancel }, owner, &context.ct)
            .await
    }

    /// Waits for the run's result, or its next question (answered
    /// `input_required`, with the run kept for the retry).
    async fn wait(
        &self,
        mut waiting: Waiting,
        owner: Owner,
        request_ct: &CancellationToken,
    ) -> CallToolResponse {
        let event = tokio::select! {
            event = waiting.events.recv() => event,
            () = request_ct.cancelled() => {
                waiting.cancel.cancel();
                return error_result("the request was cancelled, and its run with it").into();
            }
        };
        match event {
            Some(RunEvent::Done(result)) => result.into(),
            Some(RunEvent::Parked { state, question }) => ask_user(question, state),
            Some(RunEvent::Ask(question)) => {
                let state = self.shared.paused.pause(owner, waiting, question.answer);
                ask_user(question.params, state)
            }
            None => error_result("the run ended without a result").into(),
        }
    }

    /// What the request waiting on a finished run answers: its result, or,
    /// for a run that parked, the question and the state that names it.
    fn run_event(&self, execution: &Execution) -> RunEvent {
        match &execution.parked {
            Some(ParkedCall {
                server,
                tool,
                args,
                state: Some(state),
            }) => {
                codemcp_base::metrics::approval_asked(); // parked: asked in the result
                RunEvent::Parked {
                    state: format!("{PARKED}{state}"),
                    question: approval_question(server, tool, args),
                }
            }
            _ => RunEvent::Done(tool_result(execution, self.shared.output)),
        }
    }

    /// The retry of a call that answered `input_required`: hands the answer
    /// to the paused run and waits on it.
    pub(super) async fn resume(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
        identity: Identity,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let reply = user_reply(responses);
        if let Some(parked) = state.strip_prefix(PARKED) {
            return self.resume_parked(parked, reply, identity, context).await;
        }
        let owner = identity.owner;
        let request_ct = &context.ct;
        let Some((waiting, answer)) = self.shared.paused.resume(state, owner) else {
            return error_result(
                "this requestState names no paused run: it was already answered, expired \
                 (CODEMCP_APPROVAL_TIMEOUT_SECS), or belongs to another caller or gateway; \
                 call execute_python again",
            )
            .into();
        };
        let _ = answer.send(reply);
        self.wait(waiting, owner, request_ct).await
    }

    /// The retry of a run parked in the session store, on whichever gateway
    /// it reaches: takes the run out (once), gives the parked call the
    /// user's answer, and runs on in a task of its own like any 2026 call.
    async fn resume_parked(
        &self,
        state: &str,
        reply: ElicitResult,
        identity: Identity,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let shared = &self.shared;
        let owner = identity.owner;
        let timeout = shared.authority.approval_timeout;
        let unparked = match shared.executor.unpark(owner, state, timeout).await {
            Ok(unparked) => unparked,
            Err(refused) => return tool_result(&refused, shared.output).into(),
        };
        let run = move |gateway: Gateway, control, asker: Asker| {
            let shared = gateway.shared.clone();
            let parked = &unparked.parked;
            let grants = shared.grants.of(&identity.label, &parked.session);
            let park = matches!(asker, Asker::Relay(_));
            let mut call_context =
                CallContext::new(identity, Some(parked.session.clone()), asker, grants);
            call_context.park = park;
            *call_context.answered.lock() =
                Some((parked.server.clone(), parked.tool.clone(), reply));
            // One store budget for the helpers' read and the run's session.
            codemcp_store::one_call(async move {
                let parked = &unparked.parked;
                let snippet = Snippet::Resumed {
                    code: &parked.code,
                    prelude: parked.prelude.as_ref(),
                };
                let assembly = shared.assemble(call_context, snippet).await;
                shared.executor.resume(unparked, assembly, control).await
            })
        };
        self.detach(context, owner, false, run).await
    }
}

/// The user's answer in a retry's `inputResponses`; none is a decline.
fn user_reply(responses: Option<&InputResponses>) -> ElicitResult {
    responses
        .and_then(|r| r.get(APPROVAL_INPUT))
        .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
        .unwrap_or_else(|| ElicitResult::new(ElicitationAction::Decline))
}

/// Marks a `requestState` that names a run parked in the session store
/// (the others name a run waiting in this gateway's memory).
const PARKED: &str = "parked.";

/// The key of the approval question in `inputRequests` / `inputResponses`.
const APPROVAL_INPUT: &str = "approval";

/// An `isError` result that is not a run's (the run did not start or end).
fn error_result(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}

/// The only way an `input_required` result is made: with the question as
/// its input request, never the `requestState` alone (hosted connectors
/// take a bare `requestState` for an error).
fn ask_user(question: ElicitRequestParams, state: String) -> CallToolResponse {
    let ask = InputRequest::Elicitation(ElicitRequest::new(question));
    let requests = BTreeMap::from([(APPROVAL_INPUT.to_owned(), ask)]);
    InputRequiredResult::new(Some(requests), Some(state)).into()
}
