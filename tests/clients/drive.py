#!/usr/bin/env python3
"""drive.py: a generic, scriptable MCP client for codemcp's integration tests.

    drive.py --target stdio --command CMD [ARGS...] [--env K=V] [--mode auto|legacy]
    drive.py --target http --url URL [--header K=V ...] [--mode auto|legacy]

Reads a JSON list of steps from stdin, runs them in order on ONE connection and
prints ONE JSON object to stdout:

    {"client": {"mcp": "2.3.0", "mode": "auto"},
     "protocol": "2026-07-28", "server_info": {...}, "capabilities": {...},
     "instructions": "...", "listen": "ok" | "unsupported: ..." | null,
     "results": [ <one entry per step> ]}

Steps (each may carry "timeout": seconds, default 60):
    {"op": "list_tools"}                       -> ListToolsResult (all pages merged)
    {"op": "call", "tool": NAME, "args": {..}} -> CallToolResult (isError results are results)
    {"op": "list_resources"}                   -> ListResourcesResult (all pages merged)
    {"op": "read_resource", "uri": URI}        -> ReadResourceResult
    {"op": "list_prompts"}                     -> ListPromptsResult
    {"op": "wait_tools_changed", "timeout": 10}-> {"changed": true, "via": [...], "count": n}
    {"op": "wait_described", "text": T, "timeout": 10}
                                               -> {"described": true, "lists": n}: lists the tools
                                                  after each tools/list_changed until one's description
                                                  holds T (a notification may announce an earlier change)
    {"op": "sleep", "s": 0.5}                  -> {"slept": 0.5}

A result is the SDK model dumped with model_dump(mode="json", by_alias=True,
exclude_none=True); a failed step is {"error": "<Type>: <message>"} and the
remaining steps still run. If connecting fails, the object has "error" and an
empty "results", and the exit status is 1.

Works with PyPI `mcp` 2.x (`mcp.Client`; --mode auto probes the 2026-07-28
protocol and falls back to initialize, --mode legacy forces initialize) and
with `mcp` 1.x (`stdio_client` / `streamable_http_client` + `ClientSession`,
always initialize; --mode is ignored). tools/list_changed is observed through
`subscriptions/listen` on 2026-07-28 connections (opened right after connect)
and through the message handler on initialize-era connections. A stdio child
inherits drive.py's whole environment (plus --env), unlike the SDK default.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from contextlib import AsyncExitStack
from importlib.metadata import version as pkg_version
from typing import Any

import anyio

MCP_VERSION = pkg_version("mcp")
MCP_MAJOR = int(MCP_VERSION.split(".")[0])

from mcp import ClientSession, StdioServerParameters, types  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402


def dump(model: Any) -> Any:
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return model


def err(e: BaseException) -> dict[str, str]:
    # Unwrap single-exception groups (anyio task groups) for a readable message.
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    msg = str(e) or repr(e)
    if hasattr(e, "error") and getattr(e.error, "message", None):  # McpError (1.x) carries ErrorData
        msg = f"{e.error.message} (code {e.error.code})"
    return {"error": f"{type(e).__name__}: {msg}"}


def kv_pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for it in items:
        if "=" not in it:
            raise SystemExit(f"drive.py: {what} must be K=V, got {it!r}")
        k, v = it.split("=", 1)
        out[k] = v
    return out


class Changes:
    """Counts tools/list_changed deliveries; a wait consumes all delivered so far."""

    def __init__(self) -> None:
        self.count = 0
        self.consumed = 0
        self.via: list[str] = []
        self.event = anyio.Event()

    def record(self, via: str) -> None:
        self.count += 1
        self.via.append(via)
        self.event.set()

    async def wait(self, timeout: float) -> dict[str, Any]:
        start = time.monotonic()
        with anyio.move_on_after(timeout):
            while self.count <= self.consumed:
                self.event = anyio.Event()
                await self.event.wait()
        if self.count <= self.consumed:
            raise TimeoutError(f"no tools/list_changed within {timeout}s")
        n = self.count - self.consumed
        via = sorted(set(self.via[self.consumed :]))
        self.consumed = self.count
        return {"changed": True, "via": via, "count": n, "elapsed_s": round(time.monotonic() - start, 3)}


def make_message_handler(changes: Changes):
    async def handler(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changes.record("notification")
        elif isinstance(root, Exception):
            print(f"drive.py: transport error: {root!r}", file=sys.stderr)

    return handler


class Driver:
    """Uniform async API over mcp 2.x `Client` and mcp 1.x `ClientSession`."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.changes = Changes()
        self.out: dict[str, Any] = {"client": {"mcp": MCP_VERSION, "mode": args.mode if MCP_MAJOR >= 2 else "legacy"}}
        self.c: Any = None  # Client (2.x) or ClientSession (1.x)

    def _stdio_params(self) -> StdioServerParameters:
        env = dict(os.environ)
        env.update(kv_pairs(self.args.env, "--env"))
        return StdioServerParameters(command=self.args.command[0], args=self.args.command[1:], env=env)

    async def connect(self, stack: AsyncExitStack) -> None:
        a = self.args
        headers = kv_pairs(a.header, "--header")
        handler = make_message_handler(self.changes)
        if MCP_MAJOR >= 2:
            from mcp import Client

            if a.target == "stdio":
                server: Any = self._stdio_params()
            else:
                http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                server = streamable_http_client(a.url, http_client=http)
            self.c = await stack.enter_async_context(Client(server, mode=a.mode, message_handler=handler, cache=None))
            self.out["protocol"] = self.c.protocol_version
            self.out["server_info"] = dump(self.c.server_info)
            self.out["capabilities"] = dump(self.c.server_capabilities)
            self.out["instructions"] = self.c.instructions
        else:
            if a.target == "stdio":
                read, write = await stack.enter_async_context(stdio_client(self._stdio_params()))
            else:
                http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                read, write, _sid = await stack.enter_async_context(streamable_http_client(a.url, http_client=http))
            self.c = await stack.enter_async_context(ClientSession(read, write, message_handler=handler))
            init = await self.c.initialize()
            self.out["protocol"] = init.protocolVersion
            self.out["server_info"] = dump(init.serverInfo)
            self.out["capabilities"] = dump(init.capabilities)
            self.out["instructions"] = init.instructions

    async def start_listen(self, tg: Any) -> None:
        """On 2026-07-28 connections, keep a subscriptions/listen stream open for tool changes."""
        self.out["listen"] = None
        if MCP_MAJOR < 2:
            return
        if not str(self.c.protocol_version) >= "2026-07-28":  # initialize era: notifications only
            return

        async def run(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            try:
                async with self.c.listen(tools_list_changed=True) as sub:
                    self.out["listen"] = "ok"
                    task_status.started()
                    async for _event in sub:
                        self.changes.record("listen")
            except Exception as e:  # noqa: BLE001
                if self.out["listen"] == "ok":  # the stream ended after it was open (e.g. the server died)
                    self.out["listen_ended"] = err(e)["error"]
                    return
                self.out["listen"] = "unsupported: " + err(e)["error"]
                try:
                    task_status.started()
                except RuntimeError:
                    pass

        with anyio.fail_after(15):
            await tg.start(run)

    async def wait_described(self, text: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        lists = 0
        while True:
            lists += 1
            listed = await self.list_tools()
            if any(text in (t.get("description") or "") for t in listed["tools"]):
                return {"described": True, "lists": lists}
            await self.changes.wait(deadline - time.monotonic())

    async def list_tools(self) -> Any:
        tools, cursor, first = [], None, None
        while True:
            if MCP_MAJOR >= 2:
                page = await self.c.list_tools(cursor=cursor)
            else:
                page = await self.c.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            first = first or page
            tools.extend(page.tools)
            cursor = page.nextCursor if MCP_MAJOR < 2 else page.next_cursor
            if not cursor:
                break
        d = dump(first)
        d["tools"] = [dump(t) for t in tools]
        d.pop("nextCursor", None)
        return d

    async def list_resources(self) -> Any:
        res, cursor, first = [], None, None
        while True:
            if MCP_MAJOR >= 2:
                page = await self.c.list_resources(cursor=cursor)
            else:
                page = await self.c.list_resources(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            first = first or page
            res.extend(page.resources)
            cursor = page.nextCursor if MCP_MAJOR < 2 else page.next_cursor
            if not cursor:
                break
        d = dump(first)
        d["resources"] = [dump(r) for r in res]
        d.pop("nextCursor", None)
        return d

    async def step(self, s: dict[str, Any]) -> Any:
        op = s.get("op")
        if op == "list_tools":
            return await self.list_tools()
        if op == "call":
            return dump(await self.c.call_tool(s["tool"], s.get("args") or {}))
        if op == "list_resources":
            return await self.list_resources()
        if op == "read_resource":
            uri = s["uri"]
            if MCP_MAJOR < 2:
                from pydantic import AnyUrl

                uri = AnyUrl(uri)
            return dump(await self.c.read_resource(uri))
        if op == "list_prompts":
            return dump(await self.c.list_prompts())
        if op == "wait_tools_changed":
            return await self.changes.wait(float(s.get("timeout", 10)))
        if op == "wait_described":
            return await self.wait_described(s["text"], float(s.get("timeout", 10)))
        if op == "sleep":
            await anyio.sleep(float(s.get("s", 0)))
            return {"slept": s.get("s", 0)}
        raise ValueError(f"unknown op {op!r}")


async def run_steps(d: Driver, steps: list[dict[str, Any]]) -> None:
    async with anyio.create_task_group() as tg:
        await d.start_listen(tg)
        for s in steps:
            timeout = float(s.get("timeout", 60)) + (1 if s.get("op") in ("wait_tools_changed", "wait_described") else 0)
            try:
                result: Any = None
                with anyio.move_on_after(timeout) as scope:
                    result = await d.step(s)
                if scope.cancelled_caught:
                    result = {"error": f"TimeoutError: step {s.get('op')!r} took longer than {timeout:g}s"}
                d.out["results"].append(result)
            except Exception as e:  # noqa: BLE001
                d.out["results"].append(err(e))
        tg.cancel_scope.cancel()


async def amain(args: argparse.Namespace, steps: list[dict[str, Any]]) -> int:
    d = Driver(args)
    d.out["results"] = []
    rc = 0
    try:
        # One scope around everything: its deadline bounds connecting and is lifted afterwards
        # (a fail_after around connect alone would be exited before the contexts it entered).
        with anyio.CancelScope(deadline=anyio.current_time() + args.connect_timeout) as connect_scope:
            async with AsyncExitStack() as stack:
                await d.connect(stack)
                connect_scope.deadline = math.inf
                await run_steps(d, steps)
        if connect_scope.cancelled_caught:
            raise TimeoutError(f"connecting took longer than {args.connect_timeout}s")
    except BaseException as e:  # noqa: BLE001 - report connection failures as JSON
        if isinstance(e, KeyboardInterrupt):
            raise
        if not d.out["results"] and "protocol" not in d.out:
            d.out.update(err(e))
            rc = 1
        else:
            d.out["teardown_error"] = err(e)["error"]
    print(json.dumps(d.out))
    sys.stdout.flush()
    return rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=["stdio", "http"], required=True)
    ap.add_argument("--command", nargs=argparse.REMAINDER, default=[], help="stdio: the server command and its args (must be last)")
    ap.add_argument("--url", help="http: the Streamable HTTP endpoint, e.g. http://127.0.0.1:8931/mcp")
    ap.add_argument("--header", action="append", default=[], metavar="K=V", help="http: extra request header")
    ap.add_argument("--env", action="append", default=[], metavar="K=V", help="stdio: extra environment variable for the child")
    ap.add_argument("--mode", choices=["auto", "legacy"], default="auto", help="mcp 2.x only: auto (2026-07-28, falls back) or legacy (initialize)")
    ap.add_argument("--connect-timeout", type=float, default=30.0)
    args = ap.parse_args()
    if args.target == "stdio" and not args.command:
        ap.error("--target stdio needs --command CMD [ARGS...]")
    if args.target == "http" and not args.url:
        ap.error("--target http needs --url")
    raw = sys.stdin.read()
    steps = json.loads(raw) if raw.strip() else []
    if not isinstance(steps, list):
        ap.error("stdin must be a JSON list of steps")
    sys.exit(anyio.run(amain, args, steps))


if __name__ == "__main__":
    main()
