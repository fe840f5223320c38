//! Answering a pool run's suspensions: tool and gateway calls (at once, as
//! futures, or by parking the run), names, OS calls, and the waits for
//! calls in flight.

use super::*;

impl PoolRun {
    /// Answers the run's suspensions, one turn after another, until it ends.
    pub(super) async fn answer_until_done(
        &mut self,
        checkout: &mut Checkout,
        first: Result<TurnEvent, PoolError>,
    ) -> Ending {
        let mut event = first;
        loop {
            let turn = match event {
                Ok(TurnEvent::Complete(value)) => return completed(&value),
                Ok(turn) => turn,
                Err(e) => return self.failed(e),
            };
            if self.control.cancel.is_cancelled() {
                self.lost = true;
                return Ending::Cancelled;
            }
            // The deadline covers the whole run, including suspensions the
            // gateway answers itself (search_tools, print, sleep): a loop of
            // them never gives the worker's own clock a chance to fire.
            if Instant::now() >= self.deadline {
                return self.stopped(Stop::Deadline);
            }
            let next = match turn {
                TurnEvent::FunctionCall {
                    function_name,
                    args,
                    call_id,
                    object_id,
                    allow_eager_await,
                    position,
                    ..
                } => {
                    let call = FunctionCall {
                        function_name,
                        args,
                        call_id,
                        method: object_id.is_some(),
                        allow_eager_await,
                        position,
                    };
                    self.function_call(checkout, call).await
                }
                TurnEvent::NameLookup {
                    name, object_id, ..
                } => Ok(self.name_lookup(checkout, &name, object_id.is_some()).await),
                TurnEvent::OsCall {
                    function_name,
                    args,
                    call_id,
                    allow_eager_await,
                    system_sleep,
                    ..
                } => {
                    let call = OsCall {
                        function_name,
                        args,
                        call_id,
                        allow_eager_await,
                        system_sleep,
                    };
                    self.os_call(checkout, call).await
                }
                TurnEvent::ResolveFutures {
                    pending_call_ids, ..
                } => self.resolve_futures(checkout, &pending_call_ids).await,
                TurnEvent::Complete(value) => return completed(&value),
            };
            event = match next {
                Ok(next) => next,
                Err(ending) => return ending,
            };
        }
    }

    /// Answers a call of a function the sandbox does not define itself: a
    /// tool (now, as a future, or by parking the run), or a gateway function.
    async fn function_call(
        &mut self,
        checkout: &mut Checkout,
        call: FunctionCall,
    ) -> Result<Result<TurnEvent, PoolError>, Ending> {
        let FunctionCall {
            function_name,
            args,
            call_id,
            method,
            allow_eager_await,
            position,
        } = call;
        let mut print = self.printer();
        Ok(match self.host.on_call(&function_name, &args, method) {
            CallDecision::Reply(reply) => {
                self.turn(checkout.resume(resume_value(reply), &mut print))
                    .await
            }
            CallDecision::Abort(verdict, exc) => return Err(self.abort(verdict, exc)),
            CallDecision::Call(Outgoing::Tool(tool))
                if !allow_eager_await
                    && !self.calls.may_overlap()
                    && self.tools.parks(&tool.server, &tool.tool) =>
            {
                return self.park(checkout, call_id, tool).await;
            }
            CallDecision::Call(outgoing) => {
                let call = self.send(call_id, outgoing);
                if allow_eager_await {
                    match self.wait_for(call_id, call).await {
                        Ok(reply) => {
                            self.turn(
                                checkout.resume_futures(vec![(call_id, answer(reply))], &mut print),
                            )
                            .await
                        }
                        Err(stop) => return Err(self.stopped(stop)),
                    }
                } else if self
                    .calls
                    .wants_future(&position.filename, position.start, position.end)
                {
                    self.inflight.push(call);
                    self.turn(checkout.resume(ResumeValue::Future, &mut print))
                        .await
                } else {
                    match self.wait_for(call_id, call).await {
                        Ok(reply) => self.turn(checkout.resume(answer(reply), &mut print)).await,
                        Err(stop) => return Err(self.stopped(stop)),
                    }
                }
            }
        })
    }

