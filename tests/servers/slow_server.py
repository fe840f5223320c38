#!/usr/bin/env python3
"""slow_server: a stdio MCP server whose start-up a test controls.

Usage: slow_server.py CONTROL_FILE. The control file is JSON, read at every
start (so one config entry, hence one remembered-catalog key, behaves
differently from run to run):

    {"sleep_s": 0,      seconds to sleep before reading anything (a slow start)
     "fail_first": 0,   the first K starts exit at once with an error
     "tools": ["ping"], the tool names it lists
     "version": "1"}    its serverInfo version

Each start appends its pid to CONTROL_FILE.starts, so a test can count starts.
Tools: every listed name answers "<name> <text>"; `pid` answers its pid.
Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import time

OUT = sys.stdout.buffer


def send(message: dict) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def reply(msg_id, result) -> None:
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def main() -> None:
    control_path = sys.argv[1]
    try:
        with open(control_path) as f:
            control = json.load(f)
    except FileNotFoundError:
        control = {}
    starts_path = control_path + ".starts"
    try:
        with open(starts_path) as f:
            earlier = len(f.read().split())
    except FileNotFoundError:
        earlier = 0
    with open(starts_path, "a") as f:
        f.write(f"{os.getpid()}\n")
    if earlier < int(control.get("fail_first", 0)):
        sys.stderr.write(f"slow_server: failing start {earlier + 1} on purpose\n")
        sys.exit(3)
    time.sleep(float(control.get("sleep_s", 0)))
    names = list(control.get("tools", ["ping"])) + ["pid"]
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue  # notifications
        params = msg.get("params") or {}
        if method == "initialize":
            reply(msg_id, {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "slow", "version": str(control.get("version", "1"))},
            })
        elif method == "tools/list":
            tools = [
                {"name": n, "description": f"answers {n}", "annotations": {"readOnlyHint": True},
                 "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
                for n in names
            ]
            reply(msg_id, {"tools": tools})
        elif method == "tools/call":
            name = params.get("name", "")
            args = params.get("arguments") or {}
            value = str(os.getpid()) if name == "pid" else f"{name} {args.get('text', '')}"
            reply(msg_id, {"content": [{"type": "text", "text": value}], "isError": False})
        elif method == "ping":
            reply(msg_id, {})
        else:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
