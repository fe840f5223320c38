//! The driver's answers to what a run asks on its way: tool calls (run at
//! once, given futures, or parked for the user), sleeps and OS calls, and
//! the waits for their results against the deadline and cancellation.

use std::collections::HashMap;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use monty::{ReplFunctionCall, ReplOsCall, ReplProgress};
use monty_types::{
    ExcType, ExtFunctionResult, MontyException, MontyObject, OsFunctionCall, PrintWriter,
};

use super::super::classify::Verdict;
use super::super::host::{
    CallDecision, OsDecision, OsRequest, Outgoing, ToolCall, exception, ext_result,
};
use super::super::memory::MemoryScope;
use super::super::snapshot;
use super::{CallResult, Driver, StepResult};
use crate::ParkedCall;

impl Driver {
    pub(super) fn on_call(&mut self, call: ReplFunctionCall) -> StepResult {
        let decision = self
            .host
            .on_call(&call.function_name, &call.args, call.object_id.is_some());
        let outgoing = match decision {
            CallDecision::Reply(reply) => return self.resume_call(call, reply),
            CallDecision::Abort(verdict, exc) => {
                return self.abort(ReplProgress::FunctionCall(call), verdict, exc);
            }
            CallDecision::Call(outgoing) => outgoing,
        };
        let parkable = !self.calls.may_overlap() && !call.allow_eager_await;
        let call = match &outgoing {
            Outgoing::Tool(tool) if parkable && self.tools.parks(&tool.server, &tool.tool) => {
                let progress = ReplProgress::FunctionCall(call);
                if self.park(&progress, tool) {
                    return Ok(progress);
                }
                let ReplProgress::FunctionCall(call) = progress else {
                    unreachable!("made from a function call just above")
                };
                call
            }
            _ => call,
        };
        let call_id = call.call_id;
        self.spawn_call(call_id, outgoing);
        if call.allow_eager_await {
            // `await tool()` with nothing else runnable: wait, then resume eagerly.
            return match self.wait_for(call_id) {
                Ok(reply) => {
                    let _scope = MemoryScope::enter(self.slot);
                    call.resume_eager(reply, PrintWriter::Callback(&mut self.out))
                }
                Err(stop) => self.stop(ReplProgress::FunctionCall(call), stop),
            };
        }
        let at = &call.position;
        if self.calls.wants_future(&at.filename, at.start, at.end) {
            // Awaited, gathered or scheduled: the call is in flight while
            // other tasks run.
            let _scope = MemoryScope::enter(self.slot);
            return call.resume_pending(PrintWriter::Callback(&mut self.out));
        }
        let waiting = codemcp_base::timing::start();
        let waited = self.wait_for(call_id);
        codemcp_base::timing::since("tool call waited", waiting);
        match waited {
            Ok(reply) => {
                let started = codemcp_base::timing::start();
                let step = self.resume_call(call, ext_result(reply));
                codemcp_base::timing::since("monty resumed", started);
                step
            }
            Err(stop) => self.stop(ReplProgress::FunctionCall(call), stop),
        }
    }

    /// Dumps the run suspended at a call of `tool`, to end it there (see
    /// `drive`). A run that cannot be dumped waits for the answer in
    /// memory instead, as an unparkable run does.
    pub(super) fn park(&mut self, progress: &ReplProgress, tool: &ToolCall) -> bool {
        match snapshot::dump_suspended(progress) {
            Ok(bytes) => {
                let parked = ParkedCall {
                    server: tool.server.clone(),
                    tool: tool.tool.clone(),
                    args: tool.args.clone(),
                    state: None,
                };
                self.parked = Some((parked, bytes));
                true
            }
            Err(e) => {
                tracing::warn!(target: "codemcp::exec", error = %e, "a run could not be parked; it waits in memory");
                false
            }
        }
    }

    pub(super) fn resume_call(
        &mut self,
        call: ReplFunctionCall,
        reply: ExtFunctionResult,
    ) -> StepResult {
        let _scope = MemoryScope::enter(self.slot);
        call.resume(reply, PrintWriter::Callback(&mut self.out))
    }

    pub(super) fn stop(&mut self, progress: ReplProgress, stop: Stop) -> StepResult {
        let (verdict, exc) = stop.into_abort(self);
        self.abort(progress, verdict, exc)
    }

    pub(super) fn spawn_call(&self, call_id: u32, call: Outgoing) {
        let failures = self.host.failures.clone();
        let fut = call.send(&*self.tools, super::super::ENGINE_NAME, failures);
        let tx = self.results_tx.clone();
        self.runtime.spawn(async move {
            let reply = fut.await;
            // The receiver is gone only when the run already ended.
            let _ = tx.send((call_id, reply));
        });
    }

    pub(super) fn spawn_sleep(&self, call_id: u32, duration: Duration) {
        let tx = self.results_tx.clone();
        self.runtime.spawn(async move {
            tokio::time::sleep(duration).await;
            let _ = tx.send((call_id, Ok(MontyObject::none())));
        });
    }

