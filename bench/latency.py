#!/usr/bin/env python3
"""latency.py: codemcp's per-call overhead against a direct MCP connection.

    .deps/py2/bin/python bench/latency.py --codemcp PATH [--node-modules DIR] [--quick] [...]

One process, two stdio connections opened side by side with the `mcp` 2.x client:

    direct   node server-everything (stdio)
    gateway  codemcp --config <tmp>  whose only upstream is that same server, named `everything`

Cases, measured round-robin (the order rotates every iteration) after a warm-up:

    a  direct   tools/call get-sum {a: 1, b: 2}
    b  gateway  execute_python  print(1+1)                       no upstream call
    c  gateway  execute_python  everything_get_sum(a=1, b=2)      one upstream call
    d  gateway  execute_python  ten sequential everything_get_sum calls
    k  policy   (c) on a gateway whose `everything` entry has a 50-rule policy

Every measured result is checked (stdout, result, tool_calls), so errors are
counted and reported instead of timed. Then the gateway's VmRSS is read from
/proc: right after connecting, and after a soak of execute_python runs (b and c
alternating). Exit status: 0 when every call succeeded, 1 when some failed,
2 when a connection could not be set up.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from importlib.metadata import version as pkg_version
from pathlib import Path
from typing import Any, Callable

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

EVERYTHING = "@modelcontextprotocol/server-everything/dist/index.js"
CALL_TIMEOUT_S = 30.0
TARGET_B = 1.0  # (b)/(a): a no-op snippet should cost no more than a direct tool call
TARGET_C = 1.5  # (c)/(a): one proxied call within 1.5x of calling the upstream directly

CODE_B = "print(1+1)"
CODE_C = "everything_get_sum(a=1, b=2)"
CODE_D = "out = []\nfor i in range(10):\n    out.append(everything_get_sum(a=i, b=1))\nout\n"


# ---------------------------------------------------------------- checks


def structured(res: Any) -> dict[str, Any]:
    sc = res.structured_content
    if not isinstance(sc, dict):
        raise AssertionError(f"no structuredContent; content: {text_of(res)!r}")
    err = sc.get("error")
    if res.is_error or err:
        if isinstance(err, dict):
            err = f"{err.get('type') or err.get('kind')}: {err.get('message')}"
        raise AssertionError(f"execute_python error: {err or text_of(res)}")
    return sc


def text_of(res: Any) -> str:
    return "\n".join(getattr(c, "text", "") or "" for c in res.content or [])


def expect_calls(sc: dict[str, Any], n: int) -> None:
    if "tool_calls" in sc and sc["tool_calls"] != n:
        raise AssertionError(f"tool_calls = {sc['tool_calls']!r}, expected {n}")


def check_a(res: Any) -> None:
    if res.is_error or "is 3." not in text_of(res):
        raise AssertionError(f"get-sum returned {text_of(res)!r}")


def check_b(res: Any) -> None:
    sc = structured(res)
    if sc.get("stdout") != "2\n":
        raise AssertionError(f"stdout = {sc.get('stdout')!r}, expected '2\\n'")
    expect_calls(sc, 0)


def check_c(res: Any) -> None:
    sc = structured(res)
    if "is 3." not in json.dumps(sc.get("result")):
        raise AssertionError(f"result = {sc.get('result')!r}, expected the sum 3")
    expect_calls(sc, 1)


def check_d(res: Any) -> None:
    sc = structured(res)
    got = json.dumps(sc.get("result"))
    missing = [i + 1 for i in range(10) if f"is {i + 1}." not in got]
    if missing:
        raise AssertionError(f"result lacks sums {missing}: {got[:200]}")
    expect_calls(sc, 10)


# ---------------------------------------------------------------- cases


@dataclass
class Case:
    key: str
    label: str
    call: Callable[[], Any]  # async () -> CallToolResult
    check: Callable[[Any], None]
    samples_ms: list[float] = field(default_factory=list)
    gw_ms: list[float] = field(default_factory=list)  # structuredContent.elapsed_ms
    errors: list[str] = field(default_factory=list)
    disabled: bool = False

    async def run(self, record: bool) -> bool:
        t0 = time.perf_counter_ns()
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                res = await self.call()
            dt = (time.perf_counter_ns() - t0) / 1e6
            self.check(res)
        except Exception as e:  # noqa: BLE001 - report it and keep measuring the other cases
            self.errors.append(describe(e))
            return False
        if record:
            self.samples_ms.append(dt)
            sc = res.structured_content
            if isinstance(sc, dict) and isinstance(sc.get("elapsed_ms"), (int, float)):
                self.gw_ms.append(float(sc["elapsed_ms"]))
        return True


def describe(e: BaseException) -> str:
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    if isinstance(e, AssertionError):  # our own checks: the message says it all
        return str(e)
    return f"{type(e).__name__}: {str(e) or repr(e)}"


def execute(client: Client, code: str) -> Callable[[], Any]:
    return lambda: client.call_tool("execute_python", {"code": code})


# ---------------------------------------------------------------- /proc


def child_pid_of(exe: str) -> int | None:
    """The pid of this process's child running `exe` (the SDK spawns it directly)."""
    me, want = str(os.getpid()), os.path.realpath(exe)
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            ppid = stat.rsplit(")", 1)[1].split()[1]
            if ppid == me and os.path.realpath(d / "exe") == want:
                return int(d.name)
        except (OSError, IndexError):
            continue
    return None


