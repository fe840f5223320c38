#!/usr/bin/env python3
"""meta_server: a stdio MCP server (PyPI `mcp` 2.x) that says what `_meta` its
tool calls arrived with, so tests can see the trace context (SEP-414:
`traceparent`, `tracestate`) a gateway forwards upstream.

    seen_meta()   the `_meta` of this very call, as a dict ({} when none came)

    python meta_server.py                # stdio (default)
    python meta_server.py --http PORT    # Streamable HTTP on http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import argparse
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
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    port = ap.parse_args().http
    if port:
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