    /// Waits for one specific call's result.
    pub(super) fn wait_for(&mut self, call_id: u32) -> Result<CallResult, Stop> {
        loop {
            if let Some(r) = self.early.remove(&call_id) {
                return Ok(r);
            }
            let (id, r) = self.receive()?;
            if id == call_id {
                return Ok(r);
            }
            self.early.insert(id, r);
        }
    }

    /// Waits until at least one of `pending` has a result, then takes every
    /// result that is ready.
    pub(super) fn wait_any(
        &mut self,
        pending: &[u32],
    ) -> Result<Vec<(u32, ExtFunctionResult)>, Stop> {
        let mut ready: Vec<(u32, CallResult)> = Vec::new();
        let take_early = |early: &mut HashMap<u32, CallResult>,
                          ready: &mut Vec<(u32, CallResult)>| {
            for id in pending {
                if let Some(r) = early.remove(id) {
                    ready.push((*id, r));
                }
            }
        };
        take_early(&mut self.early, &mut ready);
        while ready.is_empty() {
            let (id, r) = self.receive()?;
            self.early.insert(id, r);
            while let Ok((id, r)) = self.results_rx.try_recv() {
                self.count_completed();
                self.early.insert(id, r);
            }
            take_early(&mut self.early, &mut ready);
        }
        Ok(ready
            .into_iter()
            .map(|(id, r)| (id, ext_result(r)))
            .collect())
    }

    /// Receives the next finished call, watching the deadline and cancellation.
    pub(super) fn receive(&mut self) -> Result<(u32, CallResult), Stop> {
        loop {
            if self.cancel.is_cancelled() {
                self.cancelled = true;
                return Err(Stop::Cancelled);
            }
            let remaining = self.remaining();
            if remaining.is_zero() {
                return Err(Stop::Deadline);
            }
            match self
                .results_rx
                .recv_timeout(remaining.min(Duration::from_millis(50)))
            {
                Ok(item) => {
                    self.count_completed();
                    return Ok(item);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(Stop::Deadline),
            }
        }
    }

    pub(super) fn count_completed(&mut self) {
        self.completed_calls += 1;
        if let Some(observer) = &self.on_tool_call {
            observer(self.completed_calls);
        }
    }

    pub(super) fn on_os_call(&mut self, os: ReplOsCall) -> StepResult {
        let request = match &os.function_call {
            OsFunctionCall::Import(module) => OsRequest::Import(module.clone()),
            OsFunctionCall::Sleep(d) | OsFunctionCall::SystemSleep(d) => OsRequest::Sleep {
                duration: *d,
                awaitable: false,
            },
            OsFunctionCall::AsyncSleep(d) | OsFunctionCall::AsyncSystemSleep(d) => {
                OsRequest::Sleep {
                    duration: *d,
                    awaitable: true,
                }
            }
            OsFunctionCall::Getenv(_) | OsFunctionCall::GetEnviron => OsRequest::Environment,
            other => OsRequest::Other(other.name().to_owned()),
        };
        let awaitable = matches!(
            request,
            OsRequest::Sleep {
                awaitable: true,
                ..
            }
        );
        let reply = match self.host.on_os_call(request) {
            OsDecision::Reply(reply) => reply,
            OsDecision::Abort(verdict, exc) => {
                return self.abort(ReplProgress::OsCall(os), verdict, exc);
            }
            OsDecision::Sleep(d) if awaitable && !os.allow_eager_await => {
                self.spawn_sleep(os.call_id, d);
                ExtFunctionResult::Future(os.call_id)
            }
            OsDecision::Sleep(d) => {
                if let Err(stop) = self.sleep_here(d) {
                    return self.stop(ReplProgress::OsCall(os), stop);
                }
                if awaitable {
                    let _scope = MemoryScope::enter(self.slot);
                    return os.resume_eager(
                        Ok(MontyObject::none()),
                        PrintWriter::Callback(&mut self.out),
                    );
                }
                MontyObject::none().into()
            }
        };
        let _scope = MemoryScope::enter(self.slot);
        os.resume(reply, PrintWriter::Callback(&mut self.out))
    }

    /// Sleeps on the interpreter thread, waking for cancellation.
    pub(super) fn sleep_here(&mut self, d: Duration) -> Result<(), Stop> {
        let until = Instant::now() + d;
        loop {
            if self.cancel.is_cancelled() {
                self.cancelled = true;
                return Err(Stop::Cancelled);
            }
            let now = Instant::now();
            if now >= until {
                return Ok(());
            }
            if now >= self.limits.deadline {
                return Err(Stop::Deadline);
            }
            std::thread::sleep((until - now).min(Duration::from_millis(50)));
        }
    }
}

/// Why the host stopped waiting.
pub(super) enum Stop {
    Deadline,
    Cancelled,
}

impl Stop {
    pub(super) fn into_abort(self, driver: &Driver) -> (Verdict, MontyException) {
        match self {
            Stop::Deadline => (
                Verdict::Limit,
                exception(ExcType::TimeoutError, driver.wall_limit_message()),
            ),
            Stop::Cancelled => (
                Verdict::Genuine,
                exception(ExcType::KeyboardInterrupt, "cancelled by the client"),
            ),
        }
    }
}
