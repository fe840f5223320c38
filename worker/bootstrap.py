"""The codemcp CPython worker: runs agent snippets when Monty cannot.

It dials the gateway's control channel (`CODEMCP_CONTROL_URL`), presents
`CODEMCP_WORKER_TOKEN` as its first frame and then speaks JSON-RPC 2.0 both
ways on that one WebSocket; `PROTOCOL.md` beside this file is the reference.
Each run executes in its own thread, so the event loop that owns the socket
is never blocked by snippet code. Stdlib plus `websockets` only.
"""

import ast
import asyncio
import builtins
import collections
import concurrent.futures
import contextvars
import dataclasses
import datetime
import decimal
import inspect
import io
import itertools
import json
import linecache
import os
import pathlib
import re
import socket
import sys
import threading
import traceback
import warnings

import websockets
from websockets.asyncio.client import connect

# Snippets share this interpreter and may rebind module attributes
# (`json.dumps = None`); the channel keeps its own references.
json_dumps, json_loads = json.dumps, json.loads

# Same as tungstenite's default on the gateway side.
MAX_FRAME_BYTES = 64 * 1024 * 1024
# Deeper values are refused, as in the Monty engine (src/exec/monty/convert.rs).
MAX_JSON_DEPTH = 256
# The hidden name that receives the value of a snippet's last expression.
LAST_VALUE = "__codemcp_last_value__"
# Tracebacks stay short: like CPython, a frame repeated more than 3 times in a
# row is folded, and at most this many entries are shown.
RECURSIVE_CUTOFF = 3
MAX_TRACE_ENTRIES = 40
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
TOOL_FAILED = -32000
BAD_ARGUMENTS = -32602
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603


class ToolError(RuntimeError):
    """A tool call failed upstream; `str()` is the upstream's text."""

    def __init__(self, message="", server="", tool=""):
        super().__init__(message)
        self.server = server
        self.tool = tool


class RpcError(Exception):
    """A JSON-RPC error answer from the gateway."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


# ---------------------------------------------------------------- output

_capture = contextvars.ContextVar("codemcp_capture", default=None)


class Capture:
    """One run's stdout and stderr, kept apart under one cap in UTF-8 bytes,
    like the Monty engine (src/exec/monty/output.rs)."""

    def __init__(self, limit):
        self.limit = limit
        self.parts = {"stdout": [], "stderr": []}
        self.size = 0
        self.truncated = False
        self.lock = threading.Lock()

    def write(self, stream, text):
        data = clean_text(text).encode("utf-8")
        with self.lock:
            if self.truncated:
                return
            room = self.limit - self.size
            if len(data) > room:
                # "ignore" drops a character cut in half at the cap.
                data = data[: max(room, 0)]
                self.truncated = True
            self.parts[stream].append(data.decode("utf-8", "ignore"))
            self.size += len(data)

    def finish(self):
        """`(stdout, stderr, truncated)`; the marker of dropped output ends stdout."""
        stdout, stderr = "".join(self.parts["stdout"]), "".join(self.parts["stderr"])
        if self.truncated:
            if stdout and not stdout.endswith("\n"):
                stdout += "\n"
            stdout += f"[output truncated at {self.limit} bytes]\n"
        return stdout, stderr, self.truncated


class StreamProxy(io.TextIOBase):
    """sys.stdout/sys.stderr: writes go to the capture of the run whose
    context is current, so concurrent runs never see each other's output."""

    def __init__(self, stream, fallback):
        self._stream = stream
        self._fallback = fallback if fallback is not None else io.StringIO()

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        capture = _capture.get()
        if capture is None:
            return self._fallback.write(text)
        capture.write(self._stream, text)
        return len(text)

    def flush(self):
        if _capture.get() is None:
            self._fallback.flush()

    def writable(self):
        return True

    def isatty(self):
        return False

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"


STDOUT = StreamProxy("stdout", sys.__stdout__)
STDERR = StreamProxy("stderr", sys.__stderr__)
_format_warning = warnings.formatwarning


