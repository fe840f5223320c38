//! How the gateway answers Monty's suspensions, whatever the placement
//! (in-process thread or `monty-pool` worker): which names are tools, how a call
//! binds its arguments, which OS calls are refused, and the per-run tool-call
//! and sleep budgets. The placements only differ in how they resume.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use monty_types::{
    CallArgs, ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult,
};
use serde_json::{Map, Value};

use super::classify::{ImportVerdict, Verdict, classify_import, classify_missing_name};
use super::convert::{NotJson, json_of, to_monty};
use crate::helpers::HELPER_FUNCTIONS;
use crate::{ToolFailure, ToolHost};
use codemcp_sdk::resources::FUNCTIONS as RESOURCE_FUNCTIONS;
use codemcp_sdk::{ResourceCall, Sdk};

/// Names every engine provides besides the tools.
const SEARCH_TOOLS: &str = "search_tools";
const DESCRIBE_TOOL: &str = "describe_tool";

/// What to do about an external function call.
pub enum CallDecision {
    /// Answer right away.
    Reply(ExtFunctionResult),
    /// Stop the run with an uncatchable error.
    Abort(Verdict, MontyException),
    /// Call upstream and answer with its result.
    Call(Outgoing),
}

/// A call that leaves the gateway: an upstream tool's, or one of the
/// resource and prompt functions (which never park: they are read-only).
pub enum Outgoing {
    Tool(ToolCall),
    Resource(ResourceCall),
    /// `save_helper`, `list_helpers`, `delete_helper` (see `crate::helpers`).
    Helper(crate::helpers::HelperCall),
}

impl Outgoing {
    /// Sends the call through `tools`; the future gives the sandbox's reply.
    pub fn send(
        self,
        tools: &dyn ToolHost,
        engine: &'static str,
        failures: ToolFailures,
    ) -> BoxFuture<'static, Result<MontyObject, MontyException>> {
        let (sent, unwrap) = match self {
            Outgoing::Tool(tool) => (
                tools.call_tool(engine, &tool.server, &tool.tool, tool.args),
                tool.unwrap_result,
            ),
            Outgoing::Resource(call) => (tools.resource_call(engine, call), false),
            Outgoing::Helper(call) => (tools.helper_call(engine, call), false),
        };
        Box::pin(async move { tool_reply(sent.await, unwrap, &failures) })
    }
}

pub struct ToolCall {
    pub server: String,
    pub tool: String,
    pub args: Map<String, Value>,
    /// The tool wraps plain values as `{"result": v}` (FastMCP): return `v`.
    pub unwrap_result: bool,
}

/// An OS-level request, as either placement reports it.
pub enum OsRequest {
    Import(String),
    Sleep {
        duration: Duration,
        awaitable: bool,
    },
    Environment,
    /// Anything else (files, paths, ...), by its Python name.
    Other(String),
}

pub enum OsDecision {
    Reply(ExtFunctionResult),
    Abort(Verdict, MontyException),
    /// Wait this long, then answer `None` (as a future when awaitable).
    Sleep(Duration),
}

/// Per-run state of the answers: the budgets already spent.
/// The messages of the tool failures raised into the sandbox in one run:
/// Monty spells `ToolError` as `RuntimeError` (it has no user exception
/// classes), so an uncaught one is recognised by its message and reported
/// as `ToolError`, as CPython reports it.
#[derive(Clone, Default)]
pub struct ToolFailures(Arc<parking_lot::Mutex<HashSet<String>>>);

impl ToolFailures {
    fn note(&self, message: &str) {
        self.0.lock().insert(message.to_owned());
    }

    /// The name CPython would give `exc_type` with `message`.
    pub fn type_name(&self, exc_type: String, message: &str) -> String {
        if exc_type == "RuntimeError" && self.0.lock().contains(message) {
            "ToolError".to_owned()
        } else {
            exc_type
        }
    }
}

pub struct SuspensionHost {
    /// Tool failures raised into the sandbox (see [`ToolFailures`]).
    pub failures: ToolFailures,
    sdk: Arc<Sdk>,
    max_tool_calls: u32,
    max_sleep_total: Duration,
    pub tool_calls: u32,
    /// Calls issued to tools not marked read-only.
    pub side_effects: u32,
    slept: Duration,
}

