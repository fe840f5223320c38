#!/usr/bin/env python3
"""floor.py: codemcp's cost against a plain MCP client, one connection per process.

    .deps/py2/bin/python bench/floor.py --codemcp PATH [--node-modules DIR] [--runs 3] [--pairs 3] [-n 200] [...]

latency.py drives several connections from one Python process, so its direct
baseline pays for the others' event-loop work. Here every measured connection
has a client process of its own (`mcp` 2.x, this interpreter), run one after
the other, never two at once:

    direct   node server-everything        a  tools/call get-sum {a: 1, b: 2}
    gateway  codemcp, that server upstream b  execute_python print(1+1)
                                           c  execute_python everything_get_sum(a=1, b=2)
                                           d  execute_python ten sequential everything_get_sum

Each run starts, per protocol mode (`auto`: the gateway speaks 2026-07-28;
`legacy`: both speak initialize), --pairs direct and --pairs gateway clients
in turn, the order alternating; each measures its share of -n. One client
process can be a third faster or slower than the next on a shared VM, so a
run's medians pool several. A child warms up, then measures its cases
round-robin and prints its samples as one JSON line.

Then a traced pass (kept apart, so tracing does not touch the figures above):
a gateway with CODEMCP_LOG=codemcp::timing=trace runs case c, and the spans it
logs to stderr are printed as medians per stage, in microseconds.

Then a raw pass: a, b and c over bare JSON-RPC lines, no client SDK, which
leaves the servers' own cost. Beside them (on by default when the binaries
are known): the same b and c with Monty in worker processes and with a warm
CPython worker.

Exit status: 0 when every call succeeded, 1 when some failed, 2 when a child
could not connect.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency as lt  # noqa: E402 - the checks and the schedule are shared

TARGETS = {"b": 0.9, "c": 1.4, "d": 5.0}  # (x)/(a), issue #16
CHILD_TIMEOUT_S = 300.0
TIMING = "codemcp::timing"


# ---------------------------------------------------------------- the child: one connection


async def child_main(a: argparse.Namespace) -> int:
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = dict(os.environ, **json.loads(a.env))
    if a.kind == "direct":
        params = StdioServerParameters(command=a.node, args=[a.everything, "stdio"], env=env)
        keys = "a"
    else:
        params = StdioServerParameters(command=a.codemcp, args=["--config", a.config], env=env)
        keys = a.cases
    out: dict[str, Any] = {"samples": {k: [] for k in keys}, "errors": {}}
    with open(a.errlog, "a") as errlog:
        # One scope around the connection: its deadline bounds connecting and is lifted afterwards
        # (a fail_after around the connect alone would exit before the contexts it entered).
        with anyio.CancelScope(deadline=anyio.current_time() + 60) as connect_scope:
            try:
                async with Client(stdio_client(params, errlog=errlog), mode=a.mode, cache=None) as client:
                    connect_scope.deadline = float("inf")
                    await measure_one(a, client, keys, out)
            except Exception as e:  # noqa: BLE001
                out = {"fatal": lt.describe(e)}
        if connect_scope.cancelled_caught:
            out = {"fatal": "connecting took longer than 60 s"}
    print(json.dumps(out))
    return 2 if "fatal" in out else 0


async def measure_one(a: argparse.Namespace, client: Any, keys: str, out: dict[str, Any]) -> None:
    out["protocol"] = str(client.protocol_version)
    calls = {
        "a": (lambda: client.call_tool("get-sum", {"a": 1, "b": 2}), lt.check_a),
        "b": (lt.execute(client, lt.CODE_B), lt.check_b),
        "c": (lt.execute(client, lt.CODE_C), lt.check_c),
        "d": (lt.execute(client, lt.CODE_D), lt.check_d),
    }
    cases = {k: lt.Case(k, k, *calls[k]) for k in keys}
    for _ in range(a.warmup):
        for c in cases.values():
            await c.run(record=False)
    n_d = a.n_d if "d" in keys else 0
    main = "".join(k for k in keys if k != "d")
    for step in lt.schedule(a.n if main else 0, n_d, main):
        for k in step:
            await cases[k].run(record=True)
    for k, c in cases.items():
        out["samples"][k] = c.samples_ms
        if c.errors:
            out["errors"][k] = c.errors[:3] + [f"... {len(c.errors)} in all"]


# ---------------------------------------------------------------- the parent


class Bench:
    def __init__(self, a: argparse.Namespace, tmp: Path):
        self.a = a
        self.tmp = tmp
        self.node = shutil.which("node") or "node"
        self.everything = str(Path(a.node_modules) / lt.EVERYTHING)
        self.config = tmp / "config.json"
        self.config.write_text(json.dumps({"mcpServers": {"everything": {"command": self.node, "args": [self.everything, "stdio"]}}}))
        self.errlog = tmp / "stderr.log"
        self.failed = 0
        self.fatal = False

    def child(self, kind: str, mode: str, cases: str = "", env: dict[str, str] | None = None,
              errlog: Path | None = None, n: int | None = None, n_d: int | None = None) -> dict[str, Any]:
        a = self.a
        env = {"CODEMCP_LOG": "warn"} | (env or {})
        cmd = [sys.executable, __file__, "--child", kind, "--mode", mode, "--cases", cases,
               "--codemcp", a.codemcp, "--node-modules", a.node_modules, "--node", self.node,
               "--everything", self.everything, "--config", str(self.config),
               "--errlog", str(errlog or self.errlog), "--env", json.dumps(env),
               "-n", str(n or a.iterations), "--iterations-d", str(n_d or a.iterations_d), "--warmup", str(a.warmup)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.fatal = True
            return {"fatal": f"{kind} child took over {CHILD_TIMEOUT_S:.0f} s"}
        lines = done.stdout.strip().splitlines()
        try:
            got = json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            got = {"fatal": f"{kind} child exited {done.returncode}: {done.stderr.strip()[-500:]}"}
        if "fatal" in got:
            self.fatal = True
            print(f"FATAL ({kind}, {mode}): {got['fatal']}")
        for k, errs in got.get("errors", {}).items():
            self.failed += 1
            print(f"ERROR case {k} ({kind}, {mode}): {errs}")
        return got


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or not den else num / den


def fx(x: float | None, unit: str = "x", digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}{unit}"


def measure_runs(b: Bench) -> dict[str, list[dict[str, float | None]]]:
    """Per mode, per run: the medians of a, b, c, d in ms."""
    a = b.a
    per_mode: dict[str, list[dict[str, float | None]]] = {m: [] for m in a.modes}
    protocols: dict[str, str] = {}
    # A run's samples come from --pairs client processes of each kind, taken in
    # turn: how fast one process happens to be is pooled with the others.
    n, n_d = -(-a.iterations // a.pairs), -(-a.iterations_d // a.pairs)
    for run in range(a.runs):
        for mode in a.modes:
            samples: dict[str, list[float]] = {}
            for pair in range(a.pairs):
                order = ["direct", "gateway"] if (run + pair) % 2 == 0 else ["gateway", "direct"]
                for kind in order:
                    got = b.child(kind, mode, "" if kind == "direct" else "bcd", n=n, n_d=n_d)
                    protocols[f"{kind} {mode}"] = got.get("protocol", "?")
                    for k, xs in got.get("samples", {}).items():
                        samples.setdefault(k, []).extend(xs)
            medians: dict[str, float | None] = {k: med(xs) for k, xs in samples.items()}
            per_mode[mode].append(medians)
            print(f"  run {run + 1} {mode:<6} " + "  ".join(
                f"{k}={fx(medians.get(k), ' ms', 3)}" for k in "abcd")
                + "   " + "  ".join(f"{k}/a={fx(ratio(medians.get(k), medians.get('a')))}" for k in "bcd"), flush=True)
    print("  protocols: " + ", ".join(f"{k} {v}" for k, v in protocols.items()))
    return per_mode


def report_ratios(a: argparse.Namespace, per_mode: dict[str, list[dict[str, float | None]]]) -> list[str]:
    print()
    print("ratios to the direct call, one client process per connection (target; run 1, 2, ...; median of runs)")
    head = f"{'':<21}" + "".join(f"{m:>34}" for m in a.modes)
    print(head)
    summary = []
    for k, label in (("b", "print(1+1)"), ("c", "1 proxied call"), ("d", "10 proxied calls")):
        row = f"{k}/a {label:<17}"
        for mode in a.modes:
            rs = [ratio(m.get(k), m.get("a")) for m in per_mode[mode]]
            ok = [r for r in rs if r is not None]
            mr = med(ok)
            verdict = "-" if mr is None else ("PASS" if mr <= TARGETS[k] else "MISS")
            cell = " ".join(fx(r) for r in rs) + f" | {fx(mr)} {verdict}"
            row += f"{cell:>34}"
            summary.append(f"{k}/a {mode} {fx(mr)} {verdict}")
        print(row + f"   target <= {TARGETS[k]:g}x")
    for mode in a.modes:
        meds = {k: med([m[k] for m in per_mode[mode] if m.get(k) is not None]) for k in "abcd"}
        print(f"  {mode}: median of run medians a {fx(meds['a'], ' ms', 3)}, b {fx(meds['b'], ' ms', 3)}, "
              f"c {fx(meds['c'], ' ms', 3)}, d {fx(meds['d'], ' ms', 3)} ({fx(None if meds['d'] is None else meds['d'] / 10, ' ms', 3)}/call)")
    return summary


# ---------------------------------------------------------------- the traced pass

LINE = re.compile(r"\bTRACE\s+" + re.escape(TIMING) + r":\s+(?P<msg>.*?)(?P<fields>(?:\s+\w+=\S+)*)\s*$")
FIELD = re.compile(r"(\w+)=(\S+)")

# The stages of one proxied call, in the order a request meets them: (message, label).
# Indented labels are parts of the stage above them.
STAGES = [
    ("request read", "transport in: stdin read -> handler"),
    ("request parsed", "request parsing (arguments -> RunRequest)"),
    ("limits checked", "limits (source size, wall time)"),
    ("session begun (lease, load)", "session begin (lease, load)"),
    ("engine run", "engine run (route + Monty + tool call)"),
    ("outline", "  outline for escalation (parse on a big-stack thread)"),
    ("engine started", "  engine start (session, hand-off to interpreter thread)"),
    ("monty fed", "  Monty: parse + run to first suspension"),
    ("arguments bound", "  argument conversion + binding"),
    ("policy checked", "    policy check"),
    ("upstream peer", "    upstream connection lookup"),
    ("upstream sent", "    upstream client send (request -> child stdin)"),
    ("upstream answered", "    upstream server (stdin written -> stdout read)"),
    ("upstream received", "    upstream client receive (stdout read -> result)"),
    ("upstream call", "    upstream call (rmcp round trip, all of the above)"),
    ("audit recorded", "    audit record"),
    ("result converted", "    result conversion (MCP result -> value)"),
    ("tool reply", "    result conversion (value -> Monty object)"),
    ("tool call waited", "  tool call, as the interpreter waited for it"),
    ("monty resumed", "  Monty: resume with the result, run to the end"),
    ("driver done", "  interpreter thread total"),
    ("engine finished", "  engine finish (hand-back from the interpreter thread)"),
    ("session dumped", "  session dump"),
    ("session sealed", "  session seal"),
    ("session saved and released", "session save and release"),
    ("result rendered", "rendering (text + structuredContent)"),
    ("handler done", "handler total (call_tool in -> result out)"),
    ("response written", "transport out: handler -> stdout flushed"),
]


def parse_trace(path: Path, skip: int) -> dict[str, list[int]]:
    seen: dict[str, list[int]] = {}
    for line in path.read_text(errors="replace").splitlines():
        m = LINE.search(line)
        if not m:
            continue
        fields = dict(FIELD.findall(m["fields"]))
        if "us" in fields and fields["us"].isdigit():
            seen.setdefault(m["msg"].strip(), []).append(int(fields["us"]))
    return {k: v[skip:] for k, v in seen.items()}


def traced_pass(b: Bench, mode: str, case: str) -> dict[str, list[int]] | None:
    log = b.tmp / f"trace-{mode}-{case}.log"
    got = b.child("gateway", mode, case, env={"CODEMCP_LOG": f"warn,{TIMING}=trace"}, errlog=log, n=b.a.trace_n)
    if "fatal" in got:
        return None
    spans = parse_trace(log, b.a.warmup)
    spans["client round trip"] = [round(x * 1000) for x in got["samples"].get(case, [])]
    return spans


def report_trace(b: Bench, traces: dict[str, dict[str, list[int]] | None], case: str) -> None:
    cols = [m for m in traces if traces[m] is not None]
    print()
    print(f"where the time of case {case} goes (traced pass, n = {b.a.trace_n}; median us, count per run in brackets)")
    print(f"{'stage':<58}" + "".join(f"{m:>14}" for m in cols))
    known = {msg for msg, _ in STAGES}
    rows = list(STAGES) + [(msg, msg) for m in cols for msg in sorted(traces[m]) if msg not in known and msg != "client round trip"]
    done = set()
    for msg, label in rows:
        if msg in done:
            continue
        done.add(msg)
        cells = []
        for m in cols:
            xs = traces[m].get(msg, [])
            per_run = len(xs) / max(1, b.a.trace_n)
            count = "" if not xs or abs(per_run - 1) < 0.05 else f" [{per_run:.1f}]"
            cells.append("-" if not xs else f"{statistics.median(xs):.0f}{count}")
        if any(c != "-" for c in cells):
            print(f"{label:<58}" + "".join(f"{c:>14}" for c in cells))
    cells = []
    for m in cols:
        t = traces[m]
        rt = med(t.get("client round trip", []))
        cells.append(f"{rt:.0f}" if rt is not None else "-")
    print(f"{'client round trip (traced, at the client)':<58}" + "".join(f"{c:>14}" for c in cells))
    cells = []
    for m in cols:
        t = traces[m]
        rt = med(t.get("client round trip", []))
        inside = sum(med(t.get(k, [])) or 0 for k in ("request read", "handler done", "response written"))
        cells.append("-" if rt is None else f"{rt - inside:.0f}")
    print(f"{'outside the gateway (client SDK, pipes, wake-ups)':<58}" + "".join(f"{c:>14}" for c in cells))


# ---------------------------------------------------------------- the raw pass: no client SDK


class RawConnection:
    """Bare JSON-RPC lines over a child's pipes (`initialize`, 2025-11-25): no SDK in the way."""

    def __init__(self, cmd: list[str], errlog: Any):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, bufsize=0,
                                  env=dict(os.environ, CODEMCP_LOG="warn"))
        self.buf = bytearray()
        self.next_id = 0
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "floor.py", "version": "1"}}, timeout=60)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write((json.dumps(message) + "\n").encode())

    def line(self, deadline: float) -> bytes:
        assert self.p.stdout is not None
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                raise TimeoutError("no answer in time")
            chunk = os.read(self.p.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("the server closed its output")
            self.buf += chunk
        end = self.buf.index(b"\n") + 1
        line, self.buf = bytes(self.buf[:end]), self.buf[end:]
        return line

    def call(self, method: str, params: dict[str, Any], timeout: float = lt.CALL_TIMEOUT_S) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.line(deadline))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def close(self) -> None:
        self.p.kill()
        self.p.wait()


