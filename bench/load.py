"""load.py: concurrent agents through one gateway, then through two gateways on one Redis.

    .deps/py2/bin/python bench/load.py --codemcp PATH [--agents 200] [--calls 5] [--redis-server redis-server]

Starts a redis-server on a free loopback port and HTTP gateways (`serve --http
127.0.0.1:0`, default pool placement) that share it and one session key. Each
of `--agents` concurrent agents is its own PyPI `mcp` 2.x `Client` in its
default mode (protocol 2026-07-28, no MCP session): it starts a session, then
makes `--calls` calls that read and change it, passing the handle back as a
model would. Run 1: every call goes to gateway A. Run 2: each agent's calls
alternate between A and B (round-robin), so every call loads the state the
other gateway saved. Prints calls per second, latency percentiles, "session
busy" and other errors, the CPU time of the gateways (with their workers) and
of this client, and checks that every session counted every call. On a small
machine the client's own CPU time bounds the throughput: read the gateways'
CPU per call.
Bounded: `--agents` x (`--calls` + 2) calls, and at most `--timeout` seconds a run.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from sessions import start_redis

SETUP = "n = 0\nprofile = {'name': 'Ada', 'tags': ['a', 'b', 'c']}"
STEP = "n += 1\nn"


def start_gateway(codemcp: str, config: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([codemcp, "--config", str(config), "serve", "--http", "127.0.0.1:0"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    for line in proc.stderr:
        if "serving MCP on " in line:
            url = line.split("serving MCP on ", 1)[1].strip()
            # Keep reading stderr so the gateway never blocks on a full pipe.
            threading.Thread(target=drain, args=(proc,), daemon=True).start()
            return proc, url
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise SystemExit(f"{codemcp} did not start serving HTTP")


def drain(proc: subprocess.Popen) -> None:
    assert proc.stderr is not None
    for _ in proc.stderr:
        pass


class Stats:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.busy = 0
        self.errors: list[str] = []
        self.wrong = 0


async def agent(urls: list[str], calls: int, stats: Stats) -> None:
    clients = []
    async with create_mcp_http_client() as http:
        try:
            for url in urls:
                client = Client(streamable_http_client(url, http_client=http), cache=None)
                clients.append(await client.__aenter__())
            handle = None
            expected = 0
            for i in range(calls + 2):
                code = SETUP if i == 0 else ("n" if i == calls + 1 else STEP)
                args = {"code": code} | ({"session": handle} if handle else {})
                client = clients[i % len(clients)]
                t0 = time.perf_counter()
                res = await client.call_tool("execute_python", args)
                stats.latencies.append((time.perf_counter() - t0) * 1000)
                sc = res.structured_content or {}
                handle = sc.get("session", handle)
                if res.is_error:
                    message = str((sc.get("error") or {}).get("message", sc))
                    if "session busy" in message:
                        stats.busy += 1
                    else:
                        stats.errors.append(message[:200])
                    continue
                if code == STEP:
                    expected += 1
                if code != SETUP and sc.get("result") != expected:
                    stats.wrong += 1
        finally:
            for client in reversed(clients):
                await client.__aexit__(None, None, None)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` and its children that have been waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pids: list[int]) -> float:
    """CPU time of `pids` and their live children (pool workers)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if int(entry.name) in pids or ppid in pids:
            total += cpu_seconds(int(entry.name))
    return total


async def run(label: str, urls: list[str], a: argparse.Namespace, pids: list[int]) -> None:
    stats = Stats()
    cpu_before, client_before = tree_cpu_seconds(pids), time.process_time()
    started = time.perf_counter()
    with anyio.fail_after(a.timeout):
        async with anyio.create_task_group() as tg:
            for _ in range(a.agents):
                tg.start_soon(agent, urls, a.calls, stats)
    took = time.perf_counter() - started
    gateway_cpu = tree_cpu_seconds(pids) - cpu_before
    client_cpu = time.process_time() - client_before
    xs = sorted(stats.latencies)
    q = statistics.quantiles(xs, n=100) if len(xs) > 1 else [0.0] * 99
    print(f"{label:28} {len(xs):6} calls in {took:6.2f} s = {len(xs) / took:7.1f} calls/s; "
          f"ms p50 {q[49]:7.1f} p90 {q[89]:7.1f} p99 {q[98]:7.1f}; "
          f"busy {stats.busy}, errors {len(stats.errors)}, wrong counts {stats.wrong}; "
          f"CPU s: gateways {gateway_cpu:.1f} ({gateway_cpu * 1000 / max(len(xs), 1):.2f} ms a call), "
          f"this client {client_cpu:.1f}")
    for message in stats.errors[:3]:
        print(f"    error: {message}")


async def amain(a: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="codemcp-load-bench-"))
    config = tmp / "config.json"
    config.write_text('{"mcpServers": {}}')
    redis, redis_url = start_redis(a.redis_server)
    env = dict(os.environ, CODEMCP_LOG="info", XDG_STATE_HOME=str(tmp), CODEMCP_SESSION_STORE=redis_url,
               CODEMCP_SESSION_KEY="bench-key-bench-key-bench-key-0123456789", CODEMCP_FALLBACK="none")
    gateways = []
    print(f"codemcp load bench: {a.agents} concurrent agents x {a.calls + 2} calls; "
          f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    try:
        gateways = [start_gateway(a.codemcp, config, env) for _ in range(2)]
        (_, url_a), (_, url_b) = gateways
        pids = [proc.pid for proc, _ in gateways]
        await run("one gateway (Redis)", [url_a], a, pids[:1])
        await run("two gateways on one Redis", [url_a, url_b], a, pids)
    finally:
        for proc, _ in gateways:
            proc.kill()
        redis.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codemcp", required=True)
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    anyio.run(amain, ap.parse_args())


if __name__ == "__main__":
    main()
