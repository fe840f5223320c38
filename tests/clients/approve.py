#!/usr/bin/env python3
"""approve.py: a PyPI `mcp` 2.x client whose user answers approval requests from a script.

    approve.py URL|stdio --mode legacy|auto|default --answers '["accept", "decline", ...]' --calls '["code", ...]'
               [--no-elicitation] [--header K=V] [--also URL2] [--per-call]
               [--command '["codemcp", "--config", "mcp.json"]']

Connects to codemcp over Streamable HTTP (or, given `stdio`, starts --command
and speaks over its stdin/stdout, the child inheriting this environment),
declares elicitation (unless --no-elicitation) and runs each snippet of
--calls with `execute_python`, in order, passing the session handle back.
With --per-call, every call opens a connection (an MCP session, or a gateway
process over stdio) of its own, like a hosted connector; the state goes on
only through the handle. With --also, requests alternate
between URL and URL2 like a round-robin load balancer, and the report lists
where each went ("routes"). Each elicitation the server sends is
answered with the next entry of --answers: "accept" (the form's defaults:
this call), "session" (accept, for the rest of the session), "decline",
"cancel", or "wait:S" (sleep S seconds first, then accept). Prints one JSON
report: the protocol, every elicitation message received, every
`input_required` result the server gave ("input_required", as sent), and
every result.
"""
from __future__ import annotations

import argparse
import json
import os
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2 as httpx
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class RoundRobin(httpx.AsyncBaseTransport):
    """Sends each request to the next of `urls` in turn, and notes where
    each JSON-RPC request went."""

    def __init__(self, urls: list[str], routes: list[dict[str, Any]]) -> None:
        self.targets = [httpx.URL(u) for u in urls]
        self.routes = routes
        self.turn = 0
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = self.targets[self.turn % len(self.targets)]
        self.turn += 1
        request.url = request.url.copy_with(host=target.host, port=target.port)
        try:
            body = json.loads(request.content or b"{}")
        except ValueError:
            body = {}
        if isinstance(body, dict) and "method" in body:
            params = body.get("params") or {}
            self.routes.append({"to": str(target.port), "method": body["method"],
                                "retry": "requestState" in params})
        return await self.inner.handle_async_request(request)


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def amain(a: argparse.Namespace) -> None:
    answers: list[str] = json.loads(a.answers)
    asked: list[dict[str, Any]] = []

    async def on_elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(dump(params))
        answer = answers.pop(0) if answers else "decline"
        if answer.startswith("wait:"):
            await anyio.sleep(float(answer.split(":", 1)[1]))
            answer = "accept"
        if answer == "accept":
            return types.ElicitResult(action="accept", content={})
        if answer == "session":
            return types.ElicitResult(action="accept", content={"scope": "the rest of this session"})
        return types.ElicitResult(action=answer)

    headers = dict(h.split("=", 1) for h in a.header)
    report: dict[str, Any] = {"asked": asked, "results": [], "routes": [], "input_required": []}
    callback = None if a.no_elicitation else on_elicit

    async def connect(stack: AsyncExitStack) -> Client:
        if a.url == "stdio":
            command = json.loads(a.command)
            server: Any = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        else:
            transport = RoundRobin([a.url, *a.also], report["routes"]) if a.also else None
            http_client = (httpx.AsyncClient(headers=headers, transport=transport, timeout=httpx.Timeout(60.0))
                           if transport else create_mcp_http_client(headers=headers))
            http = await stack.enter_async_context(http_client)
            server = streamable_http_client(a.url, http_client=http)
        # "default": the mode the SDK picks when given none (2.3.0: "auto").
        mode = {} if a.mode == "default" else {"mode": a.mode}
        client = await stack.enter_async_context(
            Client(server, elicitation_callback=callback, cache=None, **mode))
        report["protocol"] = str(client.protocol_version)
        record_input_required(client, report["input_required"])
        return client

    handle = None
    async with AsyncExitStack() as stack:
        client = None
        for code in json.loads(a.calls):
            if client is None or a.per_call:
                await stack.aclose()
                client = await connect(stack)
            args = {"code": code} | ({"session": handle} if handle else {})
            result = await client.call_tool("execute_python", args)
            structured = result.structured_content or {}
            handle = structured.get("session", handle)
            report["results"].append(dump(result))
    print(json.dumps(report))


def record_input_required(client: Client, into: list[Any]) -> None:
    """Notes every `input_required` result as the server sent it; the client
    then answers it as it always does."""
    send = client.session.call_tool

    async def call_tool(*args: Any, **kwargs: Any) -> Any:
        result = await send(*args, **kwargs)
        if isinstance(result, types.InputRequiredResult):
            into.append(dump(result))
        return result

    client.session.call_tool = call_tool  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("--mode", default="legacy")
    ap.add_argument("--answers", default="[]")
    ap.add_argument("--calls", required=True)
    ap.add_argument("--no-elicitation", action="store_true")
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--also", action="append", default=[])
    ap.add_argument("--per-call", action="store_true")
    ap.add_argument("--command", default="[]")
    anyio.run(amain, ap.parse_args())


if __name__ == "__main__":
    main()
