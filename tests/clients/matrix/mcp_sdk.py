#!/usr/bin/env python3
"""mcp_sdk.py: the client-matrix probe for PyPI `mcp` (2.x `Client` in --client auto|legacy,
1.x `ClientSession`). See common.py for the report and the scenario."""

from __future__ import annotations

import os
import sys
from contextlib import AsyncExitStack
from importlib.metadata import version as pkg_version
from typing import Any

import anyio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as c  # noqa: E402

VERSION = pkg_version("mcp")
MAJOR = int(VERSION.split(".")[0])

from mcp import ClientSession, StdioServerParameters, types  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402


class Probe:
    def __init__(self, a: Any) -> None:
        self.a = a
        self.mode = a.client if MAJOR >= 2 else "legacy"
        label = f"mcp {VERSION}" + (f" ({self.mode})" if MAJOR >= 2 else "")
        self.r = c.Report(label)
        self.asked: list[Any] = []
        self.changes = 0  # tools/list_changed heard (notifications and listen events)
        self.progress: list[float] = []

    async def on_elicit(self, _context: Any, params: Any) -> Any:
        self.asked.append(params)
        return types.ElicitResult(action="accept", content={})

    async def on_message(self, message: Any) -> None:
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            self.changes += 1

    async def connect(self, stack: AsyncExitStack) -> Any:
        """A new connection (over stdio: a new gateway process): a Client (2.x) or ClientSession (1.x)."""
        a = self.a
        if a.target == "stdio":
            params = StdioServerParameters(command=a.command[0], args=a.command[1:], env=c.stdio_env())
        if MAJOR >= 2:
            from mcp import Client

            if a.target == "stdio":
                server: Any = params
            else:
                http = await stack.enter_async_context(create_mcp_http_client())
                server = streamable_http_client(a.url, http_client=http)
            return await stack.enter_async_context(
                Client(server, mode=self.mode, elicitation_callback=self.on_elicit,
                       message_handler=self.on_message, cache=None))
        if a.target == "stdio":
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            http = await stack.enter_async_context(create_mcp_http_client())
            read, write, _ = await stack.enter_async_context(streamable_http_client(a.url, http_client=http))
        session = await stack.enter_async_context(
            ClientSession(read, write, elicitation_callback=self.on_elicit, message_handler=self.on_message))
        init = await session.initialize()
        session.protocol_version = init.protocolVersion  # type: ignore[attr-defined]
        return session

    async def call(self, client: Any, code: str, **kw: Any) -> dict[str, Any]:
        result = await client.call_tool("execute_python", {"code": code, **kw.pop("extra", {})}, **kw)
        return c.structured(result)

    async def main(self) -> None:
        r = self.r
        async with AsyncExitStack() as stack:
            client = None

            async def connect() -> None:
                nonlocal client
                client = await self.connect(stack)
                r.out["protocol"] = str(client.protocol_version)
                r.passed("connect", f"protocol {client.protocol_version}")

            await r.run("connect", connect, timeout=None)
            if client is None:
                return
            await self.cells(client)

    async def cells(self, client: Any) -> None:
        r = self.r

        async def listed() -> None:
            tools = (await client.list_tools()).tools
            r.check("list", [t.name for t in tools] == ["execute_python"], f"tools: {[t.name for t in tools]}")

        async def called() -> None:
            s = await self.call(client, c.CALL)
            r.check("call", s.get("result") == 42, f"structuredContent {s}")

        async def implicit() -> None:
            await self.call(client, c.SET_N)
            s = await self.call(client, c.GET_N)
            if s.get("result") != 42 and c.stateless(self.a.target, client.protocol_version):
                return r.unsupported("state_implicit", c.STATELESS_HTTP)
            r.check("state_implicit", s.get("result") == 42, f"second call: {s.get('error') or s}")

        async def by_handle() -> None:
            handle = (await self.call(client, c.SET_M)).get("session")
            if not handle:
                return r.fail("state_handle", "the result named no session")
            async with AsyncExitStack() as stack:
                other = await self.connect(stack)
                s = await self.call(other, c.GET_M, extra={"session": handle})
            r.check("state_handle", s.get("result") == 10, f"on a new connection: {s.get('error') or s}",
                    "on a new connection" + (" (a new gateway process)" if self.a.target == "stdio" else ""))

        async def approval() -> None:
            s = await self.call(client, c.APPROVAL)
            ok = bool(self.asked) and s.get("result") == "sent to a@b.c"
            r.check("approval", ok, f"asked {len(self.asked)} times; {s.get('error') or s}",
                    "elicitation" if self.mode == "legacy" else "elicitation in an input_required round")

        await r.run("list", listed)
        await r.run("call", called)
        await r.run("state_implicit", implicit)
        await r.run("state_handle", by_handle)
        await r.run("approval", approval)
        await r.run("list_changed", lambda: self.list_changed(client), timeout=40)
        await r.run("progress", lambda: self.progress_cell(client))
        await r.run("cancellation", lambda: self.cancellation(client), timeout=60)
        await r.run("resources", lambda: self.resources(client))

    async def list_changed(self, client: Any) -> None:
        modern = MAJOR >= 2 and str(client.protocol_version) >= "2026-07-28"
        name = f"late_{self.a.tag}"
        async with anyio.create_task_group() as tg:
            if modern:
                # 2026-07-28 has no unsolicited notifications: the client opens a listen stream.
                async def listen(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                    async with client.listen(tools_list_changed=True) as sub:
                        task_status.started()
                        async for _ in sub:
                            self.changes += 1

                await tg.start(listen)
            before = self.changes  # earlier changes (the upstream coming up) do not count
            await self.call(client, c.add_tool(name))
            listed = False
            with anyio.move_on_after(20):
                while not listed:
                    while self.changes == before:
                        await anyio.sleep(0.1)
                    before = self.changes
                    listed = f"odd_{name}(" in ((await client.list_tools()).tools[0].description or "")
            tg.cancel_scope.cancel()
        if not listed:
            return self.r.fail("list_changed", "no tools/list_changed naming the new tool within 20 s")
        self.r.passed("list_changed", "subscriptions/listen" if modern else "notifications/tools/list_changed")

    async def progress_cell(self, client: Any) -> None:
        async def on_progress(progress: float, _total: Any, _message: Any) -> None:
            self.progress.append(progress)

        s = await self.call(client, c.PROGRESS, progress_callback=on_progress)
        await anyio.sleep(0.3)  # notifications may trail the result
        self.r.check("progress", s.get("result") == "done" and len(self.progress) >= 1,
                     f"{len(self.progress)} progress notifications; {s}", "one per finished tool call")

    async def cancellation(self, client: Any) -> None:
        # Abandon the call: mcp 2.x then sends notifications/cancelled (stdio) or aborts the POST (HTTP).
        with anyio.move_on_after(1.5):
            await self.call(client, c.LONG)
            return self.r.fail("cancellation", "the long run finished before it was cancelled")
        await anyio.sleep(1.0)
        try:
            with anyio.fail_after(15):
                a = (await self.call(client, c.COUNTER)).get("result")
                await anyio.sleep(1.0)
                b = (await self.call(client, c.COUNTER)).get("result")
        except TimeoutError:
            if MAJOR < 2:
                return self.r.unsupported("cancellation", f"mcp {VERSION} sends no notifications/cancelled when a "
                                          "call is abandoned: the run goes on and the session's next calls wait")
            return self.r.fail("cancellation", "the session stayed busy after the cancellation")
        stopped = isinstance(a, int) and isinstance(b, int) and b == a + 1
        if MAJOR < 2 and not stopped:
            return self.r.unsupported(
                "cancellation", f"mcp {VERSION} sends no notifications/cancelled when a call is abandoned")
        print(f"probe: cancellation: counter {a} then {b}", file=sys.stderr)
        self.r.check("cancellation", stopped, "the run kept calling tools after the cancellation",
                     "notifications/cancelled" if self.a.target == "stdio" or self.mode == "legacy"
                     else "the POST is aborted")

    async def resources(self, client: Any) -> None:
        uris = [str(x.uri) for x in (await client.list_resources()).resources]
        if "codemcp://sdk.pyi" not in uris:
            return self.r.fail("resources", f"resources: {uris}")
        uri: Any = "codemcp://sdk.pyi"
        if MAJOR < 2:
            from pydantic import AnyUrl

            uri = AnyUrl(uri)
        contents = (await client.read_resource(uri)).contents
        text = getattr(contents[0], "text", "") if contents else ""
        self.r.check("resources", "def odd_send_email(" in text, "codemcp://sdk.pyi lacks the signatures")


async def amain() -> None:
    p = Probe(c.args())
    try:
        await p.main()
    except Exception as e:  # noqa: BLE001 - teardown errors must not hide the cells
        p.r.out["teardown_error"] = c.describe(e)
    p.r.print()


if __name__ == "__main__":
    anyio.run(amain)
