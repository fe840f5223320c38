"""Tests of the CPython worker against a fake gateway.

Run with a Python that has `websockets` (see PROTOCOL.md for the pinned
version):  python3 worker/test_bootstrap.py
The fake gateway listens on 127.0.0.1:0 only; each worker is a subprocess.
"""

import asyncio
import json
import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

try:
    from websockets.asyncio.server import serve, unix_serve
    from websockets.exceptions import ConnectionClosed
except ImportError:
    sys.exit("worker tests need websockets: python3 -m pip install websockets==17.4 (see PROTOCOL.md)")

HERE = Path(__file__).resolve().parent
BOOTSTRAP = HERE / "bootstrap.py"
GOLDEN = HERE / "golden"
WAIT = 10


def golden(name):
    return json.loads((GOLDEN / f"{name}.json").read_text())


class Rpc(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


async def add(args, kwargs):
    a, b = args if args else (kwargs["a"], kwargs["b"])
    return a + b


async def slow_echo(args, kwargs):
    await asyncio.sleep(0.2)
    return args[0] if args else kwargs["x"]


async def broken(args, kwargs):
    raise Rpc(-32000, "upstream exploded: disk full")


async def strict(args, kwargs):
    raise Rpc(-32602, "strict_tool() missing required argument 'x'")


async def echo(args, kwargs):
    return {"args": args, "kwargs": kwargs}


CANNED_TOOLS = {"math_add": add, "slow_echo": slow_echo, "broken_tool": broken, "strict_tool": strict, "echo": echo}
CATALOG = {"version": 1, "functions": [{"name": n, "doc": f"{n}(...)"} for n in CANNED_TOOLS]}


class Connection:
    """One worker's authenticated connection, as the gateway sees it."""

    def __init__(self, gateway, ws):
        self.gateway = gateway
        self.ws = ws
        self.pending = {}
        self.next_id = 1
        self.received = []  # every frame from the worker, parsed
        self.in_flight = 0
        self.max_in_flight = 0
        # Replaces the canned answers: message -> reply frame (or None).
        self.responder = None
        self.catalog_sent = False

    async def serve(self):
        try:
            async for text in self.ws:
                message = json.loads(text)
                self.received.append(message)
                if "method" in message:
                    asyncio.get_running_loop().create_task(self.answer(message))
                elif message.get("id") in self.pending:
                    self.pending.pop(message["id"]).set_result(message)
        except ConnectionClosed:
            pass  # a test ended the worker

    async def answer(self, message):
        if self.responder is not None:
            reply = self.responder(message)
        else:
            reply = await self.canned(message)
        if reply is not None:
            await self.ws.send(json.dumps(reply))

    async def canned(self, message):
        frame = {"jsonrpc": "2.0", "id": message["id"]}
        method, params = message["method"], message["params"]
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if method == "call_tool":
                frame["result"] = {"value": await CANNED_TOOLS[params["name"]](params["args"], params["kwargs"])}
            elif method == "search_tools":
                frame["result"] = [{"name": "math_add", "signature": "math_add(a: int, b: int) -> int", "summary": "Adds."}]
            elif method == "describe_tool":
                if params["name"] not in CANNED_TOOLS:
                    raise Rpc(-32000, f"no tool named '{params['name']}'")
                frame["result"] = {"name": params["name"]}
            else:
                raise Rpc(-32601, f"unknown method '{method}'")
        except Rpc as e:
            frame["error"] = {"code": e.code, "message": e.message}
        finally:
            self.in_flight -= 1
        return frame

    async def _request(self, frame):
        future = asyncio.get_running_loop().create_future()
        self.pending[frame["id"]] = future
        await self.ws.send(json.dumps(frame))
        return await future

    def request(self, frame, timeout=WAIT):
        """Sends a frame from the test thread and waits for its reply."""
        return self.gateway.call(self._request(frame), timeout)

    def start(self, frame):
        """Sends a frame; the returned concurrent future gets its reply."""
        return asyncio.run_coroutine_threadsafe(self._request(frame), self.gateway.loop)

    def run(self, code, session="s", max_output_bytes=1 << 20, globals=None, timeout=WAIT, future_calls=None):
        frame = self.run_frame(code, session, max_output_bytes, globals)
        if future_calls is not None:
            frame["params"]["future_calls"] = future_calls
        reply = self.request(frame, timeout)
        self.gateway.test.assertIn("result", reply, reply)
        return reply["result"]

    def run_frame(self, code, session="s", max_output_bytes=1 << 20, globals=None):
        catalog = None if self.catalog_sent else CATALOG
        self.catalog_sent = True
        self.next_id += 1
        params = {"session": session, "code": code, "timeout_ms": 30000, "max_output_bytes": max_output_bytes, "catalog": catalog, "globals": globals}
        return {"jsonrpc": "2.0", "id": self.next_id, "method": "run", "params": params}


class Gateway:
    """A fake gateway: a websockets server on 127.0.0.1:0 in its own thread."""

    def __init__(self, test, token="right-token"):
        self.test = test
        self.token = token
        self.first_frames = []
        self.connections = queue.Queue()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = self.call(self.listen())
        self.url = f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/"
        self.workers = []

    async def listen(self):
        return await serve(self.handle, "127.0.0.1", 0)

    def call(self, coroutine, timeout=WAIT):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def handle(self, ws):
        first = await ws.recv()
        self.first_frames.append(first)
        if first != self.token:
            await ws.close(1008, "wrong token")
            return
        connection = Connection(self, ws)
        self.connections.put(connection)
        await connection.serve()

    def spawn(self, token=None, env=None):
        base = {k: v for k, v in os.environ.items() if not k.startswith("CODEMCP_")}
        base.update(CODEMCP_CONTROL_URL=self.url, CODEMCP_WORKER_TOKEN=token or self.token)
        base.update(env or {})
        proc = subprocess.Popen([sys.executable, str(BOOTSTRAP)], env=base, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.workers.append(proc)
        return proc

    def worker(self):
        """Starts a worker and returns its connection."""
        self.spawn()
        return self.connections.get(timeout=WAIT)

    def close(self):
        """Closes the server; every worker must then exit 0 on its own."""
        self.server.close()
        self.call(self.server.wait_closed())
        codes = []  # (exit code, stderr) of each worker
        for proc in self.workers:
            try:
                _, stderr = proc.communicate(timeout=WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, stderr = proc.communicate(timeout=WAIT)
            codes.append((proc.returncode, stderr.decode(errors="replace")))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)
        self.loop.close()
        return codes


class Startup(unittest.TestCase):
    def test_missing_environment_exits_2_with_a_message(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CODEMCP_")}
        done = subprocess.run([sys.executable, str(BOOTSTRAP)], env=env, capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(done.returncode, 2)
        self.assertIn("CODEMCP_CONTROL_URL", done.stderr)

    def test_the_first_frame_is_the_token_and_a_wrong_one_is_refused(self):
        gateway = Gateway(self)
        try:
            proc = gateway.spawn(token="wrong-token")
            self.assertEqual(proc.wait(WAIT), 0, "a closed connection ends the worker with 0")
            self.assertEqual(gateway.first_frames, ["wrong-token"])
            self.assertTrue(gateway.connections.empty())
            gateway.worker()
            self.assertEqual(gateway.first_frames, ["wrong-token", "right-token"])
        finally:
            gateway.close()

    def test_the_worker_exits_0_when_the_connection_closes(self):
        gateway = Gateway(self)
        try:
            connection = gateway.worker()
            gateway.call(connection.ws.close())
            self.assertEqual(gateway.workers[0].wait(WAIT), 0)
        finally:
            gateway.close()


class HandedInSocket(unittest.TestCase):
    """A sandboxed worker is handed its end of a socket (`CODEMCP_CONTROL_FD`)
    and speaks WebSocket over it: it must not dial the URL, which names no host."""

    def test_a_worker_handed_a_socket_connects_over_it_not_the_url(self):
        gateway = Gateway(self)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "control.sock")
            async def listen():
                return await unix_serve(gateway.handle, path)

            server = gateway.call(listen())
            ours = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ours.connect(path)
            try:
                env = {k: v for k, v in os.environ.items() if not k.startswith("CODEMCP_")}
                env.update(
                    CODEMCP_CONTROL_URL="ws://codemcp-worker.invalid/",
                    CODEMCP_CONTROL_FD=str(ours.fileno()),
                    CODEMCP_WORKER_TOKEN=gateway.token,
                )
                proc = subprocess.Popen(
                    [sys.executable, str(BOOTSTRAP)], env=env, pass_fds=[ours.fileno()],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                )
                gateway.workers.append(proc)
                ours.close()  # the worker holds its copy
                connection = gateway.connections.get(timeout=WAIT)
                self.assertEqual(gateway.first_frames, [gateway.token])
                reply = connection.run("print('over the socket')")
                self.assertEqual(reply["stdout"], "over the socket\n")
            finally:
                server.close()
                codes = gateway.close()
        self.assertEqual([code for code, _ in codes], [0])


class Golden(unittest.TestCase):
    def test_every_golden_is_a_jsonrpc_message_documented_in_protocol_md(self):
        protocol = (HERE / "PROTOCOL.md").read_text()
        documented = {
            name: json.loads(block)
            for name, block in re.findall(r"`golden/(\w+)\.json`[^\n]*\n+```json\n(.*?)\n```", protocol, re.S)
        }
        files = sorted(GOLDEN.glob("*.json"))
        self.assertGreaterEqual(len(files), 10)
        for path in files:
            message = json.loads(path.read_text())
            self.assertEqual(message.get("jsonrpc"), "2.0", path.name)
            # What the gateway's serde `Frame` round-trips: no other fields, no top-level nulls.
            self.assertLessEqual(set(message), {"jsonrpc", "id", "method", "params", "result", "error"}, path.name)
            self.assertNotIn(None, message.values(), path.name)
            self.assertIn("id", message, path.name)
            self.assertEqual(len({"method", "result", "error"} & message.keys()), 1, path.name)
            if "error" in message:
                self.assertEqual(set(message["error"]), {"code", "message"}, path.name)
            self.assertEqual(documented.get(path.stem), message, f"PROTOCOL.md shows {path.name} verbatim")
        self.assertEqual(set(documented), {p.stem for p in files})

    def test_a_fresh_worker_replays_the_golden_conversation(self):
        gateway = Gateway(self)
        try:
            self.replay(gateway.worker())
        finally:
            ended = gateway.close()
        self.assertEqual(ended, [(0, "")], "the worker exits 0, quietly, when the gateway goes away")

    def replay(self, connection):
        goldens = {p.stem: json.loads(p.read_text()) for p in GOLDEN.glob("*.json")}
        connection.responder = lambda m: goldens["call_tool_result"]
        self.assertEqual(connection.request(goldens["run_request"]), goldens["run_result_ok"])
        self.assertEqual(connection.received[0], goldens["call_tool_request"])
        self.assertEqual(connection.request(goldens["run_request_next"]), goldens["run_result_error"])

        replies = iter(["call_tool_error", "call_tool_bad_arguments", "search_tools_result", "describe_tool_result", "describe_tool_error"])
        connection.responder = lambda m: goldens[next(replies)]
        code = (
            "out = []\n"
            "try:\n    weather_get_forecast('Atlantis')\nexcept ToolError as e:\n    out.append(['ToolError', str(e), e.tool, e.server])\n"
            "try:\n    weather_get_forecast()\nexcept TypeError as e:\n    out.append(['TypeError', str(e)])\n"
            "out.append(search_tools('forecast')[0]['name'])\n"
            "out.append(describe_tool('weather_get_forecast')['read_only'])\n"
            "try:\n    describe_tool('weather_get_forcast')\nexcept KeyError as e:\n    out.append(['KeyError', e.args[0]])\n"
            "out\n"
        )
        frame = {"jsonrpc": "2.0", "id": 20, "method": "run", "params": {**goldens["run_request_next"]["params"], "code": code}}
        reply = connection.request(frame)
        self.assertEqual(reply["result"]["error"], None, reply)
        self.assertEqual(
            reply["result"]["result"],
            [
                ["ToolError", "weather: no forecast for 'Atlantis'", "weather_get_forecast", ""],
                ["TypeError", "weather_get_forecast() missing required argument 'city'"],
                "weather_get_forecast",
                True,
                ["KeyError", "no tool named 'weather_get_forcast'; search_tools(query) lists the available ones"],
            ],
        )
        self.assertEqual(reply["result"]["tool_calls"], 2)
        by_id = {m["id"]: m for m in connection.received if "method" in m}
        self.assertEqual(by_id["w4"], goldens["search_tools_request"])
        self.assertEqual(by_id["w5"], goldens["describe_tool_request"])

        replies = iter(["read_resource_result", "get_prompt_error"])
        connection.responder = lambda m: goldens[next(replies)]
        code = (
            "doc = read_resource('docs', 'docs://guide/intro.md')\n"
            "try:\n    get_prompt('weather', 'forecast-summary', city='Oslo')\n"
            "except ToolError as e:\n    err = [str(e), e.tool]\n"
            "[doc, err]\n"
        )
        frame = {"jsonrpc": "2.0", "id": 22, "method": "run", "params": {**goldens["run_request_next"]["params"], "code": code}}
        reply = connection.request(frame)["result"]
        self.assertEqual(reply["error"], None, reply)
        message = goldens["get_prompt_error"]["error"]["message"]
        self.assertEqual(reply["result"], [goldens["read_resource_result"]["result"]["value"], [message, "get_prompt"]])
        self.assertEqual(reply["tool_calls"], 2, "resource and prompt calls count as calls")
        by_id = {m["id"]: m for m in connection.received if "method" in m}
        self.assertEqual(by_id["w7"], goldens["read_resource_request"])
        self.assertEqual(by_id["w8"], goldens["get_prompt_request"])

        self.assertEqual(connection.request(goldens["reset_request"]), goldens["reset_result"])
        after = connection.request({**goldens["run_request_next"], "id": 21})["result"]
        self.assertEqual(after["error"]["type"], "NameError", "reset dropped the namespace")
        self.assertEqual(connection.request(goldens["run_request_chatty"]), goldens["run_result_truncated"])
        unknown = {"jsonrpc": "2.0", "id": 11, "method": "ping", "params": {}}
        self.assertEqual(connection.request(unknown), goldens["unknown_method_error"])


class Contract(unittest.TestCase):
    """The calling contract, on one shared worker (a session per test)."""

    @classmethod
    def setUpClass(cls):
        cls.gateway = Gateway(cls)
        cls.connection = cls.gateway.worker()

    @classmethod
    def tearDownClass(cls):
        ended = cls.gateway.close()
        if ended != [(0, "")]:
            raise AssertionError(f"the shared worker ended with {ended}")

    def setUp(self):
        self.gateway.test = self

    def run_ok(self, code, session, **kw):
        out = self.connection.run(code, session=session, **kw)
        self.assertIsNone(out["error"], out)
        return out

    def test_print_and_last_expression(self):
        out = self.run_ok("print('hello', 1)\nimport sys\nprint('oops', file=sys.stderr)\nx = 20\nx + 1", "print")
        expected = {"stdout": "hello 1\n", "stderr": "oops\n", "result": 21, "result_unavailable": None, "error": None, "truncated": False, "tool_calls": 0}
        self.assertEqual(out, expected)

    def test_warnings_go_to_stderr_once_per_run(self):
        code = "import warnings\nwarnings.warn('careful')\nprint('done')"
        for _ in range(2):
            out = self.run_ok(code, "warn")
            self.assertEqual(out["stdout"], "done\n")
            self.assertEqual(out["stderr"], "<snippet>:2: UserWarning: careful\n  warnings.warn('careful')\n")
        out = self.run_ok("x = 1\nx is 1", "warn")
        self.assertTrue(out["stderr"].startswith("<snippet>:2: SyntaxWarning: \"is\" with "), out)
        self.assertTrue(out["stderr"].endswith("\n  x is 1\n"), out)
        self.assertEqual((out["stdout"], out["result"]), ("", True))

    def test_a_result_too_big_for_one_frame_is_an_error_and_the_worker_stays(self):
        out = self.connection.run("'x' * (70 * 1024 * 1024)", session="huge")
        self.assertIsNone(out["result"])
        self.assertEqual(out["error"]["type"], "ValueError", out["error"])
        self.assertIn("CODEMCP_MAX_RESULT_BYTES", out["error"]["message"])
        self.assertEqual(self.run_ok("40 + 2", "huge")["result"], 42)

    def test_result_variable(self):
        self.assertEqual(self.run_ok("result = {'a': (1, 2)}\nfor i in range(3):\n    pass", "resvar")["result"], {"a": [1, 2]})
        # As in Monty: a snippet ending on print() still returns the `result` it set.
        self.assertEqual(self.run_ok("result = 5\nprint(result)", "resvar")["result"], 5)
        self.assertEqual(self.run_ok("y = 3", "resvar2")["result"], None)

    def test_sessions_persist_and_are_isolated(self):
        self.run_ok("import math\ncount = 1\ndef bump():\n    global count\n    count += 1\n    return count", "persist-a")
        self.assertEqual(self.run_ok("bump(); bump()", "persist-a")["result"], 3)
        self.assertEqual(self.run_ok("math.floor(2.5)", "persist-a")["result"], 2)
        other = self.connection.run("count", session="persist-b")
        self.assertEqual(other["error"]["type"], "NameError")
        self.assertIn("count", other["error"]["message"])

    def test_sync_tool_call(self):
        out = self.run_ok("a = math_add(2, 3)\nb = math_add(a=a, b=10)\nprint(a)\n[a, b, echo(1, (2, 3), k={'x'})]", "sync")
        self.assertEqual(out["result"], [5, 15, {"args": [1, [2, 3]], "kwargs": {"k": ["x"]}}])
        self.assertEqual((out["stdout"], out["tool_calls"]), ("5\n", 3))

    def test_a_low_recursion_limit_counts_only_the_snippets_frames(self):
        # The worker's event loop still answers a tool call under the snippet's limit.
        code = (
            "import sys\nsys.setrecursionlimit(10)\ndef f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
            "deep = None\ntry:\n    f(50)\nexcept RecursionError:\n    deep = 'RecursionError'\n"
            "[sys.getrecursionlimit(), f(5), deep, math_add(2, 3)]"
        )
        self.assertEqual(self.run_ok(code, "recursion")["result"], [10, 5, "RecursionError", 5])
        self.assertEqual(self.run_ok("import sys\nsys.getrecursionlimit()", "recursion")["result"], 10)
        self.assertEqual(self.run_ok("import sys\nsys.getrecursionlimit()", "recursion-other")["result"], 1000)

    def test_gather_runs_three_calls_concurrently(self):
        code = "import asyncio\nawait asyncio.gather(slow_echo(1), slow_echo(x=2), slow_echo(3))"
        started = time.monotonic()
        out = self.run_ok(code, "gather")
        elapsed = time.monotonic() - started
        self.assertEqual(out["result"], [1, 2, 3])
        self.assertEqual(out["tool_calls"], 3)
        self.assertLess(elapsed, 0.45, "three 200 ms calls overlapped")
        self.assertGreaterEqual(self.connection.max_in_flight, 3)
        self.assertEqual(self.run_ok("v = await slow_echo('one')\nv", "gather")["result"], "one")

    def test_the_gateways_call_sites_decide_what_a_call_returns_in_async_code(self):
        # Line 2's call is plain (its value), line 3's are gathered (futures):
        # positions as the gateway sends them, line and byte column.
        code = (
            "import asyncio\nasync def pair(x):\n    return x, slow_echo(x).upper()\n"
            "await asyncio.gather(pair('a'), slow_echo('b'))"
        )
        out = self.run_ok(code, "sites", future_calls=[[4, 32]])
        self.assertEqual(out["result"], [["a", "A"], "b"])
        # A later snippet calls the function: its snippet's decisions hold.
        out = self.run_ok("await asyncio.gather(pair('c'))", "sites", future_calls=[])
        self.assertEqual(out["result"], [["c", "C"]])

    def test_tool_error_is_a_catchable_runtime_error(self):
        code = (
            "try:\n    broken_tool()\nexcept ToolError as e:\n    caught = [str(e), e.tool, e.server, isinstance(e, RuntimeError)]\n"
            "try:\n    broken_tool()\nexcept RuntimeError:\n    caught.append('runtime')\ncaught"
        )
        out = self.run_ok(code, "toolerror")
        self.assertEqual(out["result"], ["upstream exploded: disk full", "broken_tool", "", True, "runtime"])
        uncaught = self.connection.run("x = 1\nbroken_tool()", session="toolerror")["error"]
        self.assertEqual(uncaught["type"], "ToolError")
        self.assertEqual(uncaught["message"], "upstream exploded: disk full")
        self.assertEqual(uncaught["traceback"], "  line 2, in <module>\n    broken_tool()\n")
        bad = self.connection.run("strict_tool()", session="toolerror")["error"]
        self.assertEqual((bad["type"], bad["message"]), ("TypeError", "strict_tool() missing required argument 'x'"))
        awaited = self.connection.run("await broken_tool()", session="toolerror")["error"]
        self.assertEqual(awaited["type"], "ToolError")

    def test_what_monty_lacks_gives_cpythons_answers(self):
        code = """
import collections, dataclasses, enum, statistics

class Shape:
    def area(self): raise NotImplementedError
    def describe(self): return f"{type(self).__name__} {self.area()}"
class Square(Shape):
    def __init__(self, s): self.s = s
    def area(self): return self.s * self.s
class Cube(Square):
    def area(self): return 6 * super().area()

def evens(n):
    for i in range(n):
        if i % 2 == 0:
            yield i

class Color(enum.Enum):
    RED = 1
    GREEN = 2

@dataclasses.dataclass
class Base:
    x: int
    tags: list = dataclasses.field(default_factory=list)
@dataclasses.dataclass
class Point(Base):
    y: int = 0

p = Point(1, y=2)
{
    "shapes": [Square(2).describe(), Cube(2).describe()],
    "gen": list(evens(7)),
    "counter": collections.Counter("abracadabra").most_common(2),
    "stats": [statistics.mean([1, 2, 3, 4]), statistics.median([5, 1, 3]), round(statistics.stdev([2, 4, 4, 4, 5, 5, 7, 9]), 4)],
    "enum": [Color.GREEN.name, Color(1).name, [c.value for c in Color]],
    "dataclass": [p, isinstance(p, Base), repr(p)],
}
"""
        out = self.run_ok(code, "escalated")
        self.assertEqual(
            out["result"],
            {
                "shapes": ["Square 4", "Cube 24"],
                "gen": [0, 2, 4, 6],
                "counter": [["a", 5], ["b", 2]],
                "stats": [2.5, 3, 2.1381],
                "enum": ["GREEN", "RED", [1, 2]],
                "dataclass": [{"x": 1, "tags": [], "y": 2}, True, "Point(x=1, tags=[], y=2)"],
            },
        )

    def test_output_is_capped_with_a_marker(self):
        out = self.run_ok("for i in range(100):\n    print('x' * 10)\n'done'", "cap", max_output_bytes=25)
        self.assertEqual(out["stdout"], "xxxxxxxxxx\nxxxxxxxxxx\nxxx\n[output truncated at 25 bytes]\n")
        self.assertTrue(out["truncated"])
        self.assertEqual(out["result"], "done")
        wide = self.run_ok("print('é' * 10, end='')", "cap", max_output_bytes=5)
        self.assertEqual(wide["stdout"], "éé\n[output truncated at 5 bytes]\n", "never half a character")

    def test_sys_exit_is_reported_and_the_worker_keeps_serving(self):
        self.run_ok("kept = 'yes'", "exit")
        out = self.connection.run("import sys\nprint('bye')\nsys.exit(3)", session="exit")
        self.assertEqual(out["error"]["type"], "SystemExit")
        self.assertEqual(out["error"]["message"], "3")
        self.assertEqual(out["stdout"], "bye\n")
        self.assertEqual(self.connection.run("raise SystemExit", session="exit")["error"]["type"], "SystemExit")
        self.assertEqual(self.run_ok("kept", "exit")["result"], "yes")

    def test_concurrent_runs_of_two_sessions_do_not_cross_talk(self):
        code = "import time, sys\nfor i in range(200):\n    print(TAG, i)\n    sys.stderr.write(f'{TAG} err {i}\\n')\n    if i % 20 == 0:\n        time.sleep(0.002)\nTAG"
        frames = [self.connection.run_frame(code, session=f"talk-{tag}", globals={"TAG": tag}) for tag in ("A", "B")]
        futures = [self.connection.start(frame) for frame in frames]
        replies = [future.result(WAIT)["result"] for future in futures]
        for tag, reply in zip(("A", "B"), replies):
            self.assertEqual(reply["stdout"], "".join(f"{tag} {i}\n" for i in range(200)))
            self.assertEqual(reply["stderr"], "".join(f"{tag} err {i}\n" for i in range(200)))
            self.assertEqual(reply["result"], tag)

    def test_a_blocked_snippet_does_not_block_other_sessions(self):
        slow = self.connection.start(self.connection.run_frame("import time\ntime.sleep(1.5)\n'slow'", session="blocked"))
        started = time.monotonic()
        self.assertEqual(self.run_ok("1 + 1", "unblocked")["result"], 2)
        self.assertEqual(self.run_ok("await slow_echo('io')", "unblocked")["result"], "io")
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual(slow.result(WAIT)["result"]["result"], "slow")

    def test_globals_seed_the_namespace(self):
        out = self.run_ok("total = sum(numbers) + config['offset']\ntotal", "seeded", globals={"numbers": [1, 2, 3], "config": {"offset": 10}})
        self.assertEqual(out["result"], 16)
        self.assertEqual(self.run_ok("numbers.append(4)\nnumbers", "seeded")["result"], [1, 2, 3, 4])

    def saved_globals(self, code, session, limit=1 << 20):
        frame = self.connection.run_frame(code, session)
        frame["params"]["return_globals"] = limit
        reply = self.connection.request(frame)
        self.assertIn("result", reply, reply)
        return reply["result"]

    def test_return_globals_gives_exactly_the_json_variables(self):
        code = "import math\nx = 1\nt = (1, [2.5, None])\nd = {'k': 'v'}\nbig = 2**70\nnan = float('nan')\nkeys = {1: 2}\ndef f(): pass\nobj = object()"
        out = self.saved_globals(code, "export")
        self.assertIsNone(out["error"], out)
        self.assertEqual(out["globals"], {"x": 1, "t": [1, [2.5, None]], "d": {"k": "v"}})
        self.assertEqual(out["globals_bytes"], len(json.dumps(out["globals"])))
        self.assertNotIn("globals", self.run_ok("x", "export"), "only when asked")

    def test_return_globals_over_the_limit_gives_none_and_the_size(self):
        out = self.saved_globals("data = 'x' * 1000", "export-big", limit=100)
        self.assertIsNone(out["globals"])
        self.assertGreater(out["globals_bytes"], 1000)

    def test_a_result_without_json_form_is_said_and_the_run_succeeds(self):
        out = self.run_ok("print('before')\nobject()", "notjson")
        self.assertEqual((out["stdout"], out["result"]), ("before\n", None))
        self.assertEqual(out["result_unavailable"], "a value of type 'object' has no JSON form")
        said = lambda code: self.run_ok(code, "notjson")["result_unavailable"]
        self.assertEqual(said("class Foo:\n    pass\nFoo()"), "a 'Foo' instance has no JSON form")
        self.assertEqual(said("Foo"), "the class 'Foo' has no JSON form")
        self.assertEqual(said("a = [1]\na.append(a)\na"), "the value contains itself (a reference cycle), which JSON cannot hold")
        self.assertEqual(said("x = [1]\n[x, x]"), None, "a shared list is not a cycle")
        self.assertEqual(said("float('nan')"), "float nan (NaN/infinity) has no JSON form")
        self.assertEqual(self.run_ok("((1, 2), {3}, {1: None, None: True})", "notjson")["result"], [[1, 2], [3], {"1": None, "null": True}])

    def test_calls_in_asyncio_run_and_failing_gathers(self):
        code = "import asyncio\nasync def main():\n    return await math_add(1, 2)\nasyncio.run(main())"
        self.assertEqual(self.run_ok(code, "async-edge")["result"], 3)
        failed = self.connection.run("import asyncio\nawait asyncio.gather(slow_echo(1), broken_tool())", session="async-edge")
        self.assertEqual((failed["error"]["type"], failed["tool_calls"]), ("ToolError", 2))
        time.sleep(0.3)  # the abandoned slow_echo's reply arrives after its run ended
        self.assertEqual(self.run_ok("await slow_echo('after')", "async-edge")["result"], "after")
        exited = self.connection.run("import sys\nawait slow_echo(1)\nsys.exit(2)", session="async-edge")["error"]
        self.assertEqual((exited["type"], exited["message"]), ("SystemExit", "2"))
        self.assertEqual(self.run_ok("math_add(1, 2)", "async-edge")["result"], 3, "plain calls are synchronous again")

    def test_lone_surrogates_and_str_enums_are_sent_as_valid_text(self):
        code = "import enum\nclass C(str, enum.Enum):\n    RED = 'red'\nprint('a\\ud800b')\n[echo('x\\udc00'), 'y\\ud800', C.RED]"
        out = self.run_ok(code, "surrogates")
        self.assertEqual(out["stdout"], "a\ufffdb\n")
        self.assertEqual(out["result"], [{"args": ["x\ufffd"], "kwargs": {}}, "y\ufffd", "red"])

    def test_tracebacks_show_only_snippet_frames(self):
        out = self.connection.run("import json\n\ndef load(s):\n    return json.loads(s)\nload('{')", session="trace")
        self.assertEqual(out["error"]["type"], "JSONDecodeError")
        self.assertEqual(out["error"]["traceback"], "  line 5, in <module>\n    load('{')\n  line 4, in load\n    return json.loads(s)\n")
        deep = self.connection.run("def down(n):\n    return down(n + 1)\ndown(0)", session="trace")["error"]
        self.assertEqual(deep["type"], "RecursionError")
        folded = "  line 3, in <module>\n    down(0)\n" + "  line 2, in down\n    return down(n + 1)\n" * 3
        self.assertRegex(deep["traceback"], "^" + re.escape(folded) + r"  \[Previous line repeated \d+ more times\]\n$")
        syntax = self.connection.run("x = (1,\nprint(x)", session="trace")["error"]
        self.assertEqual(syntax["type"], "SyntaxError")
        self.assertIn("line 1", syntax["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
