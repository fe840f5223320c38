#!/usr/bin/env python3
"""frameworks.py: the client-matrix probe for agent frameworks' MCP clients, used
programmatically (no model is called): --client openai-agents | pydantic-ai | langchain.

Each adapter drives the framework's own MCP layer (OpenAI Agents SDK `MCPServerStdio` /
`MCPServerStreamableHttp`, pydantic-ai `MCPToolset`, langchain-mcp-adapters
`MultiServerMCPClient` and its LangChain tools) as an agent run would, and says which
capabilities the framework has no way to use. See common.py for the report.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import AsyncExitStack
from importlib.metadata import version as pkg_version
from typing import Any

import anyio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as c  # noqa: E402
from common import Adapter, Unsupported, args_of  # noqa: E402


class OpenAIAgents(Adapter):

    def title(self) -> str:
        return f"OpenAI Agents SDK {pkg_version('openai-agents')} (mcp {pkg_version('mcp')})"
    approval_gap = "MCPServer takes no elicitation callback; the call is refused, nothing runs"
    progress_gap = "MCPServer.call_tool takes no progress callback"

    async def open(self, stack: AsyncExitStack) -> Any:
        from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

        async def on_message(message: Any) -> None:
            if type(getattr(message, "root", message)).__name__ == "ToolListChangedNotification":
                self.changes.append("notification")

        # The default client_session_timeout_seconds (5 s) fails calls that take longer.
        common = {"client_session_timeout_seconds": 120, "message_handler": on_message, "name": "codemcp"}
        if self.a.target == "stdio":
            cmd = self.a.command
            server: Any = MCPServerStdio({"command": cmd[0], "args": cmd[1:], "env": c.stdio_env()}, **common)
        else:
            server = MCPServerStreamableHttp({"url": self.a.url, "timeout": 60}, **common)
        await server.connect()
        stack.push_async_callback(server.cleanup)
        return server

    async def call(self, h: Any, code: str, session: str | None = None, progress: bool = False) -> dict[str, Any]:
        return c.structured(await h.call_tool("execute_python", args_of(code, session)))

    async def tools(self, h: Any) -> list[tuple[str, str]]:
        return [(t.name, t.description or "") for t in await h.list_tools()]

    async def resources(self, h: Any) -> tuple[list[str], str]:
        uris = [str(r.uri) for r in (await h.list_resources()).resources]
        contents = (await h.read_resource("codemcp://sdk.pyi")).contents
        return uris, getattr(contents[0], "text", "") if contents else ""

    def protocol(self, h: Any) -> str | None:
        init = getattr(h, "server_initialize_result", None)
        version = (getattr(init, "protocol_version", None) or getattr(init, "protocolVersion", None)
                   or getattr(h.session, "protocol_version", None))
        return str(version) if version else None


class PydanticAI(Adapter):

    def title(self) -> str:
        return f"pydantic-ai {pkg_version('pydantic-ai-slim')} (fastmcp {pkg_version('fastmcp-slim')}, mcp {pkg_version('mcp')})"
    list_changed_gap = ("on 2026-07-28 FastMCP opens no subscriptions/listen stream, so the tool cache "
                        "(cache_tools=True) is never invalidated: new tools appear after reconnecting")

    async def open(self, stack: AsyncExitStack) -> Any:
        from pydantic_ai.mcp import MCPToolset

        async def on_elicit(message: str, _type: Any, params: Any, _context: Any) -> Any:
            from mcp.types import ElicitResult

            self.asked.append(message)
            return ElicitResult(action="accept", content={})

        async def on_progress(progress: float, _total: Any, _message: Any) -> None:
            self.progress.append(progress)

        async def on_message(message: Any) -> None:
            if type(getattr(message, "root", message)).__name__ == "ToolListChangedNotification":
                self.changes.append("notification")

        if self.a.target == "stdio":
            from fastmcp.client.transports import StdioTransport

            cmd = self.a.command
            target: Any = StdioTransport(command=cmd[0], args=cmd[1:], env=c.stdio_env())
        else:
            target = self.a.url
        toolset = MCPToolset(target, elicitation_handler=on_elicit, progress_handler=on_progress,
                             message_handler=on_message, tool_error_behavior="error", read_timeout=120)
        await stack.enter_async_context(toolset)
        return toolset

    async def call(self, h: Any, code: str, session: str | None = None, progress: bool = False) -> dict[str, Any]:
        from fastmcp.exceptions import ToolError

        try:
            result = await h.direct_call_tool("execute_python", args_of(code, session))
        except ToolError as e:  # an isError result (tool_error_behavior="error")
            return {"error": str(e)}
        return result if isinstance(result, dict) else {"text": result}

    async def tools(self, h: Any) -> list[tuple[str, str]]:
        return [(t.name, t.description or "") for t in await h.list_tools()]

    async def resources(self, h: Any) -> tuple[list[str], str]:
        uris = [str(r.uri) for r in await h.list_resources()]
        text = await h.read_resource("codemcp://sdk.pyi")
        return uris, text if isinstance(text, str) else json.dumps(str(text))

    def protocol(self, h: Any) -> str | None:
        session = getattr(h.client, "session", None)
        version = getattr(session, "protocol_version", None)
        return str(version) if version else None


ADAPTERS: dict[str, type[Adapter]] = {"openai-agents": OpenAIAgents, "pydantic-ai": PydanticAI}
try:  # langchain-mcp-adapters lives in the mcp 1.x venv, the others in the mcp 2.x one
    from langchain_adapter import Langchain

    ADAPTERS["langchain"] = Langchain
except ImportError:
    pass


class Probe:
    def __init__(self, a: Any) -> None:
        self.a = a
        self.changes: list[str] = []
        self.asked: list[Any] = []
        self.progress: list[float] = []
        self.ad = ADAPTERS[a.client](a, self.changes, self.asked, self.progress)
        self.r = c.Report(self.ad.title())

    async def main(self) -> None:
        r, ad = self.r, self.ad
        async with AsyncExitStack() as stack:
            h = None

            async def connect() -> None:
                nonlocal h
                h = await ad.open(stack)
                r.out["protocol"] = ad.protocol(h)
                r.passed("connect", ad.connect_note)

            await r.run("connect", connect, timeout=None)
            if h is None:
                return
            await r.run("list", lambda: self.listed(h))
            await r.run("call", lambda: self.called(h))
            await r.run("state_implicit", lambda: self.implicit(h))
            await r.run("state_handle", lambda: self.by_handle(h))
            await r.run("approval", lambda: self.approval(h))
            await r.run("list_changed", lambda: self.list_changed(h), timeout=40)
            await r.run("progress", lambda: self.progress_cell(h))
            await r.run("cancellation", lambda: self.cancellation(h))
            await r.run("resources", lambda: self.resources(h))

    async def listed(self, h: Any) -> None:
        names = [n for n, _ in await self.ad.tools(h)]
        self.r.check("list", names == ["execute_python"], f"tools: {names}")

    async def called(self, h: Any) -> None:
        s = await self.ad.call(h, c.CALL)
        self.r.check("call", s.get("result") == 42, f"result {s}")

    async def implicit(self, h: Any) -> None:
        await self.ad.call(h, c.SET_N)
        s = await self.ad.call(h, c.GET_N)
        if s.get("result") != 42 and c.stateless(self.a.target, self.r.out.get("protocol")):
            return self.r.unsupported("state_implicit", c.STATELESS_HTTP)
        if self.ad.per_call_sessions and s.get("result") != 42:
            return self.r.unsupported("state_implicit", "each tool call opens an MCP session of its own "
                                      "(over stdio a gateway of its own); state goes on through the handle")
        self.r.check("state_implicit", s.get("result") == 42, f"second call: {s.get('error') or s}")

    async def by_handle(self, h: Any) -> None:
        handle = (await self.ad.call(h, c.SET_M)).get("session")
        if not handle:
            return self.r.fail("state_handle", "the result named no session")
        async with AsyncExitStack() as stack:
            other = await self.ad.open(stack)
            s = await self.ad.call(other, c.GET_M, session=handle)
        self.r.check("state_handle", s.get("result") == 10, f"on a new connection: {s.get('error') or s}")

    async def approval(self, h: Any) -> None:
        try:
            s = await self.ad.call(h, c.APPROVAL)
        except Exception as e:  # noqa: BLE001 - a refusal may come as an exception
            s = {"error": c.describe(e)}
        if self.ad.approval_gap:
            if s.get("result") == "sent to a@b.c":
                return self.r.fail("approval", "the ask tool ran without asking")
            if "elicitation" not in json.dumps(s.get("error") or s):
                return self.r.fail("approval", f"refused for another reason: {s.get('error') or s}")
            return self.r.unsupported("approval", self.ad.approval_gap)
        self.r.check("approval", bool(self.asked) and s.get("result") == "sent to a@b.c",
                     f"asked {len(self.asked)} times; {s.get('error') or s}")

    async def list_changed(self, h: Any) -> None:
        name = f"late_{self.a.tag}"
        before = len(self.changes)  # earlier changes (the upstream coming up) do not count
        await self.ad.call(h, c.add_tool(name))
        with anyio.move_on_after(10):
            while len(self.changes) == before:
                await anyio.sleep(0.1)
        notified = len(self.changes) > before
        listed = False
        with anyio.move_on_after(10):  # a notification may come before the gateway's catalog has the tool
            while not listed:
                listed = any(f"odd_{name}(" in d for _, d in await self.ad.tools(h))
                if not (listed or notified):
                    break
                await anyio.sleep(0.3)
        if notified:
            return self.r.check("list_changed", listed, "notified, but the new tool is not listed",
                                "notifications/tools/list_changed")
        if listed:
            return self.r.passed("list_changed", "no notification reached the framework; it lists the tools again each time")
        if self.a.target == "stdio":
            # A new connection would be a new gateway with a new upstream, which lacks the added tool.
            return self.r.unsupported("list_changed", self.ad.list_changed_gap)
        # The gateway has the tool (a new connection lists it): the framework did not learn of it.
        async with AsyncExitStack() as stack:
            fresh = any(f"odd_{name}(" in d for _, d in await self.ad.tools(await self.ad.open(stack)))
        if fresh:
            return self.r.unsupported("list_changed", self.ad.list_changed_gap)
        self.r.fail("list_changed", "no notification, and even a new connection does not list the new tool")

    async def progress_cell(self, h: Any) -> None:
        if self.ad.progress_gap:
            return self.r.unsupported("progress", self.ad.progress_gap)
        s = await self.ad.call(h, c.PROGRESS, progress=True)
        await anyio.sleep(0.3)
        self.r.check("progress", s.get("result") == "done" and len(self.progress) >= 1,
                     f"{len(self.progress)} progress notifications; {s}")

    async def cancellation(self, h: Any) -> None:
        with anyio.move_on_after(1.5):
            await self.ad.call(h, c.LONG)
            return self.r.fail("cancellation", "the long run finished before it was cancelled")
        await anyio.sleep(1.0)
        with anyio.fail_after(20):
            first = await self.ad.call(h, c.COUNTER)
            await anyio.sleep(1.0)
            second = await self.ad.call(h, c.COUNTER)
        a, b = first.get("result"), second.get("result")
        errors = str(first.get("error") or second.get("error") or "")[:120]
        if self.ad.per_call_sessions and self.a.target == "stdio" and a == b == 1:
            # Each call had an upstream of its own: the cancelled call's gateway ended with its connection.
            return self.r.passed("cancellation", "the cancelled call's connection closes, and its gateway ends")
        stopped = isinstance(a, int) and b == a + 1
        if not stopped and self.ad.cancel_gap and isinstance(a, int) and isinstance(b, int):
            return self.r.unsupported("cancellation", self.ad.cancel_gap)
        print(f"probe: cancellation: counter {a} then {b} {errors}", file=sys.stderr)
        self.r.check("cancellation", stopped, "the run kept calling tools after the cancellation",
                     "the task is cancelled")

    async def resources(self, h: Any) -> None:
        try:
            uris, text = await self.ad.resources(h)
        except Unsupported as e:
            return self.r.unsupported("resources", str(e))
        if "codemcp://sdk.pyi" not in uris:
            return self.r.fail("resources", f"resources: {uris}")
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