pub fn exception(exc_type: ExcType, msg: impl Into<String>) -> MontyException {
    MontyException::new(exc_type, Some(msg.into()))
}

impl SuspensionHost {
    pub fn new(sdk: Arc<Sdk>, max_tool_calls: u32, max_sleep_total: Duration) -> Self {
        Self {
            failures: ToolFailures::default(),
            sdk,
            max_tool_calls,
            max_sleep_total,
            tool_calls: 0,
            side_effects: 0,
            slept: Duration::ZERO,
        }
    }

    /// A bare name the snippet read that is not defined.
    pub fn on_lookup(&self, name: &str) -> Result<NameLookupResult, (Verdict, MontyException)> {
        if name == SEARCH_TOOLS
            || name == DESCRIBE_TOOL
            || RESOURCE_FUNCTIONS.contains(&name)
            || HELPER_FUNCTIONS.contains(&name)
        {
            return Ok(NameLookupResult::Value(MontyObject::function(name, None)));
        }
        if let Some(f) = self.sdk.get(name) {
            return Ok(NameLookupResult::Value(MontyObject::function(
                name,
                Some(f.summary.clone()),
            )));
        }
        if self.sdk.connecting_for(name).is_some() {
            // Callable, so that calling it says why it is not there yet.
            return Ok(NameLookupResult::Value(MontyObject::function(name, None)));
        }
        match classify_missing_name(name) {
            Some(reason) => Err(unsupported(reason)),
            None => Ok(NameLookupResult::Undefined),
        }
    }

    /// A call of a name that is not a Python function of the snippet.
    pub fn on_call(&mut self, name: &str, args: &CallArgs, method_call: bool) -> CallDecision {
        if method_call {
            return CallDecision::Reply(ExtFunctionResult::NotFound(name.to_owned()));
        }
        if name == SEARCH_TOOLS {
            return CallDecision::Reply(self.search_tools(args));
        }
        if name == DESCRIBE_TOOL {
            return CallDecision::Reply(self.describe_tool(args));
        }
        if HELPER_FUNCTIONS.contains(&name) {
            return match helper_call(name, args) {
                Ok(call) => CallDecision::Call(Outgoing::Helper(call)),
                Err(exc) => CallDecision::Reply(ExtFunctionResult::Error(exc)),
            };
        }
        if let Some(bound) = self.bind_resource_call(name, args) {
            return match bound {
                Ok(call) => match self.count_call(true) {
                    Some(limit) => limit,
                    None => CallDecision::Call(Outgoing::Resource(call)),
                },
                Err(exc) => CallDecision::Reply(ExtFunctionResult::Error(exc)),
            };
        }
        // Its own handle on the SDK: the call is counted (`&mut self`) while
        // the function is still read.
        let sdk = Arc::clone(&self.sdk);
        let Some(function) = sdk.get(name) else {
            if let Some(connecting) = self.sdk.connecting_for(name) {
                let exc = exception(ExcType::RuntimeError, connecting.message());
                return CallDecision::Reply(ExtFunctionResult::Error(exc));
            }
            return match classify_missing_name(name) {
                Some(reason) => {
                    let (verdict, exc) = unsupported(reason);
                    CallDecision::Abort(verdict, exc)
                }
                None => CallDecision::Reply(ExtFunctionResult::NotFound(name.to_owned())),
            };
        };
        let started = codemcp_base::timing::start();
        let bound = bind(name, function, args);
        codemcp_base::timing::since("arguments bound", started);
        let args = match bound {
            Ok(args) => args,
            Err(exc) => return CallDecision::Reply(ExtFunctionResult::Error(exc)),
        };
        if let Some(limit) = self.count_call(function.read_only) {
            return limit;
        }
        CallDecision::Call(Outgoing::Tool(ToolCall {
            server: function.server.clone(),
            tool: function.tool.clone(),
            args,
            unwrap_result: function.unwrap_result,
        }))
    }

