"""expiry.py: the gateway's memory and the store after many sessions expire.

    .deps/py2/bin/python bench/expiry.py --codemcp PATH [--sessions 10000] [--idle 60] [--store file|redis] [--rounds 2]

Starts one HTTP gateway (`serve --http 127.0.0.1:0`, default pool placement)
with `CODEMCP_SESSION_IDLE_SECS=--idle`, creates `--sessions` sessions (one call
each that stores about 1 KiB, 20 agents at a time, protocol 2026-07-28), then
waits until they have expired, twice (`--rounds`). Prints the gateway's RSS and the store's size
(SQLite rows and file size, or Redis keys and used_memory) before, after the
sessions were made, and after they expired.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from load import start_gateway
from sessions import start_redis

CODE = "blob = 'x' * 1024\nlen(blob)"
AT_ONCE = 20


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return -1.0


def redis_info(url: str) -> str:
    host, port = url.removeprefix("redis://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"DBSIZE\r\nINFO memory\r\n")
        time.sleep(0.2)
        text = s.recv(1 << 16).decode(errors="replace")
    keys = text.split("\r\n", 1)[0].lstrip(":")
    used = next((line.split(":", 1)[1] for line in text.splitlines() if line.startswith("used_memory_human:")), "?")
    return f"{keys} keys, used_memory {used}"


def sqlite_info(path: Path) -> str:
    if not path.exists():
        return "no file yet"
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT count(*) FROM records").fetchone()[0]
    return f"{rows} records, file {path.stat().st_size / 1024:.0f} KiB"


async def make_sessions(url: str, count: int) -> None:
    made = 0

    async def worker() -> None:
        nonlocal made
        async with create_mcp_http_client() as http:
            async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
                while made < count:
                    made += 1
                    res = await client.call_tool("execute_python", {"code": CODE})
                    if res.is_error:
                        raise SystemExit(f"unexpected result: {res.structured_content}")

    async with anyio.create_task_group() as tg:
        for _ in range(AT_ONCE):
            tg.start_soon(worker)


async def amain(a: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="codemcp-expiry-bench-"))
    config = tmp / "config.json"
    config.write_text('{"mcpServers": {}}')
    redis, store = (None, f"file:{tmp / 'sessions.sqlite3'}")
    if a.store == "redis":
        redis, store = start_redis(a.redis_server)
    env = dict(os.environ, CODEMCP_LOG="info", XDG_STATE_HOME=str(tmp), CODEMCP_SESSION_STORE=store,
               CODEMCP_SESSION_IDLE_SECS=str(a.idle), CODEMCP_FALLBACK="none",
               CODEMCP_SESSION_KEY="bench-key-bench-key-bench-key-0123456789")

    def store_info() -> str:
        return redis_info(store) if redis else sqlite_info(tmp / "sessions.sqlite3")

    proc, url = start_gateway(a.codemcp, config, env)
    try:
        await make_sessions(url, 20)  # warm: workers started, allocator settled
        print(f"baseline:        gateway RSS {rss_mib(proc.pid):6.1f} MiB; store {store_info()}")
        for round_ in range(1, a.rounds + 1):
            started = time.monotonic()
            with anyio.fail_after(a.timeout):
                await make_sessions(url, a.sessions)
            took = time.monotonic() - started
            print(f"round {round_}, {a.sessions} sessions: gateway RSS {rss_mib(proc.pid):6.1f} MiB; "
                  f"store {store_info()} (made in {took:.1f} s)")
            await anyio.sleep(a.idle + 12)  # the gateway sweeps every 5 s, the store at most every minute
            print(f"round {round_}, after expiry:   gateway RSS {rss_mib(proc.pid):6.1f} MiB; store {store_info()}")
    finally:
        proc.kill()
        if redis:
            redis.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codemcp", required=True)
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--idle", type=int, default=60, help="CODEMCP_SESSION_IDLE_SECS: longer than making them takes")
    ap.add_argument("--store", choices=["file", "redis"], default="file")
    ap.add_argument("--rounds", type=int, default=2, help="make and expire that many batches: growth from one to the next is a leak")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    anyio.run(amain, ap.parse_args())


if __name__ == "__main__":
    main()