def format_warning(message, category, filename, lineno, line=None):
    """Warnings (SyntaxWarning, warnings.warn) go to stderr in CPython's own
    form, the snippet named `<snippet>` rather than by its run's number."""
    if filename.startswith("<snippet "):
        if line is None:
            line = linecache.getline(filename, lineno)
        filename = "<snippet>"
    return _format_warning(message, category, filename, lineno, line)


def install_streams():
    sys.stdout = STDOUT
    sys.stderr = STDERR
    # input() ends at once instead of waiting on a stdin nobody writes to.
    sys.stdin = io.StringIO("")
    warnings.formatwarning = format_warning


def log(message):
    print(f"codemcp-worker: {message}", file=sys.__stderr__, flush=True)


# ---------------------------------------------------------------- JSON values


class NotJson(Exception):
    pass


def clean_text(text):
    """Lone surrogates (e.g. from `'\\ud800'`) cannot be sent as UTF-8; they
    become U+FFFD."""
    return LONE_SURROGATE.sub("\ufffd", text)


def to_json(value, depth=0, within=None):
    """A Python value as JSON, with the Monty engine's rules: tuples, sets and
    deques become arrays, number/bool/None keys strings, dates and decimals
    their `str()`, dataclass instances objects of their fields. Anything else
    raises NotJson in the Monty engine's words (src/exec/monty/convert.rs).
    `within`: the ids of the containers being converted, to see a cycle."""
    if depth > MAX_JSON_DEPTH:
        raise NotJson(f"value is nested more than {MAX_JSON_DEPTH} levels deep")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise NotJson("integer too large for JSON (JSON numbers hold 64 bits): return str() of it")
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise NotJson(f"float {value} (NaN/infinity) has no JSON form")
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)  # a str-mixin Enum's str() would be its name
    if isinstance(value, (list, tuple, set, frozenset, collections.deque, dict)):
        within = set() if within is None else within
        if id(value) in within:
            raise NotJson(CYCLE)
        within.add(id(value))
        try:
            if isinstance(value, dict):
                return {json_key(k, depth): to_json(v, depth + 1, within) for k, v in value.items()}
            return [to_json(item, depth + 1, within) for item in value]
        finally:
            within.discard(id(value))
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta, datetime.tzinfo, decimal.Decimal, pathlib.PurePath)):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return to_json(fields, depth, within)
    raise NotJson(no_json_form(value))


CYCLE = "the value contains itself (a reference cycle), which JSON cannot hold"


def no_json_form(value):
    """Why `value` has no JSON form, naming its type: instances of the
    snippet's own classes and exceptions are instances, as in Monty."""
    if isinstance(value, type):
        return f"the class '{value.__name__}' has no JSON form"
    if isinstance(value, ToolFunction):
        return "a value of type 'function' has no JSON form"  # as Monty's tool functions
    kind = type(value)
    if isinstance(value, BaseException) or kind.__module__ == "__main__":
        return f"a '{kind.__name__}' instance has no JSON form"
    return f"a value of type '{kind.__name__}' has no JSON form"


def json_key(key, depth):
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, (bool, int, float)):
        return json_dumps(to_json(key, depth + 1))
    raise NotJson(f"dict keys must be str, int, float, bool or None, not '{type(key).__name__}'")


# ---------------------------------------------------------------- channel


