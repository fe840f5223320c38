//! A 2026-07-28 call stands alone: its run goes on in its own task, so that a
//! question it asks can be answered `input_required` and the client's retry
//! (SEP-2322) can pick the same run up again (see `pending.rs`).

use std::collections::BTreeMap;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitResult, ElicitationAction, InputRequest, InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::super::guarded::{Asker, RunEvent};
use super::super::identity::Identity;
use super::super::pending::Waiting;
use super::{Caller, Gateway, progress_observer};
use crate::exec::RunControl;
use crate::exec::store::Owner;

impl Gateway {
    /// A 2026-07-28 call, which stands alone: the run goes on in its own
    /// task, so that a question it asks can be answered `input_required`
    /// and the client's retry can pick the run up again.
    pub(super) async fn run_detached(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        identity: Identity,
    ) -> CallToolResponse {
        let owner = identity.owner;
        let (events_tx, events) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let control = RunControl {
            cancel: cancel.clone(),
            on_tool_call: progress_observer(context),
        };
        let asker = if declares_form_elicitation(context) {
            Asker::Relay(events_tx.clone())
        } else {
            Asker::Nobody
        };
        let caller = Caller {
            identity,
            lasting: false,
            asker,
        };
        let gateway = self.clone();
        tokio::spawn(async move {
            let result = gateway
                .execute(request.arguments.as_ref(), caller, control)
                .await;
            let _ = events_tx.send(RunEvent::Done(result));
        });
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
            Some(RunEvent::Ask(question)) => {
                let state = self.shared.paused.pause(owner, waiting, question.answer);
                let ask = InputRequest::Elicitation(ElicitRequest::new(question.params));
                let requests = BTreeMap::from([(APPROVAL_INPUT.to_owned(), ask)]);
                InputRequiredResult::new(Some(requests), Some(state)).into()
            }
            None => error_result("the run ended without a result").into(),
        }
    }

    /// The retry of a call that answered `input_required`: hands the answer
    /// to the paused run and waits on it.
    pub(super) async fn resume(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
        owner: Owner,
        request_ct: &CancellationToken,
    ) -> CallToolResponse {
        let Some((waiting, answer)) = self.shared.paused.resume(state, owner) else {
            return error_result(
                "this requestState names no paused run: it was already answered, expired \
                 (CODEMCP_APPROVAL_TIMEOUT_SECS), or belongs to another caller or gateway; \
                 call execute_python again",
            )
            .into();
        };
        let reply = responses
            .and_then(|r| r.get(APPROVAL_INPUT))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
            .unwrap_or_else(|| ElicitResult::new(ElicitationAction::Decline));
        let _ = answer.send(reply);
        self.wait(waiting, owner, request_ct).await
    }
}

/// The key of the approval question in `inputRequests` / `inputResponses`.
const APPROVAL_INPUT: &str = "approval";

/// An `isError` result that is not a run's (the run did not start or end).
fn error_result(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}

/// A 2026-07-28 request whose `_meta` says its client can show a form.
fn declares_form_elicitation(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}
