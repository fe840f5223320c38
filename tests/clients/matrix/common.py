"""common.py: what every client-matrix probe shares (standard library only).

A probe drives ONE client against ONE codemcp transport through the same
scenario and prints one JSON object:

    {"client": "mcp 2.3.0 (auto)", "protocol": "2026-07-28",
     "cells": {"connect": {"status": "pass", "note": "..."}, ...}}

Each cell's status is "pass", "unsupported" (the client has no way to do it;
the note says why) or "fail" (the note says what happened). The gateway is
configured by tests/real_peers/client_matrix.rs: one upstream, `odd`
(tests/servers/odd_server.py), whose `Send_Email` tool is on `ask`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from contextlib import AsyncExitStack
from typing import Any, Awaitable, Callable

CELLS = [
    "connect",
    "list",
    "call",
    "state_implicit",
    "state_handle",
    "approval",
    "list_changed",
    "progress",
    "cancellation",
    "resources",
]

# The snippets each cell runs through `execute_python`.
CALL = "6 * 7"
SET_N, GET_N = "n = 20", "n + 22"
SET_M, GET_M = "m = 5", "m * 2"
APPROVAL = "odd_send_email(to='a@b.c', subject='hi')"
PROGRESS = "for i in range(3):\n    odd_add_numbers(a=i, b=1)\n'done'"
# Long enough (30 s of tool calls) that only a cancellation ends it in time.
LONG = "for i in range(300):\n    odd_counter()\n    odd_slow(ms=100)\n'finished'"
COUNTER = "odd_counter()"


def add_tool(name: str) -> str:
    return f"odd_add_tool(name={name!r})"


def args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", choices=["stdio", "http"], required=True)
    ap.add_argument("--url", default="")
    ap.add_argument("--command", default="[]", help="stdio: the gateway command as a JSON list")
    ap.add_argument("--client", default="", help="which client (or mode) the probe drives")
    ap.add_argument("--tag", default="t", help="unique per run: names the tool list_changed adds")
    a = ap.parse_args()
    a.command = json.loads(a.command)
    return a


STATELESS_HTTP = ("2026-07-28 over HTTP has no MCP session: each call without the handle "
                  "starts a new session")


def stateless(target: str, protocol: Any) -> bool:
    """Whether implicit state cannot exist: the 2026-07-28 protocol over HTTP."""
    return target == "http" and str(protocol)[:1].isdigit() and str(protocol) >= "2026-07-28"


def structured(result: Any) -> dict[str, Any]:
    """structuredContent of a CallToolResult (a model or a dict), else {}."""
    if isinstance(result, dict):
        s = result.get("structuredContent") or result.get("structured_content")
    else:
        s = getattr(result, "structured_content", None)
        if s is None:
            s = getattr(result, "structuredContent", None)
    return s if isinstance(s, dict) else {}


class Report:
    def __init__(self, client: str) -> None:
        self.out: dict[str, Any] = {"client": client, "cells": {}}
        self.started = time.monotonic()

    def set(self, cell: str, status: str, note: str = "") -> None:
        assert cell in CELLS and status in ("pass", "unsupported", "fail"), (cell, status)
        self.out["cells"][cell] = {"status": status, "note": note}

    def passed(self, cell: str, note: str = "") -> None:
        self.set(cell, "pass", note)

    def unsupported(self, cell: str, why: str) -> None:
        self.set(cell, "unsupported", why)

    def fail(self, cell: str, what: str) -> None:
        self.set(cell, "fail", what[:300])

    def check(self, cell: str, ok: bool, what: str, note: str = "") -> None:
        if ok:
            self.passed(cell, note)
        else:
            self.fail(cell, what)

    async def run(self, cell: str, body: Callable[[], Awaitable[None]], timeout: float | None = 60) -> None:
        """Runs one cell; an exception or a timeout fails it (the next cells still run). A body
        that enters contexts which outlive it (connecting) runs without a deadline (timeout=None):
        their cancel scopes must not be exited inside another."""
        import anyio

        try:
            if timeout is None:
                await body()
            else:
                with anyio.fail_after(timeout):
                    await body()
        except Exception as e:  # noqa: BLE001 - any failure is the cell's verdict
            self.fail(cell, describe(e))
            print(f"probe: {cell}: {traceback.format_exc()}", file=sys.stderr)
        if cell not in self.out["cells"]:
            self.fail(cell, "the probe recorded no verdict")

    def print(self) -> None:
        for cell in CELLS:
            self.out["cells"].setdefault(cell, {"status": "fail", "note": "not reached"})
        self.out["elapsed_s"] = round(time.monotonic() - self.started, 1)
        print(json.dumps(self.out))
        sys.stdout.flush()


def describe(e: BaseException) -> str:
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    if isinstance(e, TimeoutError):
        return "TimeoutError: no answer in time"
    return f"{type(e).__name__}: {str(e) or repr(e)}"[:300]


def stdio_env() -> dict[str, str]:
    """The gateway child inherits the probe's whole environment (the test sets it)."""
    return dict(os.environ)


class Unsupported(Exception):
    """The framework has no way to do this; the message says why."""


class Adapter:
    """One framework's MCP client. `open` makes a new connection (over stdio a new gateway)."""

    def title(self) -> str:
        """The framework and its versions (read at run time: each lives in another venv)."""
        raise NotImplementedError

    def __init__(self, a: Any, changes: list[str], asked: list[Any], progress: list[float]) -> None:
        self.a, self.changes, self.asked, self.progress = a, changes, asked, progress

    async def open(self, stack: AsyncExitStack) -> Any:
        raise NotImplementedError

    async def call(self, h: Any, code: str, session: str | None = None, progress: bool = False) -> dict[str, Any]:
        raise NotImplementedError

    async def tools(self, h: Any) -> list[tuple[str, str]]:
        raise NotImplementedError

    async def resources(self, h: Any) -> tuple[list[str], str]:
        raise NotImplementedError

    def protocol(self, h: Any) -> str | None:
        return None

    # What the framework cannot do, by cell (None: it can).
    approval_gap: str | None = None
    progress_gap: str | None = None
    list_changed_gap = "the framework did not learn of the new tool"
    connect_note = ""
    # Why a cancelled call's run may go on (None: a run that goes on fails the cell).
    cancel_gap: str | None = None
    # Each call opens a connection of its own (over stdio a gateway of its own).
    per_call_sessions = False


def args_of(code: str, session: str | None) -> dict[str, Any]:
    return {"code": code} | ({"session": session} if session else {})