def raw_pass(b: Bench) -> list[str]:
    """a, b and c over bare JSON-RPC, round-robin, one connection each: the gateway's own cost."""
    a = b.a
    checks = {
        "a": lambda r: "is 3." in json.dumps(r.get("content")),
        "b": lambda r: (r.get("structuredContent") or {}).get("stdout") == "2\n",
        "c": lambda r: "is 3." in json.dumps((r.get("structuredContent") or {}).get("result")),
    }
    samples: dict[str, list[float]] = {k: [] for k in "abc"}
    with b.errlog.open("a") as errlog:
        conns: list[RawConnection] = []
        try:
            direct = RawConnection([b.node, b.everything, "stdio"], errlog)
            conns.append(direct)
            gateway = RawConnection([a.codemcp, "--config", str(b.config)], errlog)
            conns.append(gateway)
            gateway.call("tools/list", {}, timeout=60)
            calls = {
                "a": (direct, {"name": "get-sum", "arguments": {"a": 1, "b": 2}}),
                "b": (gateway, {"name": "execute_python", "arguments": {"code": lt.CODE_B}}),
                "c": (gateway, {"name": "execute_python", "arguments": {"code": lt.CODE_C}}),
            }
            for i in range(a.warmup + a.iterations):
                keys = "abc"[i % 3:] + "abc"[: i % 3]
                for k in keys:
                    conn, params = calls[k]
                    t0 = time.perf_counter_ns()
                    result = conn.call("tools/call", params)
                    dt = (time.perf_counter_ns() - t0) / 1e6
                    if not checks[k](result):
                        raise AssertionError(f"case {k} returned {json.dumps(result)[:200]}")
                    if i >= a.warmup:
                        samples[k].append(dt)
        except Exception as e:  # noqa: BLE001 - reported, the other passes stand
            b.failed += 1
            print(f"ERROR raw pass: {lt.describe(e)}")
            return []
        finally:
            for conn in conns:
                conn.close()
    ma, mb, mc = (med(samples[k]) for k in "abc")
    print()
    print(f"bare JSON-RPC, no client SDK (initialize; n = {a.iterations}; median ms): "
          f"a {fx(ma, '', 3)}, b {fx(mb, '', 3)}, c {fx(mc, '', 3)}; "
          f"b/a {fx(ratio(mb, ma))}, c/a {fx(ratio(mc, ma))}, c-a {fx(None if mc is None or ma is None else mc - ma, ' ms', 3)}")
    return [f"raw c/a {fx(ratio(mc, ma))}"]