    /// Parks the run at a call of `tool` that waits for the user's answer:
    /// the worker's dump of it is kept, and the worker let go. A worker that
    /// cannot dump it makes the call and waits in memory instead.
    async fn park(
        &mut self,
        checkout: &mut Checkout,
        call_id: u32,
        tool: ToolCall,
    ) -> Result<Result<TurnEvent, PoolError>, Ending> {
        match checkout.dump().await {
            Ok(dump) => {
                self.parked_dump = Some(dump);
                Err(Ending::Parked(ParkedCall {
                    server: tool.server,
                    tool: tool.tool,
                    args: tool.args,
                    state: None,
                }))
            }
            Err(e) => {
                tracing::warn!(target: "codemcp::exec", error = %e, "a pool run could not be parked; it waits in memory");
                let mut print = self.printer();
                let call = self.send(call_id, Outgoing::Tool(tool));
                match self.wait_for(call_id, call).await {
                    Ok(reply) => Ok(self.turn(checkout.resume(answer(reply), &mut print)).await),
                    Err(stop) => Err(self.stopped(stop)),
                }
            }
        }
    }

    /// Answers a name the sandbox does not know: a gateway function, or a
    /// `NameError` the host may classify.
    async fn name_lookup(
        &mut self,
        checkout: &mut Checkout,
        name: &str,
        attribute: bool,
    ) -> Result<TurnEvent, PoolError> {
        let mut print = self.printer();
        let answer = if attribute {
            Ok(NameLookupResult::Undefined)
        } else {
            self.host.on_lookup(name)
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err((verdict, exc)) => {
                self.remember(&exc, verdict);
                NameLookupResult::Error(exc)
            }
        };
        self.turn(checkout.resume_name_lookup(answer, &mut print))
            .await
    }

    /// Waits for at least one of the futures the run awaits.
    async fn resolve_futures(
        &mut self,
        checkout: &mut Checkout,
        pending: &[u32],
    ) -> Result<Result<TurnEvent, PoolError>, Ending> {
        let mut print = self.printer();
        match self.wait_any(pending).await {
            Ok(results) => {
                let results = results.into_iter().map(|(id, r)| (id, answer(r))).collect();
                Ok(self
                    .turn(checkout.resume_futures(results, &mut print))
                    .await)
            }
            Err(stop) => Err(self.stopped(stop)),
        }
    }

    /// Answers an OS call: sleeps, imports, the environment (denied).
    async fn os_call(
        &mut self,
        checkout: &mut Checkout,
        call: OsCall,
    ) -> Result<Result<TurnEvent, PoolError>, Ending> {
        let OsCall {
            function_name,
            args,
            call_id,
            allow_eager_await,
            system_sleep,
        } = call;
        let mut print = self.printer();
        let request = match system_sleep {
            Some(duration) => OsRequest::Sleep {
                duration,
                awaitable: function_name.contains("async"),
            },
            None if function_name == monty_types::IMPORT_CALL => OsRequest::Import(
                args.arg(0)
                    .and_then(|a| a.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            ),
            None if function_name.starts_with("os.getenv")
                || function_name.starts_with("os.environ") =>
            {
                OsRequest::Environment
            }
            None => OsRequest::Other(function_name.clone()),
        };
        let awaitable = matches!(
            request,
            OsRequest::Sleep {
                awaitable: true,
                ..
            }
        );
        Ok(match self.host.on_os_call(request) {
            OsDecision::Reply(reply) => {
                self.turn(checkout.resume(resume_value(reply), &mut print))
                    .await
            }
            OsDecision::Abort(verdict, exc) => {
                if matches!(verdict, Verdict::Limit) {
                    return Err(self.abort(verdict, exc));
                }
                // Unsupported imports: raise in the sandbox, keep the session.
                self.remember(&exc, verdict);
                self.turn(checkout.resume(ResumeValue::Error(exc), &mut print))
                    .await
            }
            OsDecision::Sleep(d) if awaitable && !allow_eager_await => {
                self.inflight.push(
                    async move {
                        tokio::time::sleep(d).await;
                        (call_id, Ok(MontyObject::none()))
                    }
                    .boxed(),
                );
                self.turn(checkout.resume(ResumeValue::Future, &mut print))
                    .await
            }
            OsDecision::Sleep(d) => {
                if let Err(stop) = self.sleep(d).await {
                    return Err(self.stopped(stop));
                }
                let none = ResumeValue::Return(MontyObject::none());
                if awaitable {
                    self.turn(checkout.resume_futures(vec![(call_id, none)], &mut print))
                        .await
                } else {
                    self.turn(checkout.resume(none, &mut print)).await
                }
            }
        })
    }

    fn send(&self, call_id: u32, call: Outgoing) -> BoxFuture<'static, (u32, CallResult)> {
        let failures = self.host.failures.clone();
        let fut = call.send(&*self.tools, super::ENGINE_NAME, failures);
        async move { (call_id, fut.await) }.boxed()
    }

