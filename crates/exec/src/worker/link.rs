//! One authenticated WebSocket connection to a worker: JSON-RPC both ways.
//! Requests we send are matched to replies by id; requests the worker sends
//! (`call_tool`, `search_tools`, `describe_tool`, and the resource and
//! prompt functions by their names) are answered from the run context of
//! their session, through the same SDK and catalog as Monty.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use futures::{SinkExt, StreamExt};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::protocol::{
    BAD_ARGUMENTS, CallToolParams, DescribeToolParams, Frame, METHOD_NOT_FOUND, ResourceCallParams,
    RpcError, SearchToolsParams, TOOL_FAILED,
};
use crate::{ToolCallObserver, ToolFailure, ToolHost};
use codemcp_sdk::Sdk;
use codemcp_sdk::resources::FUNCTIONS as RESOURCE_FUNCTIONS;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// What a worker's tool calls for one session go through during a run.
pub struct RunContext {
    /// The engine's name, for the tool host (audit).
    pub engine: &'static str,
    pub tools: Arc<dyn ToolHost>,
    pub sdk: Arc<Sdk>,
    pub max_tool_calls: u32,
    pub tool_calls: AtomicU32,
    /// Completed calls of tools not marked read-only.
    pub side_effects: AtomicU32,
    pub observer: Option<ToolCallObserver>,
}

pub struct WorkerLink {
    outgoing: mpsc::UnboundedSender<Message>,
    pending: Pending,
    next_id: AtomicU64,
    closed: CancellationToken,
    runs: Arc<Mutex<HashMap<String, Arc<RunContext>>>>,
}

/// Why a request to the worker got no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LinkError {
    #[error("the worker connection closed")]
    Closed,
    #[error("the worker answered with an error: {0}")]
    Remote(String),
}

impl WorkerLink {
    /// Starts the reader and writer tasks of an authenticated connection.
    pub fn start<S>(ws: WebSocketStream<S>) -> Arc<Self>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sink, mut stream) = ws.split();
        let (outgoing, mut queue) = mpsc::unbounded_channel::<Message>();
        let link = Arc::new(Self {
            outgoing,
            pending: Arc::default(),
            next_id: AtomicU64::new(1),
            closed: CancellationToken::new(),
            runs: Arc::default(),
        });
        let closed = link.closed.clone();
        tokio::spawn(async move {
            while let Some(message) = queue.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
            closed.cancel();
        });
        let reader = link.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                match message {
                    Message::Text(text) => reader.on_frame(&text),
                    Message::Close(_) => break,
                    _ => {}
                }
            }
            reader.close();
        });
        link
    }

    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    fn close(&self) {
        self.closed.cancel();
        let waiting: Vec<_> = self.pending.lock().drain().collect();
        drop(waiting); // their receivers see the sender dropped: Closed
    }

    /// Sends a request and waits for its answer (or the connection's end).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, LinkError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        let frame = Frame::request(json!(id), method, params);
        let text = serde_json::to_string(&frame).map_err(|_| LinkError::Closed)?;
        if self.closed.is_cancelled() || self.outgoing.send(Message::text(text)).is_err() {
            return Err(LinkError::Closed);
        }
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(LinkError::Remote(e.message)),
            Err(_) => Err(LinkError::Closed),
        }
    }

    pub fn begin_run(&self, session: &str, context: Arc<RunContext>) {
        self.runs.lock().insert(session.to_owned(), context);
    }

    pub fn end_run(&self, session: &str) {
        self.runs.lock().remove(session);
    }

    fn on_frame(self: &Arc<Self>, text: &str) {
        let Ok(frame) = serde_json::from_str::<Frame>(text) else {
            tracing::warn!(target: "codemcp::worker", "unparsable frame from a worker");
            return;
        };
        match (frame.method, frame.id) {
            (Some(method), Some(id)) => {
                let link = self.clone();
                let params = frame.params.unwrap_or(Value::Null);
                tokio::spawn(async move {
                    let result = link.answer(&method, params).await;
                    let reply = Frame::response(id, result);
                    if let Ok(text) = serde_json::to_string(&reply) {
                        let _ = link.outgoing.send(Message::text(text));
                    }
                });
            }
            (None, Some(Value::Number(id))) => {
                let Some(id) = id.as_u64() else { return };
                let waiter = self.pending.lock().remove(&id);
                if let Some(waiter) = waiter {
                    let result = match frame.error {
                        Some(e) => Err(e),
                        None => Ok(frame.result.unwrap_or(Value::Null)),
                    };
                    let _ = waiter.send(result);
                }
            }
            _ => {}
        }
    }

    /// Answers a request the worker sent.
    async fn answer(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let bad = |message: String| RpcError {
            code: BAD_ARGUMENTS,
            message,
        };
        match method {
            "call_tool" => {
                let params: CallToolParams =
                    serde_json::from_value(params).map_err(|e| bad(e.to_string()))?;
                let context = self.runs.lock().get(&params.session).cloned();
                let context =
                    context.ok_or_else(|| bad("no run is active for this session".into()))?;
                call_tool(&context, params).await
            }
            "search_tools" => {
                let params: SearchToolsParams =
                    serde_json::from_value(params).map_err(|e| bad(e.to_string()))?;
                let sdk = self
                    .any_sdk()
                    .ok_or_else(|| bad("no run is active".into()))?;
                serde_json::to_value(sdk.search(&params.query, params.limit.clamp(1, 100)))
                    .map_err(|e| bad(e.to_string()))
            }
            "describe_tool" => {
                let params: DescribeToolParams =
                    serde_json::from_value(params).map_err(|e| bad(e.to_string()))?;
                let sdk = self
                    .any_sdk()
                    .ok_or_else(|| bad("no run is active".into()))?;
                sdk.describe(&params.name).ok_or_else(|| RpcError {
                    code: TOOL_FAILED,
                    message: match sdk.connecting_for(&params.name) {
                        Some(connecting) => connecting.message(),
                        None => format!(
                            "no tool named '{}'; search_tools(query) lists the available ones",
                            params.name
                        ),
                    },
                })
            }
            "helper" => {
                let params: HelperParams =
                    serde_json::from_value(params).map_err(|e| bad(e.to_string()))?;
                let context = self.runs.lock().get(&params.session).cloned();
                let context =
                    context.ok_or_else(|| bad("no run is active for this session".into()))?;
                let call = crate::helpers::HelperCall {
                    function: params.function,
                    args: params.args,
                    kwargs: params.kwargs,
                };
                let result = context.tools.helper_call(context.engine, call).await;
                result.map_err(|failure| RpcError {
                    code: TOOL_FAILED,
                    message: failure.message,
                })
            }
            function if RESOURCE_FUNCTIONS.contains(&function) => {
                let params: ResourceCallParams =
                    serde_json::from_value(params).map_err(|e| bad(e.to_string()))?;
                let context = self.runs.lock().get(&params.session).cloned();
                let context =
                    context.ok_or_else(|| bad("no run is active for this session".into()))?;
                resource_call(&context, function, params).await
            }
            other => Err(RpcError {
                code: METHOD_NOT_FOUND,
                message: format!("unknown method '{other}'"),
            }),
        }
    }

    fn any_sdk(&self) -> Option<Arc<Sdk>> {
        self.runs.lock().values().next().map(|c| c.sdk.clone())
    }
}

