//! The drive loop: feeds one snippet to a session's `MontyRepl` on a dedicated
//! thread and answers every suspension (tool calls, name lookups, OS calls,
//! futures) until the snippet completes.
//!
//! Tool calls run on the tokio runtime; their results come back over a channel,
//! so the interpreter thread never blocks the runtime and the runtime never
//! runs the interpreter.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use monty::{MontyRepl, ReplFunctionCall, ReplOsCall, ReplProgress, ReplStartError};
use monty_types::{
    ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult, OsFunctionCall,
    PrintWriter,
};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::classify::{ImportVerdict, Verdict, classify, classify_import, classify_missing_name};
use super::convert::{NotJson, json_of, to_json, to_monty};
use super::memory::{MemoryScope, SessionSlot};
use super::output::OutputCapture;
use crate::exec::{ToolCallObserver, ToolFailure, ToolHost};
use crate::sdk::Sdk;

/// Names every engine provides besides the tools.
const SEARCH_TOOLS: &str = "search_tools";
const DESCRIBE_TOOL: &str = "describe_tool";

/// Per-run limits enforced by the host side of the loop.
#[derive(Debug, Clone)]
pub struct RunLimits {
    pub deadline: Instant,
    pub max_tool_calls: u32,
    pub max_output_bytes: usize,
    pub max_sleep_total: Duration,
}

/// Everything one run needs; moved onto the interpreter thread.
pub struct Job {
    pub repl: MontyRepl,
    pub code: String,
    pub slot: SessionSlot,
    pub limits: RunLimits,
    pub host: Arc<dyn ToolHost>,
    pub sdk: Arc<Sdk>,
    pub runtime: Handle,
    pub cancel: CancellationToken,
    pub on_tool_call: Option<ToolCallObserver>,
}

/// How a run ended, before it is turned into an `Execution`.
pub enum Ending {
    Value(Value),
    /// A Python exception with what it means.
    Raised {
        exc: MontyException,
        verdict: Verdict,
    },
    /// The result existed but has no JSON form.
    NotJson(NotJson),
    Cancelled,
}

pub struct Finished {
    /// The session to keep; `None` when it must be discarded.
    pub repl: Option<MontyRepl>,
    pub ending: Ending,
    pub stdout: String,
    pub truncated: bool,
    pub tool_calls: u32,
    /// Bytes the session held when a limit fired, before its state was dropped.
    pub session_bytes: usize,
}

type StepResult = Result<ReplProgress, Box<ReplStartError>>;
type CallResult = Result<Value, ToolFailure>;

struct Driver {
    slot: SessionSlot,
    limits: RunLimits,
    host: Arc<dyn ToolHost>,
    sdk: Arc<Sdk>,
    runtime: Handle,
    cancel: CancellationToken,
    on_tool_call: Option<ToolCallObserver>,
    out: OutputCapture,
    /// Code that uses `await`/`asyncio` gets tools as futures (see `on_call`).
    async_mode: bool,
    tool_calls: u32,
    completed_calls: u32,
    slept: Duration,
    results_tx: Sender<(u32, CallResult)>,
    results_rx: Receiver<(u32, CallResult)>,
    /// Results that arrived while waiting for another call.
    early: HashMap<u32, CallResult>,
    /// Set when the host aborts the run, so the abort is not misread.
    host_verdict: Option<Verdict>,
    cancelled: bool,
    session_bytes: usize,
}