class Channel:
    """The one WebSocket: a single writer task, and replies to our requests
    matched by id so many tool calls can be in flight at once."""

    def __init__(self, ws, loop):
        self.ws = ws
        self.loop = loop
        self.outbox = asyncio.Queue()
        self.pending = {}
        self.ids = itertools.count(1)
        self.lock = threading.Lock()

    async def write_forever(self):
        try:
            while True:
                await self.ws.send(await self.outbox.get())
        except websockets.exceptions.ConnectionClosed:
            pass  # the reader sees the close too and ends the worker

    def send(self, message):
        """Queues a frame; callable from any thread."""
        text = clean_text(json_dumps(message, ensure_ascii=False))
        try:
            self.loop.call_soon_threadsafe(self.outbox.put_nowait, text)
        except RuntimeError:
            pass  # the loop is gone: the worker is exiting

    def request(self, method, params):
        """Sends a request; the returned concurrent future gets its answer."""
        future = concurrent.futures.Future()
        with self.lock:
            request_id = f"w{next(self.ids)}"
            self.pending[request_id] = future
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return future

    def on_reply(self, message):
        with self.lock:
            future = self.pending.pop(message.get("id"), None)
        if future is None:
            return
        error = message.get("error")
        try:
            if isinstance(error, dict):
                future.set_exception(RpcError(error.get("code"), str(error.get("message", ""))))
            else:
                future.set_result(message.get("result"))
        except concurrent.futures.InvalidStateError:
            pass  # the awaiting task was cancelled when its run ended


# ---------------------------------------------------------------- the calling contract


class ToolFunction:
    """A catalog function: synchronous in plain code, an awaitable when
    called from code running in an event loop (top-level await, gather)."""

    def __init__(self, session, name, doc):
        self._session = session
        self.__name__ = self.__qualname__ = name
        self.__doc__ = doc

    def __repr__(self):
        return f"<tool function {self.__name__}>"

    def __call__(self, *args, **kwargs):
        return with_headroom(self._call, args, kwargs)

    def _call(self, args, kwargs):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._finish(self._start(args, kwargs))
        if not self._session.wants_future(sys._getframe(3)):
            # A plain call in async code: its value, as an ordinary function gives.
            return self._finish(self._start(args, kwargs))
        return self._awaitable(args, kwargs)

    async def _awaitable(self, args, kwargs):
        future = self._start(args, kwargs)
        try:
            await asyncio.wrap_future(future)
        except RpcError:
            pass  # raised with the tool's wording by _finish
        return self._finish(future)

    def _start(self, args, kwargs):
        try:
            args, kwargs = to_json(list(args)), to_json(kwargs)
        except NotJson as e:
            raise TypeError(f"{self.__name__}(): an argument cannot be sent to the tool: {e}") from None
        session = self._session
        session.tool_calls += 1
        params = {"session": session.name, "name": self.__name__, "args": args, "kwargs": kwargs}
        return session.channel.request("call_tool", params)

    def _finish(self, future):
        try:
            answer = future.result()
        except RpcError as e:
            if e.code == BAD_ARGUMENTS:
                raise TypeError(e.message) from None
            raise ToolError(e.message, server="", tool=self.__name__) from None
        return answer.get("value") if isinstance(answer, dict) else None


class ResourceFunction(ToolFunction):
    """`list_resources`, `read_resource`, `list_prompts` or `get_prompt`:
    called like a tool function (awaitable in async code, counted against the
    tool-call limit), sent as the request of its own name; the gateway binds
    the arguments as the Monty engine does."""

    def __repr__(self):
        return f"<function {self.__name__}>"

    def _start(self, args, kwargs):
        try:
            args, kwargs = to_json(list(args)), to_json(kwargs)
        except NotJson as e:
            raise TypeError(f"{self.__name__}(): an argument cannot be sent: {e}") from None
        session = self._session
        session.tool_calls += 1
        params = {"session": session.name, "args": args, "kwargs": kwargs}
        return session.channel.request(self.__name__, params)


RESOURCE_FUNCTIONS = {
    "list_resources": "list_resources(server=None): resources of `server`, or of every server: [{server, uri, name, ...}].",
    "read_resource": "read_resource(server, uri): a text resource as str, a binary one as {mimeType, base64}, several as a list.",
    "list_prompts": "list_prompts(server=None): prompts of `server`, or of every server: [{server, name, arguments, ...}].",
    "get_prompt": "get_prompt(server, name, **arguments): the prompt's {description, messages: [{role, content}]}.",
}


