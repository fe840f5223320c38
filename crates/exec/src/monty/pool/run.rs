//! One run in a pool worker: feeds the snippet and answers its suspensions
//! (tool calls, OS calls, futures; `suspensions.rs`) until it ends or its
//! deadline passes, and words how it ended.

mod suspensions;

use super::*;
use crate::ParkedCall;
use crate::monty::host::ToolCall;

/// One run on one worker.
pub(super) struct PoolRun {
    pub(super) host: SuspensionHost,
    tools: Arc<dyn ToolHost>,
    control: RunControl,
    deadline: Instant,
    /// Which tool calls get futures rather than values.
    calls: RunCalls,
    out: Arc<Mutex<OutputCapture>>,
    inflight: FuturesUnordered<BoxFuture<'static, (u32, CallResult)>>,
    early: HashMap<u32, CallResult>,
    completed_calls: u32,
    /// The verdict of an error the host itself raised in the sandbox.
    host_verdict: Option<(String, Verdict)>,
    /// The worker was killed or died: the session's state is gone.
    pub(super) lost: bool,
    /// The run parked at a call: the worker's dump of it, suspended there.
    pub(super) parked_dump: Option<Vec<u8>>,
}

/// Why the run stopped waiting.
enum Stop {
    Deadline,
    Cancelled,
}

impl PoolRun {
    pub(super) fn new(
        limits: &MontyLimits,
        sdk: Arc<codemcp_sdk::Sdk>,
        tools: Arc<dyn ToolHost>,
        control: RunControl,
        deadline: Instant,
        calls: RunCalls,
    ) -> Self {
        Self {
            host: SuspensionHost::new(sdk, limits.max_tool_calls, limits.max_sleep_total),
            tools,
            control,
            deadline,
            calls,
            out: Arc::new(Mutex::new(OutputCapture::new(limits.max_output_bytes))),
            inflight: FuturesUnordered::new(),
            early: HashMap::new(),
            completed_calls: 0,
            host_verdict: None,
            lost: false,
            parked_dump: None,
        }
    }

    pub(super) fn take_output(&self) -> Captured {
        let mut out = self.out.lock();
        std::mem::replace(&mut *out, OutputCapture::new(0)).finish()
    }

    fn printer(
        &self,
    ) -> impl FnMut(monty_types::PrintStream, &str) -> monty_pool::PrintFuture + Send + use<> {
        let out = self.out.clone();
        on_print_sync(move |stream, text| out.lock().push(stream, text))
    }

    /// Feeds `code`, or, with `parked_at`, resumes a restored parked run at
    /// the call it stopped at; answers its suspensions until it ends.
    pub(super) async fn drive(
        &mut self,
        checkout: &mut Checkout,
        code: &str,
        parked_at: Option<TurnEvent>,
    ) -> Ending {
        let mut print = self.printer();
        let first = match parked_at {
            Some(event) => Ok(event),
            None => {
                self.turn(checkout.feed(code.to_owned(), vec![], vec![], true, &mut print))
                    .await
            }
        };
        let ending = self.answer_until_done(checkout, first).await;
        match ending {
            Ending::Value(Value::Null) if !self.lost && mentions_result(code) => {
                let mut print = self.printer();
                match self
                    .turn(checkout.feed("result", vec![], vec![], true, &mut print))
                    .await
                {
                    Ok(TurnEvent::Complete(value)) => completed(&value),
                    Ok(TurnEvent::NameLookup { .. }) => {
                        let answer = self
                            .turn(
                                checkout
                                    .resume_name_lookup(NameLookupResult::Undefined, &mut print),
                            )
                            .await;
                        match answer {
                            Ok(TurnEvent::Complete(value)) => completed(&value),
                            _ => Ending::Value(Value::Null),
                        }
                    }
                    _ => Ending::Value(Value::Null),
                }
            }
            other => other,
        }
    }

    /// One worker turn, bounded by the run's deadline and cancellation. Giving up
    /// mid-turn leaves the worker in an unknown state, so it is discarded.
    async fn turn(
        &mut self,
        fut: impl Future<Output = Result<TurnEvent, PoolError>>,
    ) -> Result<TurnEvent, PoolError> {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        tokio::select! {
            result = fut => result,
            () = tokio::time::sleep(remaining + OVERRUN_GRACE) => {
                self.lost = true;
                Err(PoolError::Timeout { timeout: remaining })
            }
            () = self.control.cancel.cancelled() => {
                self.lost = true;
                Err(PoolError::Protocol("cancelled by the client".into()))
            }
        }
    }

    fn remember(&mut self, exc: &MontyException, verdict: Verdict) {
        self.host_verdict = Some((exc.message().unwrap_or_default().to_owned(), verdict));
    }

    /// An uncatchable stop: the worker cannot be told to abort, so it is discarded.
    fn abort(&mut self, verdict: Verdict, exc: MontyException) -> Ending {
        self.lost = true;
        Ending::Raised { exc, verdict }
    }

    fn stopped(&mut self, stop: Stop) -> Ending {
        self.lost = true;
        match stop {
            Stop::Deadline => Ending::Raised {
                exc: exception(
                    ExcType::TimeoutError,
                    "run time limit exceeded (CODEMCP_EXEC_TIMEOUT_MS or the call's timeout_ms)",
                ),
                verdict: Verdict::Limit,
            },
            Stop::Cancelled => Ending::Cancelled,
        }
    }

    fn failed(&mut self, error: PoolError) -> Ending {
        match error {
            PoolError::Runtime(exc) => {
                let verdict = match &self.host_verdict {
                    Some((message, verdict)) if exc.message() == Some(message.as_str()) => {
                        verdict.clone()
                    }
                    _ => classify(&exc),
                };
                if matches!(verdict, Verdict::Limit) {
                    self.lost = true;
                }
                Ending::Raised { exc, verdict }
            }
            PoolError::Timeout { .. } => {
                self.lost = true;
                if self.control.cancel.is_cancelled() {
                    return Ending::Cancelled;
                }
                Ending::Raised {
                    exc: exception(
                        ExcType::TimeoutError,
                        "run time limit exceeded; the sandbox process was stopped",
                    ),
                    verdict: Verdict::Limit,
                }
            }
            PoolError::Protocol(_) if self.control.cancel.is_cancelled() => {
                self.lost = true;
                Ending::Cancelled
            }
            other => {
                self.lost = true;
                tracing::warn!(target: "codemcp::exec", error = %other, "Monty worker lost");
                Ending::Raised {
                    exc: exception(
                        ExcType::RuntimeError,
                        format!(
                            "the sandbox process crashed; this session's state was lost ({other})"
                        ),
                    ),
                    verdict: Verdict::Limit,
                }
            }
        }
    }
}

fn completed(value: &MontyObject) -> Ending {
    match to_json(value) {
        Ok(json) => Ending::Value(json),
        Err(e) => Ending::NotJson(e),
    }
}