/// Runs one snippet to its end. Blocking: call it on a dedicated thread.
pub fn run(job: Job) -> Finished {
    let (results_tx, results_rx) = channel();
    let async_mode = job.code.contains("await") || job.code.contains("asyncio");
    let mut driver = Driver {
        slot: job.slot,
        out: OutputCapture::new(job.limits.max_output_bytes),
        limits: job.limits,
        host: job.host,
        sdk: job.sdk,
        runtime: job.runtime,
        cancel: job.cancel,
        on_tool_call: job.on_tool_call,
        async_mode,
        tool_calls: 0,
        completed_calls: 0,
        slept: Duration::ZERO,
        results_tx,
        results_rx,
        early: HashMap::new(),
        host_verdict: None,
        cancelled: false,
        session_bytes: 0,
    };
    let (repl, ending) = driver.feed(job.repl, &job.code);
    let (repl, ending) = match (repl, ending) {
        (Some(repl), Ending::Value(Value::Null)) if mentions_result(&job.code) => {
            driver.read_result_variable(repl)
        }
        other => other,
    };
    let tool_calls = driver.tool_calls;
    let (stdout, truncated) = driver.out.finish();
    Finished {
        repl,
        ending,
        stdout,
        truncated,
        tool_calls,
        session_bytes: driver.session_bytes,
    }
}