# ---------------------------------------------------------------- beside: other placements


def beside(b: Bench) -> list[str]:
    a = b.a
    rows, summary = [], []
    configs = []
    if a.monty_bin:
        configs.append(("pool", {"CODEMCP_MONTY": "pool", "CODEMCP_MONTY_BIN": a.monty_bin}))
    if a.host_python:
        configs.append(("host", {"CODEMCP_ISOLATION": "HOST_SYSTEM", "CODEMCP_PYTHON": a.host_python}))
    if not configs:
        return summary
    base = b.child("gateway", "auto", "bc")
    for name, env in [("inprocess", {})] + configs:
        got = base if name == "inprocess" else b.child("gateway", "auto", "bc", env=env)
        mb, mc = (med(got.get("samples", {}).get(k, [])) for k in "bc")
        rows.append((name, mb, mc))
    print()
    print("other placements, one client process each (mode auto; median ms)")
    print(f"{'placement':<12}{'print(1+1)':>12}{'1 call':>10}")
    base_c = rows[0][2]
    for name, mb, mc in rows:
        print(f"{name:<12}{fx(mb, '', 3):>12}{fx(mc, '', 3):>10}")
        if name != "inprocess" and mc is not None and base_c is not None:
            summary.append(f"{name} 1-call {mc:.3f} ms ({mc - base_c:+.3f})")
    return summary