def status_kib(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def mib(kib: int | None) -> str:
    return "n/a" if kib is None else f"{kib / 1024:.1f} MiB"


# ---------------------------------------------------------------- stats and report


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def print_table(cases: list[Case], planned: dict[str, int]) -> None:
    print(f"{'case':<44} {'ok/n':>9} {'median':>8} {'p95':>8} {'mean':>8} {'gw elapsed':>10}")
    print(f"{'':<44} {'':>9} {'ms':>8} {'ms':>8} {'ms':>8} {'med ms':>10}")
    for c in cases:
        xs = c.samples_ms
        n = planned[c.key]
        row = f"{c.key}  {c.label:<41} {len(xs):>4}/{n:<4}"
        if xs:
            row += f" {fmt(median(xs)):>8} {fmt(pct(xs, 95)):>8} {fmt(statistics.fmean(xs)):>8} {fmt(median(c.gw_ms), 1):>10}"
        else:
            row += f" {'-':>8} {'-':>8} {'-':>8} {'-':>10}"
        print(row)


def times(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def ratio_line(name: str, num: Case, den: Case, target: float) -> tuple[str, float | None, str]:
    mn, md = median(num.samples_ms), median(den.samples_ms)
    if mn is None or md is None or md == 0:
        return f"{name:<8} n/a (no successful samples)", None, "N/A"
    r = mn / md
    verdict = "PASS" if r <= target else "MISS"
    return f"{name:<8} {r:5.2f}x   target <= {target:.1f}x   {verdict}", r, verdict


def print_errors(cases: list[Case]) -> None:
    for c in cases:
        if not c.errors:
            continue
        kinds: dict[str, int] = {}
        for e in c.errors:
            kinds[e] = kinds.get(e, 0) + 1
        print(f"ERROR case {c.key} ({c.label}): {len(c.errors)} failed call(s)" + (" - case disabled" if c.disabled else ""))
        for msg, k in sorted(kinds.items(), key=lambda kv: -kv[1])[:3]:
            print(f"    {k}x {msg[:300]}")


# ---------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codemcp", required=True, help="path to the codemcp binary (release build)")
    ap.add_argument("--node-modules", default=os.environ.get("CODEMCP_TEST_NODE_MODULES"), help="default: $CODEMCP_TEST_NODE_MODULES")
    ap.add_argument("-n", "--iterations", type=int, help="measured calls for a, b, c (default 300; --quick 50)")
    ap.add_argument("--iterations-d", type=int, help="measured runs of d (default 100; --quick 20)")
    ap.add_argument("--warmup", type=int, help="warm-up calls per case (default 20; --quick 5)")
    ap.add_argument("--soak", type=int, help="execute_python runs before the second RSS reading (default 1000; --quick 200)")
    ap.add_argument("--quick", action="store_true", help="a short run for a smoke test")
    ap.add_argument("--mode", choices=["auto", "legacy"], default="auto", help="client protocol mode for both connections")
    ap.add_argument("--monty-bin", default=os.environ.get("CODEMCP_MONTY_BIN"),
                    help="monty worker binary: also measure b and c with CODEMCP_MONTY=pool (default $CODEMCP_MONTY_BIN)")
    ap.add_argument("--host-python", default=os.environ.get("CODEMCP_PYTHON"),
                    help="a python with websockets: also measure b and c with CODEMCP_ISOLATION=HOST_SYSTEM (default $CODEMCP_PYTHON)")
    ap.add_argument("--docker", action="store_true",
                    help="also measure b and c with CODEMCP_ISOLATION=DOCKER (needs the engine and the worker image), and the cold first call")
    a = ap.parse_args()
    q = a.quick
    a.iterations = a.iterations if a.iterations is not None else (50 if q else 300)
    a.iterations_d = a.iterations_d if a.iterations_d is not None else (20 if q else 100)
    a.warmup = a.warmup if a.warmup is not None else (5 if q else 20)
    a.soak = a.soak if a.soak is not None else (200 if q else 1000)
    if not a.node_modules:
        ap.error("--node-modules or $CODEMCP_TEST_NODE_MODULES is required (source .deps/env.sh)")
    if not os.access(a.codemcp, os.X_OK):
        ap.error(f"not an executable: {a.codemcp}")
    return a


def schedule(n_main: int, n_d: int, main_keys: str = "abc") -> list[list[str]]:
    """Per iteration, the cases to run: a, b, c (and e, f) every time; d spread evenly."""
    n = max(n_main, n_d)
    plan = []
    for i in range(n):
        keys = [k for k in main_keys if i < n_main]
        if (i * n_d) // n != ((i + 1) * n_d) // n:
            keys.append("d")
        plan.append(keys[i % len(keys):] + keys[: i % len(keys)] if keys else [])
    return plan


@dataclass
class Measurement:
    cases: dict[str, Case]
    pid: int | None
    rss_idle: int | None = None
    rss_soak: int | None = None
    rss_peak: int | None = None
    soak_ok: int = 0
    soak_s: float = 0.0
    measure_s: float = 0.0
    docker_cold_ms: float | None = None


async def measure(a: argparse.Namespace, direct: Client, gateway: Client, pid: int | None,
                  pool: Client | None = None, host: Client | None = None, docker: Client | None = None,
                  policy: Client | None = None) -> Measurement:
    await anyio.sleep(0.5)  # let start-up allocations settle
    cases = [
        Case("a", "direct   tools/call get-sum", lambda: direct.call_tool("get-sum", {"a": 1, "b": 2}), check_a),
        Case("b", "codemcp  print(1+1)", execute(gateway, CODE_B), check_b),
        Case("c", "codemcp  1x everything_get_sum", execute(gateway, CODE_C), check_c),
        Case("d", "codemcp  10x everything_get_sum", execute(gateway, CODE_D), check_d),
    ]
    if pool is not None:
        cases += [
            Case("e", "pool     print(1+1)", execute(pool, CODE_B), check_b),
            Case("f", "pool     1x everything_get_sum", execute(pool, CODE_C), check_c),
        ]
    if host is not None:
        cases += [
            Case("g", "host     print(1+1)", execute(host, CODE_B), check_b),
            Case("h", "host     1x everything_get_sum", execute(host, CODE_C), check_c),
        ]
    if policy is not None:
        cases += [Case("k", "policy   1x everything_get_sum", execute(policy, CODE_C), check_c)]
    if docker is not None:
        cases += [
            Case("i", "docker   print(1+1)", execute(docker, CODE_B), check_b),
            Case("j", "docker   1x everything_get_sum", execute(docker, CODE_C), check_c),
        ]
    m = Measurement({c.key: c for c in cases}, pid, rss_idle=status_kib(pid, "VmRSS") if pid else None)

    for _ in range(a.warmup):
        for c in cases:
            await c.run(record=False)
    for c in cases:
        if a.warmup and len(c.errors) == a.warmup:
            c.disabled = True  # every warm-up call failed: timing it would only time errors

    t0 = time.monotonic()
    main_keys = "abc" + ("ef" if pool is not None else "") + ("gh" if host is not None else "") + ("ij" if docker is not None else "") + ("k" if policy is not None else "")
    for keys in schedule(a.iterations, a.iterations_d, main_keys):
        for k in keys:
            if not m.cases[k].disabled:
                await m.cases[k].run(record=True)
    m.measure_s = time.monotonic() - t0

    soak = [c for c in (m.cases["b"], m.cases["c"]) if not c.disabled] or [m.cases["b"]]
    t0 = time.monotonic()
    for i in range(a.soak):
        m.soak_ok += await soak[i % len(soak)].run(record=False)
    m.soak_s = time.monotonic() - t0
    if pid:
        m.rss_soak, m.rss_peak = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
    return m


def report(a: argparse.Namespace, m: Measurement) -> int:
    cs = m.cases
    planned = {k: a.iterations for k in "abcefghijk"} | {"d": a.iterations_d}
    print()
    print_table(list(cs.values()), planned)
    print()
    rb, vb_r, vb = ratio_line("(b)/(a)", cs["b"], cs["a"], TARGET_B)
    rc, vc_r, vc = ratio_line("(c)/(a)", cs["c"], cs["a"], TARGET_C)
    ma, md = median(cs["a"].samples_ms), median(cs["d"].samples_ms)
    per_call = None if md is None else md / 10
    print("ratios of medians")
    print("  " + rb)
    print("  " + rc)
    print(f"  (d)/10   {fmt(per_call)} ms per upstream call inside one snippet"
          + ("" if per_call is None or not ma else f"   ({per_call / ma:.2f}x of (a))"))
    pool_line = ""
    if "e" in cs and "f" in cs:
        mb, mc, me, mf = (median(cs[k].samples_ms) for k in "bcef")
        if None not in (mb, mc, me, mf):
            added = mf - mc
            verdict = "PASS" if added <= 0.3 else "MISS"
            print(f"  pool/inprocess: print(1+1) {me / mb:.2f}x ({me:.3f} vs {mb:.3f} ms), "
                  f"1 tool call {mf / mc:.2f}x ({mf:.3f} vs {mc:.3f} ms)")
            print(f"  pool adds {added:+.3f} ms median to a one-tool-call snippet   target <= 0.3 ms   {verdict}")
            pool_line = f", pool adds {added:+.3f} ms/1-call {verdict}"
    for (kb, kc, name, target) in (("g", "h", "host", 5.0), ("i", "j", "docker", 10.0)):
        if kb in cs and kc in cs:
            mb, mc, xb, xc = (median(cs[k].samples_ms) for k in ("b", "c", kb, kc))
            if None not in (mb, mc, xb, xc):
                verdict = "PASS" if xc <= target else "MISS"
                print(f"  {name}/monty: print(1+1) {xb / mb:.2f}x ({xb:.3f} ms), 1 tool call {xc / mc:.2f}x ({xc:.3f} ms)"
                      f"   target warm 1-call <= {target:g} ms   {verdict}")
                pool_line += f", {name} 1-call {xc:.2f} ms {verdict}"
    if "k" in cs:
        mc, mk = median(cs["c"].samples_ms), median(cs["k"].samples_ms)
        if None not in (mc, mk):
            print(f"  50-rule policy: 1 tool call {mk:.3f} vs {mc:.3f} ms without ({mk - mc:+.3f} ms)")
            pool_line += f", 50-rule policy {mk - mc:+.3f} ms/1-call"
    if m.docker_cold_ms is not None:
        verdict = "PASS" if m.docker_cold_ms <= 1500 else "MISS"
        print(f"  docker cold first call {m.docker_cold_ms:.0f} ms   target <= 1500 ms   {verdict}")
        pool_line += f", docker cold {m.docker_cold_ms:.0f} ms {verdict}"
    print()
    print(f"gateway RSS (codemcp pid {m.pid or '?'})")
    print(f"  idle after connect           {mib(m.rss_idle)}")
    print(f"  after {a.soak} execute_python   {mib(m.rss_soak)}   (peak {mib(m.rss_peak)}; {m.soak_ok}/{a.soak} ok in {m.soak_s:.1f} s)")
    print()
    print_errors(list(cs.values()))

    n_err = sum(len(c.errors) for c in cs.values())
    growth = "n/a" if m.rss_idle is None or m.rss_soak is None else f"{(m.rss_soak - m.rss_idle) / 1024:+.1f} MiB"
    print(f"SUMMARY b/a={times(vb_r)} {vb}, c/a={times(vc_r)} {vc}, d/10={fmt(per_call)} ms/call, "
          f"a={fmt(ma)} ms, RSS {mib(m.rss_idle)} -> {mib(m.rss_soak)} ({growth}) after {a.soak} runs, "
          f"errors {n_err}, measured in {m.measure_s:.1f} s{pool_line}")
    return 1 if n_err else 0


async def amain(a: argparse.Namespace) -> int:
    node = shutil.which("node") or "node"
    everything = str(Path(a.node_modules) / EVERYTHING)
    tmp = Path(tempfile.mkdtemp(prefix="codemcp-bench-"))
    config = tmp / "config.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {"command": node, "args": [everything, "stdio"]}}}))
    # 49 rules that match nothing (exact names and globs) and the one that allows the tool measured.
    rules = {f"tool_{i}": "deny" for i in range(25)} | {f"*_{i}_*": "ask" for i in range(24)} | {"get-sum": "allow"}
    policy_config = tmp / "policy.json"
    policy_config.write_text(json.dumps({"mcpServers": {"everything": {
        "command": node, "args": [everything, "stdio"], "policy": rules}}}))
    env = dict(os.environ, CODEMCP_LOG=os.environ.get("CODEMCP_LOG", "warn"))
    errlog_path = tmp / "stderr.log"

    print(f"codemcp latency bench - mcp {pkg_version('mcp')} client, mode {a.mode}")
    print(f"  binary  {a.codemcp}")
    print(f"  config  {config}   (children's stderr: {errlog_path})")
    print(f"  n = {a.iterations} (a, b, c), {a.iterations_d} (d); warm-up {a.warmup} each; soak {a.soak}")
    load = os.getloadavg()[0]
    busy = "   - busy machine: every hop waits for a CPU, expect inflated ratios" if load >= 1.0 else ""
    print(f"  load average (1 min) {load:.2f} on {os.cpu_count()} CPUs{busy}")

    def fatal(msg: str) -> int:
        print(f"FATAL: {msg}\n  children's stderr: {errlog_path}")
        return 2

    with errlog_path.open("w") as errlog:
        # One scope around the connections: its deadline bounds connecting and is lifted afterwards
        # (a fail_after around the connect alone would exit before the contexts it entered).
        with anyio.CancelScope(deadline=anyio.current_time() + 60) as connect_scope:
            async with AsyncExitStack() as stack:
                try:
                    direct = await stack.enter_async_context(Client(
                        stdio_client(StdioServerParameters(command=node, args=[everything, "stdio"], env=env), errlog=errlog),
                        mode=a.mode, cache=None))
                    gateway = await stack.enter_async_context(Client(
                        stdio_client(StdioServerParameters(command=a.codemcp, args=["--config", str(config)], env=env), errlog=errlog),
                        mode=a.mode, cache=None))
                    tools = [t.name for t in (await gateway.list_tools()).tools]
                    pid = child_pid_of(a.codemcp)  # before a second codemcp starts
                    pool = host = docker = policy = None
                    docker_cold_ms = None
                    if a.host_python:
                        host_env = dict(env, CODEMCP_ISOLATION="HOST_SYSTEM", CODEMCP_PYTHON=a.host_python)
                        host = await stack.enter_async_context(Client(
                            stdio_client(StdioServerParameters(command=a.codemcp, args=["--config", str(config)], env=host_env), errlog=errlog),
                            mode=a.mode, cache=None))
                    if a.docker:
                        docker_env = dict(env, CODEMCP_ISOLATION="DOCKER")
                        docker = await stack.enter_async_context(Client(
                            stdio_client(StdioServerParameters(command=a.codemcp, args=["--config", str(config)], env=docker_env), errlog=errlog),
                            mode=a.mode, cache=None))
                        t0 = time.perf_counter_ns()
                        check_b(await execute(docker, CODE_B)())
                        docker_cold_ms = (time.perf_counter_ns() - t0) / 1e6
                    policy = await stack.enter_async_context(Client(
                        stdio_client(StdioServerParameters(command=a.codemcp, args=["--config", str(policy_config)], env=env), errlog=errlog),
                        mode=a.mode, cache=None))
                    if a.monty_bin:
                        pool_env = dict(env, CODEMCP_MONTY="pool", CODEMCP_MONTY_BIN=a.monty_bin)
                        pool = await stack.enter_async_context(Client(
                            stdio_client(StdioServerParameters(command=a.codemcp, args=["--config", str(config)], env=pool_env), errlog=errlog),
                            mode=a.mode, cache=None))
                except Exception as e:  # noqa: BLE001
                    return fatal(f"could not connect: {describe(e)}")
                connect_scope.deadline = math.inf
                if "execute_python" not in tools:
                    return fatal(f"codemcp does not list execute_python (tools: {tools})")
                print(f"  protocol: direct {direct.protocol_version}, gateway {gateway.protocol_version}")
                m = await measure(a, direct, gateway, pid, pool, host, docker, policy)
                m.docker_cold_ms = docker_cold_ms
        if connect_scope.cancelled_caught:
            return fatal("connecting took longer than 60 s")
    return report(a, m)


def main() -> None:
    sys.exit(anyio.run(amain, parse_args()))


if __name__ == "__main__":
    main()