HELPER_FUNCTIONS = ("save_helper", "list_helpers", "delete_helper")


def make_helper_function(session, name):
    """`save_helper(fn, description=None)`, `list_helpers()`, `delete_helper(name)`:
    sent as the request `helper`; a function argument goes as its name."""

    def named(value):
        return value.__name__ if callable(value) and hasattr(value, "__name__") else value

    def helper_function(*args, **kwargs):
        try:
            args = to_json([named(a) for a in args])
            kwargs = to_json({k: named(v) for k, v in kwargs.items()})
        except NotJson as e:
            raise TypeError(f"{name}(): an argument cannot be sent: {e}") from None
        params = {"session": session.name, "function": name, "args": args, "kwargs": kwargs}
        try:
            return session.channel.request("helper", params).result()
        except RpcError as e:
            raise ToolError(e.message, tool=name) from None

    helper_function.__name__ = name
    return helper_function


def make_search_tools(channel):
    def search_tools(query, limit=10):
        """Tools whose name or docs match `query`: [{name, signature, summary}]."""
        return with_headroom(search, query, limit)

    def search(query, limit):
        if not isinstance(query, str):
            raise TypeError("search_tools(query: str, limit: int = 10) needs a query string")
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError("search_tools(query: str, limit: int = 10) needs an int limit")
        try:
            return channel.request("search_tools", {"query": query, "limit": limit}).result()
        except RpcError as e:
            if e.code == BAD_ARGUMENTS:
                raise TypeError(e.message) from None
            raise ToolError(e.message, tool="search_tools") from None

    return search_tools


def make_describe_tool(channel):
    def describe_tool(name):
        """A tool's full docs and JSON Schemas."""
        return with_headroom(describe, name)

    def describe(name):
        if not isinstance(name, str):
            raise TypeError("describe_tool(name: str) needs a tool name")
        try:
            return channel.request("describe_tool", {"name": name}).result()
        except RpcError as e:
            raise KeyError(e.message) from None

    return describe_tool


# ---------------------------------------------------------------- sessions


class Session:
    """One MCP session's persistent namespace."""

    def __init__(self, name, channel):
        self.name = name
        self.channel = channel
        self.lock = threading.Lock()
        self.tool_calls = 0
        self.catalog_version = None
        self.tools = {}
        self.files = []
        self.recursion_limit = None  # set by the session's sys.setrecursionlimit
        # Per snippet file: the (line, column) of each call that wants a future.
        self.future_calls = {}
        self.namespace = {
            "__name__": "__main__",
            "__builtins__": builtins,
            "ToolError": ToolError,
            "search_tools": make_search_tools(channel),
            "describe_tool": make_describe_tool(channel),
            **{name: ResourceFunction(self, name, doc) for name, doc in RESOURCE_FUNCTIONS.items()},
            **{name: make_helper_function(self, name) for name in HELPER_FUNCTIONS},
        }

    def sync_catalog(self, catalog):
        """Defines the catalog's functions; on a change, removes the old ones
        unless the snippet has rebound their names."""
        if catalog is None or catalog["version"] == self.catalog_version:
            return
        ns = self.namespace
        for name, function in self.tools.items():
            if ns.get(name) is function:
                del ns[name]
        self.tools = {f["name"]: ToolFunction(self, f["name"], f.get("doc", "")) for f in catalog["functions"]}
        ns.update(self.tools)
        self.catalog_version = catalog["version"]

    def wants_future(self, frame):
        """Whether the call the frame is making hands its value to the event
        loop (awaited, gathered, scheduled), as the gateway found in the
        snippet's syntax tree. Calls in code it did not analyse: a future."""
        sites = self.future_calls.get(frame.f_code.co_filename)
        if sites is None:
            return True
        position = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None), None)
        return position is not None and (position[0], position[2]) in sites

    def forget_sources(self):
        for filename in self.files:
            linecache.cache.pop(filename, None)