    /// Counts one upstream call against `CODEMCP_MAX_TOOL_CALLS`; the abort
    /// when it is one too many.
    fn count_call(&mut self, read_only: bool) -> Option<CallDecision> {
        if self.tool_calls >= self.max_tool_calls {
            let msg = format!(
                "tool call limit exceeded: more than {} calls in one run (CODEMCP_MAX_TOOL_CALLS)",
                self.max_tool_calls
            );
            return Some(CallDecision::Abort(
                Verdict::Limit,
                exception(ExcType::RuntimeError, msg),
            ));
        }
        self.tool_calls += 1;
        if !read_only {
            self.side_effects += 1;
        }
        None
    }

    /// A call of a resource or prompt function, bound; `None` for any other name.
    fn bind_resource_call(
        &self,
        name: &str,
        args: &CallArgs,
    ) -> Option<Result<ResourceCall, MontyException>> {
        if !RESOURCE_FUNCTIONS.contains(&name) {
            return None;
        }
        let (positional, keywords) = match json_args(name, args) {
            Ok(json) => json,
            Err(exc) => return Some(Err(exc)),
        };
        let bound = self.sdk.resource_call(name, positional, keywords)?;
        Some(bound.map_err(|e| exception(ExcType::TypeError, e.to_string())))
    }

    pub fn on_os_call(&mut self, request: OsRequest) -> OsDecision {
        match request {
            OsRequest::Import(module) => match classify_import(&module) {
                ImportVerdict::Denied => OsDecision::Reply(
                    exception(
                        ExcType::PermissionError,
                        format!(
                            "import of '{module}' is blocked: sandboxed code has no file, network, process or \
                             environment access; use the upstream tools instead"
                        ),
                    )
                    .into(),
                ),
                ImportVerdict::Unsupported { reason } => {
                    let exc = exception(ExcType::ModuleNotFoundError, format!("Monty does not support {reason}"));
                    OsDecision::Abort(Verdict::Unsupported { reason }, exc)
                }
                ImportVerdict::NotFound => OsDecision::Reply(ExtFunctionResult::NotFound(module)),
            },
            OsRequest::Sleep { duration, .. } => {
                self.slept += duration;
                if self.slept > self.max_sleep_total {
                    let msg = format!(
                        "sleep limit exceeded: {:.1}s asked in total, {:.1}s allowed per run (CODEMCP_MAX_SLEEP_MS)",
                        self.slept.as_secs_f64(),
                        self.max_sleep_total.as_secs_f64()
                    );
                    return OsDecision::Abort(Verdict::Limit, exception(ExcType::TimeoutError, msg));
                }
                OsDecision::Sleep(duration)
            }
            OsRequest::Environment => OsDecision::Reply(
                exception(ExcType::PermissionError, "environment access is denied in the sandbox").into(),
            ),
            OsRequest::Other(name) => OsDecision::Reply(
                exception(
                    ExcType::PermissionError,
                    format!(
                        "{name} is denied: sandboxed code has no file system access; use the upstream tools (for \
                         example a filesystem server) instead"
                    ),
                )
                .into(),
            ),
        }
    }

    fn search_tools(&self, args: &CallArgs) -> ExtFunctionResult {
        let query = args
            .arg(0)
            .or_else(|| args.kwarg("query"))
            .and_then(|v| v.as_str().map(str::to_owned));
        let Some(query) = query else {
            return exception(
                ExcType::TypeError,
                "search_tools(query: str, limit: int = 10) needs a query string",
            )
            .into();
        };
        let limit = args
            .arg(1)
            .or_else(|| args.kwarg("limit"))
            .and_then(|v| v.as_int())
            .unwrap_or(10);
        let hits = self.sdk.search(&query, limit.clamp(1, 100) as usize);
        to_monty(&serde_json::to_value(hits).unwrap_or(Value::Null)).into()
    }

    fn describe_tool(&self, args: &CallArgs) -> ExtFunctionResult {
        let name = args
            .arg(0)
            .or_else(|| args.kwarg("name"))
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
            None => match self.sdk.connecting_for(&name) {
                Some(connecting) => exception(ExcType::KeyError, connecting.message()).into(),
                None => exception(
                    ExcType::KeyError,
                    format!("no tool named '{name}'; search_tools(query) lists the available ones"),
                )
                .into(),
            },
        }
    }
}

