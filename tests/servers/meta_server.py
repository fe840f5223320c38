#!/usr/bin/env python3
"""meta_server: a stdio MCP server (PyPI `mcp` 2.x) that says what `_meta` its
tool calls arrived with, so tests can see the trace context (SEP-414:
`traceparent`, `tracestate`) a gateway forwards upstream.

    seen_meta()   the `_meta` of this very call, as a dict ({} when none came)
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("meta")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def seen_meta(ctx: Context) -> dict[str, Any]:
    """The `_meta` this call arrived with."""
    meta = ctx.request_context.meta or {}
    return {"meta": {key: value for key, value in dict(meta).items()}}


if __name__ == "__main__":
    server.run()