# ---------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codemcp", required=True, help="path to the codemcp binary (release build)")
    ap.add_argument("--node-modules", default=os.environ.get("CODEMCP_TEST_NODE_MODULES"), help="default: $CODEMCP_TEST_NODE_MODULES")
    ap.add_argument("-n", "--iterations", type=int, help="measured calls per case and child (default 200; --quick 30)")
    ap.add_argument("--iterations-d", type=int, help="measured runs of d per child (default 100; --quick 10)")
    ap.add_argument("--warmup", type=int, help="warm-up calls per case (default 20; --quick 5)")
    ap.add_argument("--runs", type=int, help="runs of the headline measurement (default 3; --quick 1)")
    ap.add_argument("--pairs", type=int, help="direct and gateway client processes per run and mode, "
                    "each measuring its share of -n (default 3; --quick 1)")
    ap.add_argument("--trace-n", type=int, help="measured calls in the traced pass (default 300; --quick 30)")
    ap.add_argument("--modes", default="auto,legacy", help="client modes, comma-separated (default auto,legacy)")
    ap.add_argument("--no-trace", action="store_true", help="skip the traced pass")
    ap.add_argument("--no-beside", action="store_true", help="skip the pool and host placements")
    ap.add_argument("--no-raw", action="store_true", help="skip the bare JSON-RPC pass")
    ap.add_argument("--quick", action="store_true", help="a short run for a smoke test")
    ap.add_argument("--monty-bin", default=os.environ.get("CODEMCP_MONTY_BIN"), help="measure the pool placement too (default $CODEMCP_MONTY_BIN)")
    ap.add_argument("--host-python", default=os.environ.get("CODEMCP_PYTHON"), help="measure a warm host CPython worker too (default $CODEMCP_PYTHON)")
    # The child's own options.
    ap.add_argument("--child", choices=["direct", "gateway"], help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="auto", help=argparse.SUPPRESS)
    ap.add_argument("--cases", default="", help=argparse.SUPPRESS)
    for opt in ("--node", "--everything", "--config", "--errlog", "--env"):
        ap.add_argument(opt, help=argparse.SUPPRESS)
    a = ap.parse_args()
    q = a.quick
    a.iterations = a.iterations if a.iterations is not None else (30 if q else 200)
    a.iterations_d = a.iterations_d if a.iterations_d is not None else (10 if q else 100)
    a.warmup = a.warmup if a.warmup is not None else (5 if q else 20)
    a.runs = a.runs if a.runs is not None else (1 if q else 3)
    a.pairs = max(1, a.pairs if a.pairs is not None else (1 if q else 3))
    a.trace_n = a.trace_n if a.trace_n is not None else (30 if q else 300)
    a.modes = [m for m in a.modes.split(",") if m]
    if any(m not in ("auto", "legacy") for m in a.modes):
        ap.error("--modes takes auto and/or legacy")
    if not a.node_modules:
        ap.error("--node-modules or $CODEMCP_TEST_NODE_MODULES is required (source .deps/env.sh)")
    if not os.access(a.codemcp, os.X_OK):
        ap.error(f"not an executable: {a.codemcp}")
    return a