class Worker:
    def __init__(self, channel):
        self.channel = channel
        self.catalog = None
        self.sessions = {}
        self.lock = threading.Lock()
        self.runs = itertools.count(1)

    def session(self, name):
        with self.lock:
            session = self.sessions.get(name)
            if session is None:
                session = self.sessions[name] = Session(name, self.channel)
            return session

    def on_request(self, message):
        request_id, method, params = message.get("id"), message.get("method"), message.get("params")
        try:
            if method == "run":
                params = check_run_params(params)
                if params["catalog"] is not None:
                    self.catalog = params["catalog"]
                catalog = self.catalog
                thread = threading.Thread(
                    target=self.run_and_reply, args=(request_id, params, catalog), name="codemcp-run", daemon=True
                )
                thread.start()
            elif method == "reset":
                if not isinstance(params, dict) or not isinstance(params.get("session"), str):
                    raise RpcError(BAD_ARGUMENTS, "reset needs params {session: str}")
                with self.lock:
                    session = self.sessions.pop(params["session"], None)
                if session is not None:
                    session.forget_sources()
                self.reply(request_id, {})
            else:
                raise RpcError(METHOD_NOT_FOUND, f"unknown method '{method}'")
        except RpcError as e:
            self.reply_error(request_id, e.code, e.message)

    def reply(self, request_id, result):
        if request_id is not None:
            self.channel.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def reply_error(self, request_id, code, message):
        if request_id is not None:
            self.channel.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def run_and_reply(self, request_id, params, catalog):
        try:
            session = self.session(params["session"])
            with session.lock:
                result = run(session, params, catalog, f"<snippet {next(self.runs)}>")
            result = fit_in_a_frame(result)
        except Exception as e:  # a bug of ours, not the snippet's
            self.reply_error(request_id, INTERNAL_ERROR, f"worker failure: {type(e).__name__}: {e}")
            return
        self.reply(request_id, result)