    fn count_completed(&mut self) {
        self.completed_calls += 1;
        if let Some(observer) = &self.control.on_tool_call {
            observer(self.completed_calls);
        }
    }

    async fn wait_for(
        &mut self,
        call_id: u32,
        call: BoxFuture<'static, (u32, CallResult)>,
    ) -> Result<CallResult, Stop> {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        let result = tokio::select! {
            (_, result) = call => result,
            () = tokio::time::sleep(remaining) => return Err(Stop::Deadline),
            () = self.control.cancel.cancelled() => return Err(Stop::Cancelled),
        };
        self.count_completed();
        let _ = call_id;
        Ok(result)
    }

    async fn wait_any(&mut self, pending: &[u32]) -> Result<Vec<(u32, CallResult)>, Stop> {
        loop {
            let ready: Vec<(u32, CallResult)> = pending
                .iter()
                .filter_map(|id| self.early.remove(id).map(|r| (*id, r)))
                .collect();
            if !ready.is_empty() {
                return Ok(ready);
            }
            let remaining = self.deadline.saturating_duration_since(Instant::now());
            let next = tokio::select! {
                next = self.inflight.next() => next,
                () = tokio::time::sleep(remaining) => return Err(Stop::Deadline),
                () = self.control.cancel.cancelled() => return Err(Stop::Cancelled),
            };
            let Some((id, result)) = next else {
                return Err(Stop::Deadline);
            };
            self.count_completed();
            self.early.insert(id, result);
            while let Some(Some((id, result))) = self.inflight.next().now_or_never() {
                self.count_completed();
                self.early.insert(id, result);
            }
        }
    }

    async fn sleep(&mut self, d: Duration) -> Result<(), Stop> {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if d > remaining {
            tokio::time::sleep(remaining).await;
            return Err(Stop::Deadline);
        }
        tokio::select! {
            () = tokio::time::sleep(d) => Ok(()),
            () = self.control.cancel.cancelled() => Err(Stop::Cancelled),
        }
    }
}

fn answer(reply: CallResult) -> ResumeValue {
    match reply {
        Ok(v) => ResumeValue::Return(v),
        Err(e) => ResumeValue::Error(e),
    }
}

fn resume_value(reply: ExtFunctionResult) -> ResumeValue {
    match reply {
        ExtFunctionResult::Return(v) => ResumeValue::Return(v),
        ExtFunctionResult::Error(e) => ResumeValue::Error(e),
        ExtFunctionResult::Future(_) => ResumeValue::Future,
        ExtFunctionResult::NotFound(_) => ResumeValue::NotFound,
    }
}

/// The parts of a function-call suspension the gateway answers.
struct FunctionCall {
    function_name: String,
    args: monty_types::CallArgs,
    call_id: u32,
    /// A method call (on an object), not a call of a plain name.
    method: bool,
    allow_eager_await: bool,
    position: monty_types::SourceRange,
}

/// The parts of an OS-call suspension the gateway answers.
struct OsCall {
    function_name: String,
    args: monty_types::CallArgs,
    call_id: u32,
    allow_eager_await: bool,
    system_sleep: Option<std::time::Duration>,
}