fn unsupported(reason: String) -> (Verdict, MontyException) {
    let exc = exception(
        ExcType::NotImplementedError,
        format!("Monty does not support {reason}"),
    );
    (Verdict::Unsupported { reason }, exc)
}

/// A call of a helper function, its arguments as JSON; a function
/// argument (`save_helper(fn)`) goes as its name.
fn helper_call(name: &str, args: &CallArgs) -> Result<crate::helpers::HelperCall, MontyException> {
    let value = |arg: monty_types::ObjectRef<'_>| -> Result<Value, MontyException> {
        // A function of the snippet reaches the host only as its repr.
        if let monty_types::unstable::MontyNode::Repr(repr) = monty_types::unstable::node(arg)
            && repr.starts_with("<function ")
        {
            return Ok(Value::String(function_name(repr)));
        }
        json_of(arg).map_err(|e| exception(ExcType::TypeError, format!("{name}(): {e}")))
    };
    let mut positional = Vec::new();
    for arg in args.args() {
        positional.push(value(arg)?);
    }
    let mut keywords = Map::new();
    for (key, arg) in args.kwargs() {
        let key = key.as_str().unwrap_or_default().to_owned();
        keywords.insert(key, value(arg)?);
    }
    Ok(crate::helpers::HelperCall {
        function: name.to_owned(),
        args: positional,
        kwargs: keywords,
    })
}

/// `f` from `<function f at 0x…>` or `<function 'f' …>`.
fn function_name(repr: &str) -> String {
    let rest = repr.strip_prefix("<function ").unwrap_or(repr);
    let rest = rest.trim_start_matches('\'');
    rest.split([' ', '\'', '>'])
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A call's Python arguments as JSON: positional, then keywords.
#[allow(clippy::type_complexity)]
fn json_args(
    name: &str,
    args: &CallArgs,
) -> Result<(Vec<Value>, Vec<(String, Value)>), MontyException> {
    let not_json = |what: String, e: NotJson| {
        exception(
            ExcType::TypeError,
            format!("{name}(): {what} cannot be sent to the tool: {e}"),
        )
    };
    let mut positional = Vec::new();
    for (i, arg) in args.args().enumerate() {
        positional.push(json_of(arg).map_err(|e| not_json(format!("argument {}", i + 1), e))?);
    }
    let mut keywords = Vec::new();
    for (key, value) in args.kwargs() {
        let key = key.as_str().unwrap_or_default().to_owned();
        let value = json_of(value).map_err(|e| not_json(format!("argument '{key}'"), e))?;
        keywords.push((key, value));
    }
    Ok((positional, keywords))
}

/// Maps the call's Python arguments onto the tool's JSON arguments.
fn bind(
    name: &str,
    function: &codemcp_sdk::SdkFunction,
    args: &CallArgs,
) -> Result<Map<String, Value>, MontyException> {
    let (positional, keywords) = json_args(name, args)?;
    let bound = function
        .bind_args(positional, keywords)
        .map_err(|e| exception(ExcType::TypeError, e.to_string()))?;
    // What the pre-flight check refuses unhandled is raised here, before
    // the server, where the code handles it.
    match codemcp_snippet::preflight::argument_problem(function, &bound) {
        Some(problem) => Err(exception(ExcType::TypeError, problem)),
        None => Ok(bound),
    }
}

/// A finished tool call as the sandbox sees it.
pub fn tool_reply(
    result: Result<Value, ToolFailure>,
    unwrap: bool,
    failures: &ToolFailures,
) -> Result<MontyObject, MontyException> {
    let started = codemcp_base::timing::start();
    let reply = match result {
        Ok(value) => Ok(to_monty(&if unwrap {
            crate::unwrap_result(value)
        } else {
            value
        })),
        // `ToolError` is `RuntimeError` in Monty (no user exception classes).
        Err(failure) => {
            failures.note(&failure.message);
            Err(exception(ExcType::RuntimeError, failure.message))
        }
    };
    codemcp_base::timing::since("tool reply", started);
    reply
}

/// `Ok`/`Err` as the resume value Monty takes.
pub fn ext_result(reply: Result<MontyObject, MontyException>) -> ExtFunctionResult {
    match reply {
        Ok(v) => ExtFunctionResult::Return(v),
        Err(e) => ExtFunctionResult::Error(e),
    }
}
