#!/usr/bin/env python3
"""listen_changes.py URL: a PyPI `mcp` 2.x client on the 2026-07-28 protocol.

Opens a `subscriptions/listen` stream for tool changes, lists the tools, prints
`ready` (one line), then waits up to 90 s for `tools/list_changed` on that
stream, lists the tools again and prints one JSON line:
{"protocol": "...", "before": DESCRIPTION, "after": DESCRIPTION} (the
descriptions of the first tool, `execute_python`). tests/integration/admin.rs changes the
gateway between the two lines.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def description(client: Any) -> str:
    page = await client.list_tools()
    return page.tools[0].description


async def main(url: str) -> None:
    async with create_mcp_http_client() as http:
        server = streamable_http_client(url, http_client=http)
        async with Client(server, mode="auto", cache=None) as client:
            changed = anyio.Event()

            async def listen(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
                async with client.listen(tools_list_changed=True) as stream:
                    task_status.started()
                    async for _event in stream:
                        changed.set()

            async with anyio.create_task_group() as tg:
                await tg.start(listen)
                before = await description(client)
                print("ready", flush=True)
                with anyio.fail_after(90):
                    await changed.wait()
                after = await description(client)
                out = {"protocol": str(client.protocol_version), "before": before, "after": after}
                print(json.dumps(out), flush=True)
                tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