def main() -> int:
    a = parse_args()
    if a.child:
        a.kind, a.n, a.n_d = a.child, a.iterations, a.iterations_d
        return asyncio.run(child_main(a))
    tmp = Path(tempfile.mkdtemp(prefix="codemcp-floor-"))
    b = Bench(a, tmp)
    load = os.getloadavg()
    print(f"codemcp floor bench - mcp {lt.pkg_version('mcp')} client, one client process per connection")
    print(f"  binary  {a.codemcp}")
    print(f"  n = {a.iterations} (a, b, c), {a.iterations_d} (d) per run, from {a.pairs} client process(es) of "
          f"each kind, each after {a.warmup} warm-up calls; {a.runs} run(s); modes {', '.join(a.modes)}; logs in {tmp}")
    print(f"  load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs"
          + ("   - busy machine: expect inflated ratios" if load[0] >= 1.0 else ""), flush=True)
    started = time.monotonic()
    per_mode = measure_runs(b)
    summary = [] if b.fatal else report_ratios(a, per_mode)
    if not a.no_trace and not b.fatal:
        traces = {mode: traced_pass(b, mode, "c") for mode in a.modes}
        report_trace(b, traces, "c")
    if not a.no_raw and not b.fatal:
        summary += raw_pass(b)
    if not a.no_beside and not b.fatal:
        summary += beside(b)
    print()
    print(f"SUMMARY {', '.join(summary)}; errors {b.failed}; {time.monotonic() - started:.0f} s; "
          f"load {load[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    return 2 if b.fatal else (1 if b.failed else 0)


if __name__ == "__main__":
    sys.exit(main())