def fit_in_a_frame(result):
    """A value too big for one frame would end the connection (and the worker
    with it): it becomes a clear error instead. Saved variables that do not
    fit beside the value are left out (the gateway says they were not saved)."""
    room = MAX_FRAME_BYTES - 4096 - len((result["stdout"] + result["stderr"]).encode("utf-8", "surrogatepass"))
    if result.get("globals") is not None:
        room -= result["globals_bytes"]
    if result["result"] is None:
        return result
    size = len(json_dumps(result["result"], ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size <= room:
        return result
    if result.get("globals") is not None and size <= room + result["globals_bytes"]:
        return {**result, "globals": None}
    message = f"the result is {size} bytes as JSON, more than a worker can send (CODEMCP_MAX_RESULT_BYTES is the limit)"
    return {**result, "result": None, "error": {"type": "ValueError", "message": message, "traceback": ""}}


def check_run_params(params):
    def bad(why):
        return RpcError(BAD_ARGUMENTS, f"run params: {why}")

    if not isinstance(params, dict):
        raise bad("expected an object")
    for key, kind in (("session", str), ("code", str), ("timeout_ms", int), ("max_output_bytes", int)):
        if not isinstance(params.get(key), kind) or isinstance(params.get(key), bool):
            raise bad(f"'{key}' must be {kind.__name__}")
    catalog = params.get("catalog")
    if catalog is not None:
        if not isinstance(catalog, dict) or not isinstance(catalog.get("version"), int):
            raise bad("'catalog' must be null or {version: int, functions: [...]}")
        functions = catalog.get("functions")
        if not isinstance(functions, list) or not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in functions):
            raise bad("'catalog.functions' must be a list of {name: str, doc: str}")
    seeds = params.get("globals")
    if seeds is not None and not isinstance(seeds, dict):
        raise bad("'globals' must be null or an object")
    limit = params.get("return_globals")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise bad("'return_globals' must be null or a byte count")
    sites = params.get("future_calls")
    if sites is not None and not (
        isinstance(sites, list)
        and all(isinstance(s, list) and len(s) == 2 and all(isinstance(n, int) and not isinstance(n, bool) for n in s) for s in sites)
    ):
        raise bad("'future_calls' must be null or a list of [line, column]")
    return {**params, "catalog": catalog, "globals": seeds, "return_globals": limit, "future_calls": sites}


# ---------------------------------------------------------------- running a snippet


def run(session, params, catalog, filename):
    capture = Capture(max(params["max_output_bytes"], 0))
    _capture.set(capture)
    session.tool_calls = 0
    value, error, unavailable = None, None, None
    try:
        session.sync_catalog(catalog)
        session.namespace.update(params["globals"] or {})
        # Each run shows its warnings, as a fresh script would.
        session.namespace.pop("__warningregistry__", None)
        if params["future_calls"] is not None:
            session.future_calls[filename] = {tuple(site) for site in params["future_calls"]}
        value = execute(session, params["code"], filename)
        value = to_json(value)
    except NotJson as e:
        # The run succeeded; only its value cannot travel.
        value, unavailable = None, str(e)
    except BaseException as e:  # SystemExit too: the worker keeps serving
        value, error = None, describe_exception(e)
    finally:
        _capture.set(None)
        install_streams()  # in case the snippet replaced sys.stdout
    stdout, stderr, truncated = capture.finish()
    result = {
        "stdout": stdout,
        "stderr": stderr,
        "result": value,
        "result_unavailable": unavailable,
        "error": error,
        "truncated": truncated,
        "tool_calls": session.tool_calls,
    }
    if params["return_globals"] is not None:
        result["globals"], result["globals_bytes"] = export_globals(session.namespace, params["return_globals"])
    return result


def export_globals(namespace, limit):
    """The session's variables whose values JSON holds exactly, for the
    gateway to save; `(None, size)` when they are more than `limit` bytes."""
    saved = {name: value for name, value in namespace.items() if not name.startswith("__") and exact_json(value)}
    try:
        text = json_dumps(saved, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None, 0
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > min(limit, MAX_FRAME_BYTES // 4):
        return None, size
    return json.loads(text), size


def exact_json(value, depth=0):
    """Whether `value` comes back from JSON as it is (tuples as lists)."""
    if depth > MAX_JSON_DEPTH:
        return False
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, (list, tuple)):
        return all(exact_json(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and exact_json(item, depth + 1) for key, item in value.items())
    return False


# ---------------------------------------------------------------- recursion limit

# The recursion limit is the interpreter's, shared by every thread: a snippet
# that lowers it (`sys.setrecursionlimit(10)`) must not starve the worker's own
# frames (its event loop, the run thread). So every snippet runs exactly this
# many frames deep, and the limit a snippet sets or reads is relative to that
# depth: the snippet gets the frames it asked for, as in a plain CPython, and
# the worker keeps this many for itself.
SNIPPET_BASE_DEPTH = 200
DEFAULT_RECURSION_LIMIT = sys.getrecursionlimit()
_setrecursionlimit = sys.setrecursionlimit
_getrecursionlimit = sys.getrecursionlimit


def snippet_setrecursionlimit(limit, /):
    if not isinstance(limit, int):
        raise TypeError(f"'{type(limit).__name__}' object cannot be interpreted as an integer")
    if limit < 1:
        raise ValueError("recursion limit must be greater or equal than 1")
    _setrecursionlimit(limit + SNIPPET_BASE_DEPTH)
    session = _session.get()
    if session is not None:
        session.recursion_limit = limit


def snippet_getrecursionlimit():
    return max(_getrecursionlimit() - SNIPPET_BASE_DEPTH, 1)


snippet_setrecursionlimit.__doc__ = sys.setrecursionlimit.__doc__
snippet_getrecursionlimit.__doc__ = sys.getrecursionlimit.__doc__
_session = contextvars.ContextVar("codemcp_session", default=None)


def install_recursion_limit():
    """Snippets `import sys` themselves: the module's functions are replaced."""
    sys.setrecursionlimit = snippet_setrecursionlimit
    sys.getrecursionlimit = snippet_getrecursionlimit
    _setrecursionlimit(DEFAULT_RECURSION_LIMIT + SNIPPET_BASE_DEPTH)


def frame_depth():
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def at_base_depth(call):
    """`call()` with its frame SNIPPET_BASE_DEPTH deep, so the snippet's
    module frame is one deeper, as a script's is 1 deep in a plain CPython."""
    return pad(SNIPPET_BASE_DEPTH - 1 - frame_depth(), call)


def pad(frames, call):
    if frames <= 0:
        return call()
    return pad(frames - 1, call)


WORKER_HEADROOM = 100


def with_headroom(call, *args):
    """Worker code a snippet calls (a tool call) gets frames beyond the
    snippet's own limit: a snippet at `setrecursionlimit(10)` can still call a
    tool, which is one call in its code."""
    before = _getrecursionlimit()
    needed = frame_depth() + WORKER_HEADROOM
    if before >= needed:
        return call(*args)
    _setrecursionlimit(needed)
    try:
        return call(*args)
    finally:
        _setrecursionlimit(before)


def with_session_limit(session, call):
    """Runs `call` under the session's own limit (kept across its runs, as
    in one CPython), then gives the worker its default back."""
    _session.set(session)
    _setrecursionlimit((session.recursion_limit or DEFAULT_RECURSION_LIMIT) + SNIPPET_BASE_DEPTH)
    try:
        return at_base_depth(call)
    finally:
        _setrecursionlimit(DEFAULT_RECURSION_LIMIT + SNIPPET_BASE_DEPTH)


def execute(session, code, filename):
    ns = session.namespace
    # Tracebacks, inspect and the compiler's SyntaxWarnings read the
    # snippet's lines from linecache.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    session.files.append(filename)
    tree = ast.parse(code, filename, "exec")
    ends_on_expression = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    if ends_on_expression:
        last = tree.body[-1]
        target = ast.Name(id=LAST_VALUE, ctx=ast.Store())
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
        ast.fix_missing_locations(tree)
    compiled = compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    ns.pop(LAST_VALUE, None)
    if compiled.co_flags & inspect.CO_COROUTINE:
        with_session_limit(session, lambda: run_coroutine(eval(compiled, ns)))
    else:
        with_session_limit(session, lambda: exec(compiled, ns))
    value = ns.pop(LAST_VALUE, None)
    # As in the Monty engine (src/exec/monty/driver.rs): a snippet that ends
    # without a value but mentions `result` returns that variable.
    if value is None and mentions_result(code):
        value = ns.get("result")
    return value


def run_coroutine(coroutine):
    """Like asyncio.run, on a fresh loop in this run's thread."""
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(coroutine)
    finally:
        try:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def mentions_result(code):
    start = 0
    while (i := code.find("result", start)) >= 0:
        start = i + 1
        before = code[i - 1] if i > 0 else ""
        after = code[i + 6] if i + 6 < len(code) else ""
        if not is_ident_char(before) and not is_ident_char(after):
            return True
    return False


def is_ident_char(c):
    return c.isalnum() or c == "_"


def describe_exception(exc):
    if isinstance(exc, SyntaxError) and not snippet_frames(exc):
        message = f"{exc.msg} (line {exc.lineno})" if exc.lineno else str(exc.msg)
        text = (exc.text or "").strip()
        trace = f"  line {exc.lineno}\n" + (f"    {text}\n" if text else "") if exc.lineno else ""
        return {"type": type(exc).__name__, "message": message, "traceback": trace}
    try:
        message = str(exc)
    except Exception:
        message = f"<{type(exc).__name__} whose str() failed>"
    trace = format_frames(snippet_frames(exc))
    return {"type": type(exc).__name__, "message": message, "traceback": trace}


def format_frames(frames):
    """Frames as `  line N, in NAME\n    SOURCE\n`, kept short: runs of one
    repeated frame are folded as CPython does, and a deep stack keeps only its
    outermost and innermost frames."""
    entries, previous, repeats = [], None, 0

    def fold():
        if repeats > RECURSIVE_CUTOFF:
            entries.append(f"  [Previous line repeated {repeats - RECURSIVE_CUTOFF} more times]\n")

    for frame in frames:
        key = (frame.filename, frame.lineno, frame.name)
        if key != previous:
            fold()
            previous, repeats = key, 0
        repeats += 1
        if repeats <= RECURSIVE_CUTOFF:
            entries.append(f"  line {frame.lineno}, in {frame.name}\n" + (f"    {frame.line}\n" if frame.line else ""))
    fold()
    if len(entries) > MAX_TRACE_ENTRIES:
        omitted = len(entries) - MAX_TRACE_ENTRIES
        head, tail = MAX_TRACE_ENTRIES // 4, MAX_TRACE_ENTRIES - MAX_TRACE_ENTRIES // 4
        entries = entries[:head] + [f"  [{omitted} more frames]\n"] + entries[-tail:]
    return "".join(entries)


def snippet_frames(exc):
    """The frames of snippet code only, innermost last."""
    frames = traceback.extract_tb(exc.__traceback__)
    return [f for f in frames if f.filename.startswith("<snippet ")]


# ---------------------------------------------------------------- main


def control_socket():
    """The socket the gateway handed in (`CODEMCP_CONTROL_FD`), else None: dial the URL."""
    fd = os.environ.pop("CODEMCP_CONTROL_FD", None)
    if not fd:
        return None
    return socket.socket(fileno=int(fd))


def limit_processes():
    """`CODEMCP_WORKER_NPROC`: at most this many processes and threads, set
    before any snippet runs. Inside the sandbox's own user namespace the
    kernel counts them for this sandbox alone (see worker/PROTOCOL.md)."""
    limit = os.environ.pop("CODEMCP_WORKER_NPROC", None)
    if limit:
        import resource
        n = int(limit)
        resource.setrlimit(resource.RLIMIT_NPROC, (n, n))


async def serve(url, token):
    try:
        ws = await connect(
            url,
            sock=control_socket(),
            proxy=None,  # websockets >= 15 would otherwise honour *_PROXY variables
            compression=None,
            ping_interval=None,  # liveness is the gateway's job: it watches the process
            max_size=MAX_FRAME_BYTES,
            open_timeout=10,
        )
    except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as e:
        log(f"cannot connect to {url}: {e}")
        return 1
    channel = Channel(ws, asyncio.get_running_loop())
    worker = Worker(channel)
    await ws.send(token)
    writer = asyncio.create_task(channel.write_forever())
    try:
        async for text in ws:
            dispatch(worker, channel, text)
    except websockets.exceptions.ConnectionClosed:
        pass
    finally:
        writer.cancel()
    return 0


def dispatch(worker, channel, text):
    try:
        message = json_loads(text)
    except (TypeError, ValueError):
        log("ignored a frame that is not JSON")
        return
    if not isinstance(message, dict):
        return
    if "method" in message:
        worker.on_request(message)
    elif "id" in message:
        channel.on_reply(message)


def main():
    url = os.environ.get("CODEMCP_CONTROL_URL")
    # Snippets need not see it (it is single-use, so this is only tidiness).
    token = os.environ.pop("CODEMCP_WORKER_TOKEN", None)
    if not url or not token:
        log("CODEMCP_CONTROL_URL and CODEMCP_WORKER_TOKEN must be set (the gateway starts this worker)")
        sys.exit(2)
    try:
        limit_processes()
    except (ValueError, OSError) as e:
        log(f"cannot set CODEMCP_WORKER_NPROC: {e}")
        sys.exit(2)
    install_streams()
    install_recursion_limit()
    code = asyncio.run(serve(url, token))
    # Snippet threads may still be running (or non-daemon): leave at once.
    sys.__stderr__.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
