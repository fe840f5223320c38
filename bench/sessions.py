"""sessions.py: what keeping session state in each store costs per call.

    .deps/py2/bin/python bench/sessions.py --codemcp PATH [-n 300] [--redis-server redis-server]

Three stdio gateways side by side (Monty in-process, no upstreams), each with a
session that already holds a small dict, one per `CODEMCP_SESSION_STORE`:
memory, file (SQLite in a temp dir) and redis (a redis-server this script starts
on a free loopback port and stops). Each measured call is one `execute_python`
that reads and changes the session (`n += 1; n`), passing the handle back as a
model would; calls rotate between the three, after a warm-up. Prints the median
and p90 of each, the median added over `memory` (targets: file <= 0.3 ms, redis
<= 1 ms), and the stored size of the session's snapshot (from the SQLite file) after its
first run and after the last.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

SETUP = "n = 0\nprofile = {'name': 'Ada', 'tags': ['a', 'b', 'c'], 'scores': list(range(50))}\ndef bump(k):\n    return k + 1"
STEP = "n = bump(n)\nn"
TARGETS = {"file": 0.3, "redis": 1.0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(binary: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, f"redis://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("redis-server did not start")


async def call(client: Client, code: str, session: str | None) -> tuple[float, dict]:
    args = {"code": code} | ({"session": session} if session else {})
    t0 = time.perf_counter_ns()
    res = await client.call_tool("execute_python", args)
    dt = (time.perf_counter_ns() - t0) / 1e6
    sc = res.structured_content or {}
    if res.is_error or sc.get("warnings"):
        raise SystemExit(f"unexpected result: {sc}")
    return dt, sc


async def amain(a: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="codemcp-sessions-bench-"))
    (tmp / "config.json").write_text('{"mcpServers": {}}')
    redis, redis_url = start_redis(a.redis_server)
    stores = {"memory": "memory", "file": f"file:{tmp / 'sessions.sqlite3'}", "redis": redis_url}
    base = dict(os.environ, CODEMCP_LOG="warn", CODEMCP_MONTY="inprocess", XDG_STATE_HOME=str(tmp),
                CODEMCP_SESSION_KEY="bench-key-bench-key-bench-key-0123456789")
    print(f"codemcp sessions bench: n = {a.n} per store, warm-up {a.warmup}; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    try:
        async with AsyncExitStack() as stack:
            clients, handles = {}, {}
            for name, spec in stores.items():
                params = StdioServerParameters(command=a.codemcp, args=["--config", str(tmp / "config.json")],
                                               env=dict(base, CODEMCP_SESSION_STORE=spec))
                clients[name] = await stack.enter_async_context(Client(stdio_client(params), cache=None))
                _, sc = await call(clients[name], SETUP, None)
                handles[name] = sc["session"]
            first_size = record_size(tmp)
            samples: dict[str, list[float]] = {name: [] for name in stores}
            names = list(stores)
            for i in range(a.warmup + a.n):
                order = names[i % 3:] + names[:i % 3]
                for name in order:
                    dt, sc = await call(clients[name], STEP, handles[name])
                    if i >= a.warmup:
                        samples[name].append(dt)
            expected = a.warmup + a.n
            for name in names:
                _, sc = await call(clients[name], "n", handles[name])
                assert sc["result"] == expected, (name, sc)
    finally:
        redis.kill()
    memory = statistics.median(samples["memory"])
    print(f"{'store':8} {'median ms':>10} {'p90 ms':>8} {'added ms':>9}  target")
    for name, xs in samples.items():
        med, p90 = statistics.median(xs), statistics.quantiles(xs, n=10)[-1]
        added = med - memory
        target = TARGETS.get(name)
        verdict = "" if target is None else f"<= {target} ms {'PASS' if added <= target else 'MISS'}"
        print(f"{name:8} {med:10.3f} {p90:8.3f} {added:9.3f}  {verdict}")
    print(f"stored record of the session (sealed Monty snapshot): {first_size} bytes after its first run, "
          f"{record_size(tmp)} bytes after {a.warmup + a.n + 2} runs (it keeps each snippet's source)")
    shutil.rmtree(tmp, ignore_errors=True)


def record_size(tmp: Path) -> int:
    with sqlite3.connect(tmp / "sessions.sqlite3") as db:
        row = db.execute("SELECT length(record) FROM records").fetchone()
    return row[0] if row else -1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codemcp", required=True)
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    anyio.run(amain, ap.parse_args())


if __name__ == "__main__":
    main()