/// `helper`: a call of `save_helper`, `list_helpers` or `delete_helper`.
#[derive(serde::Deserialize)]
struct HelperParams {
    session: String,
    function: String,
    #[serde(default)]
    args: Vec<Value>,
    #[serde(default)]
    kwargs: Map<String, Value>,
}

/// The tool-call limit's refusal when the run has used it up; else counts the call.
fn count_call(context: &RunContext) -> Result<u32, RpcError> {
    let done = context.tool_calls.fetch_add(1, Ordering::Relaxed);
    if done >= context.max_tool_calls {
        return Err(RpcError {
            code: TOOL_FAILED,
            message: format!(
                "tool call limit exceeded: more than {} calls in one run (CODEMCP_MAX_TOOL_CALLS)",
                context.max_tool_calls
            ),
        });
    }
    Ok(done)
}

/// Call number `done` (counted from 0) came back: the run's observer hears
/// of it, and a failure becomes the worker's error.
fn call_answered(
    context: &RunContext,
    done: u32,
    result: Result<Value, ToolFailure>,
) -> Result<Value, RpcError> {
    if let Some(observer) = &context.observer {
        observer(done + 1);
    }
    result.map_err(|failure| RpcError {
        code: TOOL_FAILED,
        message: failure.message,
    })
}

/// A call of a resource or prompt function: bound as Monty binds it, counted
/// like a tool call, read-only.
async fn resource_call(
    context: &RunContext,
    function: &str,
    params: ResourceCallParams,
) -> Result<Value, RpcError> {
    let bad = |message: String| RpcError {
        code: BAD_ARGUMENTS,
        message,
    };
    let keywords: Vec<(String, Value)> = params.kwargs.into_iter().collect();
    let call = context
        .sdk
        .resource_call(function, params.args, keywords)
        .ok_or_else(|| bad(format!("'{function}' is not a resource or prompt function")))?
        .map_err(|e| bad(e.to_string()))?;
    let done = count_call(context)?;
    let result = context.tools.resource_call(context.engine, call).await;
    let value = call_answered(context, done, result)?;
    Ok(json!({ "value": value }))
}

async fn call_tool(context: &RunContext, params: CallToolParams) -> Result<Value, RpcError> {
    let bad = |message: String| RpcError {
        code: BAD_ARGUMENTS,
        message,
    };
    let function = context
        .sdk
        .get(&params.name)
        .ok_or_else(|| bad(format!("name '{}' is not a tool", params.name)))?;
    let keywords: Vec<(String, Value)> = params.kwargs.into_iter().collect();
    let args = function
        .bind_args(params.args, keywords)
        .map_err(|e| bad(e.to_string()))?;
    if let Some(problem) = codemcp_snippet::preflight::argument_problem(function, &args) {
        return Err(bad(problem)); // as the Monty engine raises it
    }
    let done = count_call(context)?;
    let result = context
        .tools
        .call_tool(context.engine, &function.server, &function.tool, args)
        .await;
    if !function.read_only {
        context.side_effects.fetch_add(1, Ordering::Relaxed);
    }
    let value = call_answered(context, done, result)?;
    let value = if function.unwrap_result {
        crate::unwrap_result(value)
    } else {
        value
    };
    Ok(json!({ "value": value }))
}
