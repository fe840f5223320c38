"""langchain_adapter.py: langchain-mcp-adapters' `MultiServerMCPClient` for frameworks.py.

It is driven the way its documentation shows: `get_tools()` gives LangChain tools,
and each tool call opens an MCP session of its own (over stdio, a gateway process
of its own), so state goes on only through the `session` handle.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from importlib.metadata import version as pkg_version
from typing import Any

import common as c
from common import Adapter, args_of


class Langchain(Adapter):

    def title(self) -> str:
        return f"langchain-mcp-adapters {pkg_version('langchain-mcp-adapters')} (mcp {pkg_version('mcp')})"
    per_call_sessions = True
    # mcp 1.30.0's stdio_client raises BrokenResourceError when a message (the gateway's
    # tools/list_changed once its upstreams are up) arrives while a per-call session closes.
    connect_note = "get_tools() is retried once on BrokenResourceError (mcp 1.30.0 stdio, see the quirks)"
    cancel_gap = ("cancelling a call's task sends no notifications/cancelled (mcp 1.x), nor ends its "
                  "session: the run goes on")
    list_changed_gap = ("no callback for notifications/tools/list_changed; get_tools() lists afresh, "
                        "over stdio from a gateway (and upstream) of its own")

    async def open(self, stack: AsyncExitStack) -> Any:
        from langchain_mcp_adapters.callbacks import Callbacks
        from langchain_mcp_adapters.client import MultiServerMCPClient
        from mcp import types

        async def on_progress(progress: float, _total: Any, _message: Any, _context: Any) -> None:
            self.progress.append(progress)

        async def on_elicit(_mcp_context: Any, params: Any, _context: Any) -> Any:
            self.asked.append(params)
            return types.ElicitResult(action="accept", content={})

        if self.a.target == "stdio":
            cmd = self.a.command
            connection: Any = {"transport": "stdio", "command": cmd[0], "args": cmd[1:], "env": c.stdio_env()}
        else:
            connection = {"transport": "streamable_http", "url": self.a.url}
        client = MultiServerMCPClient({"codemcp": connection},
                                      callbacks=Callbacks(on_progress=on_progress, on_elicitation=on_elicit))
        try:
            tools = await client.get_tools()
        except BaseException as e:  # noqa: BLE001 - see connect_note
            if "BrokenResource" not in repr(e):
                raise
            tools = await client.get_tools()
        return client, {t.name: t for t in tools}

    async def call(self, h: Any, code: str, session: str | None = None, progress: bool = False) -> dict[str, Any]:
        _client, tools = h
        call = {"type": "tool_call", "id": "1", "name": "execute_python", "args": args_of(code, session)}
        message = await tools["execute_python"].ainvoke(call)
        artifact = getattr(message, "artifact", None) or {}
        structured = artifact.get("structured_content") if isinstance(artifact, dict) else None
        return structured if isinstance(structured, dict) else {"text": str(message.content)}

    async def tools(self, h: Any) -> list[tuple[str, str]]:
        client, _tools = h
        return [(t.name, t.description or "") for t in await client.get_tools()]

    async def resources(self, h: Any) -> tuple[list[str], str]:
        client, _tools = h
        blobs = await client.get_resources("codemcp")
        uris = [str(b.metadata.get("uri")) for b in blobs]
        text = next((b.as_string() for b in blobs if str(b.metadata.get("uri")) == "codemcp://sdk.pyi"), "")
        return uris, text