/// Whether the snippet may have assigned `result` (the contract's way to return
/// a value from code whose last statement is not an expression).
fn mentions_result(code: &str) -> bool {
    code.match_indices("result").any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + "result".len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn exception(exc_type: ExcType, msg: impl Into<String>) -> MontyException {
    MontyException::new(exc_type, Some(msg.into()))
}

impl Driver {
    fn remaining(&self) -> Duration {
        self.limits
            .deadline
            .saturating_duration_since(Instant::now())
    }

    /// Feeds `code` and drives it to completion.
    fn feed(&mut self, repl: MontyRepl, code: &str) -> (Option<MontyRepl>, Ending) {
        let mut repl = repl;
        let remaining = self.remaining();
        repl.tracker_mut().set_max_feed_duration(remaining);
        repl.tracker_mut().set_max_turn_duration(remaining);
        let first = {
            let _scope = MemoryScope::enter(self.slot);
            repl.feed_start(
                code,
                Vec::<(String, MontyObject)>::new(),
                PrintWriter::Callback(&mut self.out),
            )
        };
        self.drive(first)
    }

    fn drive(&mut self, mut step: StepResult) -> (Option<MontyRepl>, Ending) {
        loop {
            let mut progress = match step {
                Ok(progress) => progress,
                Err(err) => return self.raised(*err),
            };
            if let ReplProgress::Complete { repl, value } = progress {
                return self.completed(repl, value);
            }
            if self.cancel.is_cancelled() || self.cancelled {
                self.cancelled = true;
                return (Some(progress.into_repl()), Ending::Cancelled);
            }
            let remaining = self.remaining();
            if remaining.is_zero() {
                step = self.abort(
                    progress,
                    Verdict::Limit,
                    exception(ExcType::TimeoutError, self.wall_limit_message()),
                );
                continue;
            }
            // The turn limit is what is left of the run's wall time, so time spent
            // waiting on tools counts too.
            progress.tracker_mut().set_max_turn_duration(remaining);
            step = match progress {
                ReplProgress::FunctionCall(call) => self.on_call(call),
                ReplProgress::NameLookup(lookup) => match self.lookup(&lookup.name) {
                    Ok(answer) => {
                        let _scope = MemoryScope::enter(self.slot);
                        lookup.resume(answer, PrintWriter::Callback(&mut self.out))
                    }
                    Err(reason) => {
                        let exc = exception(
                            ExcType::NotImplementedError,
                            format!("Monty does not support {reason}"),
                        );
                        self.abort(
                            ReplProgress::NameLookup(lookup),
                            Verdict::Unsupported { reason },
                            exc,
                        )
                    }
                },
                ReplProgress::OsCall(os) => self.on_os_call(os),
                ReplProgress::ResolveFutures(waiting) => {
                    let pending: Vec<u32> = waiting.pending_call_ids().to_vec();
                    match self.wait_any(&pending) {
                        Ok(results) => {
                            let _scope = MemoryScope::enter(self.slot);
                            waiting.resume(results, PrintWriter::Callback(&mut self.out))
                        }
                        Err(stop) => {
                            let (verdict, exc) = stop.into_abort(self);
                            let _scope = MemoryScope::enter(self.slot);
                            self.host_verdict = Some(verdict);
                            waiting.abort(exc, PrintWriter::Callback(&mut self.out))
                        }
                    }
                }
                ReplProgress::Complete { .. } => unreachable!("handled above"),
            };
        }
    }

    fn wall_limit_message(&self) -> String {
        "run time limit exceeded (CODEMCP_EXEC_TIMEOUT_MS or the call's timeout_ms)".to_owned()
    }

    fn abort(
        &mut self,
        progress: ReplProgress,
        verdict: Verdict,
        exc: MontyException,
    ) -> StepResult {
        self.host_verdict = Some(verdict);
        let _scope = MemoryScope::enter(self.slot);
        let print = PrintWriter::Callback(&mut self.out);
        match progress {
            ReplProgress::FunctionCall(c) => c.abort(exc, print),
            ReplProgress::OsCall(c) => c.abort(exc, print),
            ReplProgress::NameLookup(c) => c.abort(exc, print),
            ReplProgress::ResolveFutures(c) => c.abort(exc, print),
            ReplProgress::Complete { repl, .. } => {
                Err(Box::new(ReplStartError { repl, error: exc }))
            }
        }
    }

    fn raised(&mut self, err: ReplStartError) -> (Option<MontyRepl>, Ending) {
        let ReplStartError { repl, error } = err;
        if self.cancelled {
            return (Some(repl), Ending::Cancelled);
        }
        let verdict = self.host_verdict.take().unwrap_or_else(|| classify(&error));
        self.session_bytes = self.slot.live_bytes();
        // After a limit Monty makes no promise about heap state: drop the session.
        let keep = !matches!(verdict, Verdict::Limit);
        (
            keep.then_some(repl),
            Ending::Raised {
                exc: error,
                verdict,
            },
        )
    }

    fn completed(&mut self, repl: MontyRepl, value: MontyObject) -> (Option<MontyRepl>, Ending) {
        let ending = match to_json(&value) {
            Ok(json) => Ending::Value(json),
            Err(e) => Ending::NotJson(e),
        };
        drop(value);
        (Some(repl), ending)
    }

    /// The snippet ended on a statement: return `result` if the code set it.
    fn read_result_variable(&mut self, repl: MontyRepl) -> (Option<MontyRepl>, Ending) {
        let mut step = {
            let _scope = MemoryScope::enter(self.slot);
            repl.feed_start(
                "result",
                Vec::<(String, MontyObject)>::new(),
                PrintWriter::Callback(&mut self.out),
            )
        };
        loop {
            step = match step {
                Ok(ReplProgress::Complete { repl, value }) => return self.completed(repl, value),
                Ok(ReplProgress::NameLookup(lookup)) => {
                    let _scope = MemoryScope::enter(self.slot);
                    lookup.resume(
                        NameLookupResult::Undefined,
                        PrintWriter::Callback(&mut self.out),
                    )
                }
                Ok(other) => return (Some(other.into_repl()), Ending::Value(Value::Null)),
                Err(err) => return (Some(err.repl), Ending::Value(Value::Null)),
            };
        }
    }

    /// A bare name the snippet read that is not defined; `Err` names a CPython
    /// builtin Monty lacks.
    fn lookup(&self, name: &str) -> Result<NameLookupResult, String> {
        if name == SEARCH_TOOLS || name == DESCRIBE_TOOL {
            return Ok(NameLookupResult::Value(MontyObject::function(name, None)));
        }
        if let Some(f) = self.sdk.get(name) {
            return Ok(NameLookupResult::Value(MontyObject::function(
                name,
                Some(f.summary.clone()),
            )));
        }
        match classify_missing_name(name) {
            Some(reason) => Err(reason),
            None => Ok(NameLookupResult::Undefined),
        }
    }

    fn on_call(&mut self, call: ReplFunctionCall) -> StepResult {
        let name = call.function_name.clone();
        let immediate: Option<ExtFunctionResult> = if call.object_id.is_some() {
            Some(ExtFunctionResult::NotFound(name.clone()))
        } else if name == SEARCH_TOOLS {
            Some(self.search_tools(&call))
        } else if name == DESCRIBE_TOOL {
            Some(self.describe_tool(&call))
        } else if self.sdk.get(&name).is_none() {
            let reply = match classify_missing_name(&name) {
                Some(reason) => {
                    return self.abort(
                        ReplProgress::FunctionCall(call),
                        Verdict::Unsupported {
                            reason: reason.clone(),
                        },
                        exception(
                            ExcType::NotImplementedError,
                            format!("Monty does not support {reason}"),
                        ),
                    );
                }
                None => ExtFunctionResult::NotFound(name.clone()),
            };
            Some(reply)
        } else {
            None
        };
        if let Some(reply) = immediate {
            return self.resume_call(call, reply);
        }
        let args = match self.bind(&call) {
            Ok(args) => args,
            Err(exc) => return self.resume_call(call, ExtFunctionResult::Error(exc)),
        };
        if self.tool_calls >= self.limits.max_tool_calls {
            let msg = format!(
                "tool call limit exceeded: more than {} calls in one run (CODEMCP_MAX_TOOL_CALLS)",
                self.limits.max_tool_calls
            );
            return self.abort(
                ReplProgress::FunctionCall(call),
                Verdict::Limit,
                exception(ExcType::RuntimeError, msg),
            );
        }
        self.tool_calls += 1;
        let call_id = call.call_id;
        self.spawn_tool(call_id, &name, args);
        if call.allow_eager_await {
            // `await tool()` with nothing else runnable: wait, then resume eagerly.
            let result = self.wait_for(call_id);
            return match result {
                Ok(r) => {
                    let _scope = MemoryScope::enter(self.slot);
                    call.resume_eager(
                        r.map(|v| to_monty(&v)).map_err(tool_exception),
                        PrintWriter::Callback(&mut self.out),
                    )
                }
                Err(stop) => self.stop(ReplProgress::FunctionCall(call), stop),
            };
        }
        if self.async_mode {
            // The interpreter cannot tell whether a plain call will be awaited later
            // (gather), so in code that uses async, tool calls are futures.
            let _scope = MemoryScope::enter(self.slot);
            return call.resume_pending(PrintWriter::Callback(&mut self.out));
        }
        match self.wait_for(call_id) {
            Ok(r) => {
                let reply = match r {
                    Ok(v) => ExtFunctionResult::Return(to_monty(&v)),
                    Err(e) => ExtFunctionResult::Error(tool_exception(e)),
                };
                self.resume_call(call, reply)
            }
            Err(stop) => self.stop(ReplProgress::FunctionCall(call), stop),
        }
    }

    fn resume_call(&mut self, call: ReplFunctionCall, reply: ExtFunctionResult) -> StepResult {
        let _scope = MemoryScope::enter(self.slot);
        call.resume(reply, PrintWriter::Callback(&mut self.out))
    }

    fn stop(&mut self, progress: ReplProgress, stop: Stop) -> StepResult {
        let (verdict, exc) = stop.into_abort(self);
        self.abort(progress, verdict, exc)
    }

    /// Maps the call's Python arguments onto the tool's JSON arguments.
    fn bind(
        &self,
        call: &ReplFunctionCall,
    ) -> Result<serde_json::Map<String, Value>, MontyException> {
        let name = &call.function_name;
        let Some(function) = self.sdk.get(name) else {
            return Err(exception(
                ExcType::NameError,
                format!("name '{name}' is not defined"),
            ));
        };
        let not_json = |what: String, e: NotJson| {
            exception(
                ExcType::TypeError,
                format!("{name}(): {what} cannot be sent to the tool: {e}"),
            )
        };
        let mut positional = Vec::new();
        for (i, arg) in call.args.args().enumerate() {
            positional.push(json_of(arg).map_err(|e| not_json(format!("argument {}", i + 1), e))?);
        }
        let mut keywords = Vec::new();
        for (key, value) in call.args.kwargs() {
            let key = key.as_str().unwrap_or_default().to_owned();
            let value = json_of(value).map_err(|e| not_json(format!("argument '{key}'"), e))?;
            keywords.push((key, value));
        }
        function
            .bind_args(positional, keywords)
            .map_err(|e| exception(ExcType::TypeError, e.to_string()))
    }

    fn spawn_tool(&self, call_id: u32, py_name: &str, args: serde_json::Map<String, Value>) {
        let Some(function) = self.sdk.get(py_name) else {
            return;
        };
        let fut = self.host.call_tool(&function.server, &function.tool, args);
        let unwrap = function.unwrap_result;
        let tx = self.results_tx.clone();
        self.runtime.spawn(async move {
            let result = fut
                .await
                .map(|value| if unwrap { unwrap_result(value) } else { value });
            // The receiver is gone only when the run already ended.
            let _ = tx.send((call_id, result));
        });
    }

    fn spawn_sleep(&self, call_id: u32, duration: Duration) {
        let tx = self.results_tx.clone();
        self.runtime.spawn(async move {
            tokio::time::sleep(duration).await;
            let _ = tx.send((call_id, Ok(Value::Null)));
        });
    }

    /// Waits for one specific call's result.
    fn wait_for(&mut self, call_id: u32) -> Result<CallResult, Stop> {
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
    fn wait_any(&mut self, pending: &[u32]) -> Result<Vec<(u32, ExtFunctionResult)>, Stop> {
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
            .map(|(id, r)| {
                let reply = match r {
                    Ok(v) => ExtFunctionResult::Return(to_monty(&v)),
                    Err(e) => ExtFunctionResult::Error(tool_exception(e)),
                };
                (id, reply)
            })
            .collect())
    }

    /// Receives the next finished call, watching the deadline and cancellation.
    fn receive(&mut self) -> Result<(u32, CallResult), Stop> {
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

    fn count_completed(&mut self) {
        self.completed_calls += 1;
        if let Some(observer) = &self.on_tool_call {
            observer(self.completed_calls);
        }
    }

    fn on_os_call(&mut self, os: ReplOsCall) -> StepResult {
        let reply: ExtFunctionResult = match &os.function_call {
            OsFunctionCall::Import(module) => match classify_import(module) {
                ImportVerdict::Denied => exception(
                    ExcType::PermissionError,
                    format!(
                        "import of '{module}' is blocked: sandboxed code has no file, network, process or \
                         environment access; use the upstream tools instead"
                    ),
                )
                .into(),
                ImportVerdict::Unsupported { reason } => {
                    let exc = exception(ExcType::ModuleNotFoundError, format!("Monty does not support {reason}"));
                    return self.abort(ReplProgress::OsCall(os), Verdict::Unsupported { reason }, exc);
                }
                ImportVerdict::NotFound => ExtFunctionResult::NotFound(module.clone()),
            },
            OsFunctionCall::Sleep(d) | OsFunctionCall::SystemSleep(d) => {
                let d = *d;
                if let Err(exc) = self.budget_sleep(d) {
                    return self.abort(ReplProgress::OsCall(os), Verdict::Limit, exc);
                }
                if let Err(stop) = self.sleep_here(d) {
                    return self.stop(ReplProgress::OsCall(os), stop);
                }
                MontyObject::none().into()
            }
            OsFunctionCall::AsyncSleep(d) | OsFunctionCall::AsyncSystemSleep(d) => {
                let d = *d;
                if let Err(exc) = self.budget_sleep(d) {
                    return self.abort(ReplProgress::OsCall(os), Verdict::Limit, exc);
                }
                if os.allow_eager_await {
                    if let Err(stop) = self.sleep_here(d) {
                        return self.stop(ReplProgress::OsCall(os), stop);
                    }
                    let _scope = MemoryScope::enter(self.slot);
                    return os.resume_eager(Ok(MontyObject::none()), PrintWriter::Callback(&mut self.out));
                }
                self.spawn_sleep(os.call_id, d);
                ExtFunctionResult::Future(os.call_id)
            }
            OsFunctionCall::Getenv(_) | OsFunctionCall::GetEnviron => exception(
                ExcType::PermissionError,
                "environment access is denied in the sandbox",
            )
            .into(),
            other => exception(
                ExcType::PermissionError,
                format!(
                    "{} is denied: sandboxed code has no file system access; use the upstream tools (for example \
                     a filesystem server) instead",
                    other.name()
                ),
            )
            .into(),
        };
        let _scope = MemoryScope::enter(self.slot);
        os.resume(reply, PrintWriter::Callback(&mut self.out))
    }

    fn budget_sleep(&mut self, d: Duration) -> Result<(), MontyException> {
        self.slept += d;
        if self.slept > self.limits.max_sleep_total {
            return Err(exception(
                ExcType::TimeoutError,
                format!(
                    "sleep limit exceeded: {:.1}s asked in total, {:.1}s allowed per run (CODEMCP_MAX_SLEEP_MS)",
                    self.slept.as_secs_f64(),
                    self.limits.max_sleep_total.as_secs_f64()
                ),
            ));
        }
        Ok(())
    }

    /// Sleeps on the interpreter thread, waking for cancellation.
    fn sleep_here(&mut self, d: Duration) -> Result<(), Stop> {
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

    fn search_tools(&self, call: &ReplFunctionCall) -> ExtFunctionResult {
        let query = call
            .args
            .arg(0)
            .or_else(|| call.args.kwarg("query"))
            .and_then(|v| v.as_str().map(str::to_owned));
        let Some(query) = query else {
            return exception(
                ExcType::TypeError,
                "search_tools(query: str, limit: int = 10) needs a query string",
            )
            .into();
        };
        let limit = call
            .args
            .arg(1)
            .or_else(|| call.args.kwarg("limit"))
            .and_then(|v| v.as_int())
            .unwrap_or(10);
        let hits = self.sdk.search(&query, limit.clamp(1, 100) as usize);
        to_monty(&serde_json::to_value(hits).unwrap_or(Value::Null)).into()
    }

    fn describe_tool(&self, call: &ReplFunctionCall) -> ExtFunctionResult {
        let name = call
            .args
            .arg(0)
            .or_else(|| call.args.kwarg("name"))
            .and_then(|v| v.as_str().map(str::to_owned));
        let Some(name) = name else {
            return exception(
                ExcType::TypeError,
                "describe_tool(name: str) needs a tool name",
            )
            .into();
        };
        match self.sdk.describe(&name) {
            Some(doc) => to_monty(&doc).into(),
            None => exception(
                ExcType::KeyError,
                format!("no tool named '{name}'; search_tools(query) lists the available ones"),
            )
            .into(),
        }
    }
}

/// Why the host stopped waiting.
enum Stop {
    Deadline,
    Cancelled,
}

impl Stop {
    fn into_abort(self, driver: &Driver) -> (Verdict, MontyException) {
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

/// `{"result": v}` → `v`, for tools whose output schema only wraps a plain value.
fn unwrap_result(value: Value) -> Value {
    match value {
        Value::Object(mut map) if map.len() == 1 && map.contains_key("result") => {
            map.remove("result").unwrap_or(Value::Null)
        }
        other => other,
    }
}

/// Tool failures raise `ToolError`, which is `RuntimeError` in Monty.
fn tool_exception(failure: ToolFailure) -> MontyException {
    exception(ExcType::RuntimeError, failure.message)
}
