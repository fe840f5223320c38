#!/usr/bin/env python3
"""slow_server: a stdio MCP server whose start-up a test controls.

Usage: slow_server.py CONTROL_FILE. The control file is JSON, read at every
start (so one config entry, hence one remembered-catalog key, behaves
differently from run to run):

    {"sleep_s": 0,      seconds to sleep before reading anything (a slow start)
     "fail_first": 0,   the first K starts exit at once with an error
     "tools": ["ping"], the tool names it lists
     "version": "1",    its serverInfo version
     "instructions": "", what it says it is for (`instructions`), if anything
     "catalog": {"domain": "billing", "count": 0}}
                        instead of `tools` and `pid`: `count` generated tools of
                        a business domain, with typed parameters, descriptions
                        and read-only hints (deterministic: the same control
                        gives the same list, byte for byte)

Each start appends its pid to CONTROL_FILE.starts, so a test can count starts,
and the time it began (seconds since the epoch) to CONTROL_FILE.times.
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


ENTITIES = ["invoice", "customer", "order", "ticket", "report", "account", "payment", "shipment",
            "document", "event", "task", "contact", "product", "team", "project", "alert"]
# verb -> (description, read-only, parameters as (name, JSON type, required))
VERBS = {
    "get": ("Get one {e} by its id", True, [("{e}_id", "string", True)]),
    "list": ("List {e}s, newest first", True, [("limit", "integer", False), ("cursor", "string", False)]),
    "search": ("Search {e}s by text", True, [("query", "string", True), ("limit", "integer", False)]),
    "create": ("Create a {e}", False, [("name", "string", True), ("notes", "string", False)]),
    "update": ("Change fields of a {e}", False, [("{e}_id", "string", True), ("fields", "object", True)]),
    "delete": ("Delete a {e} for good", False, [("{e}_id", "string", True), ("force", "boolean", False)]),
    "archive": ("Archive a {e}", False, [("{e}_id", "string", True)]),
    "export": ("Export {e}s as CSV", True, [("since", "string", False)]),
    "count": ("Count {e}s by status", True, [("status", "string", False)]),
    "history": ("The change history of a {e}", True, [("{e}_id", "string", True), ("limit", "integer", False)]),
}


def generated(domain: str, count: int) -> list:
    """`count` tools of `domain`: every verb of every entity, then versioned copies."""
    tools = []
    round_ = 1
    while len(tools) < count:
        for entity in ENTITIES:
            for verb, (text, read_only, params) in VERBS.items():
                if len(tools) >= count:
                    break
                suffix = "" if round_ == 1 else f"_v{round_}"
                props = {p.format(e=entity): {"type": t, "description": f"The {p.format(e=entity).replace('_', ' ')}."}
                         for p, t, _ in params}
                required = [p.format(e=entity) for p, _, r in params if r]
                tools.append({
                    "name": f"{verb}_{entity}{suffix}",
                    "description": f"{text.format(e=entity)} in {domain}.{'' if round_ == 1 else f' (API v{round_})'}",
                    "annotations": {"readOnlyHint": read_only},
                    "inputSchema": {"type": "object", "properties": props, "required": required},
                })
        round_ += 1
    return tools


def main() -> None:
    began = time.time()
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
    with open(control_path + ".times", "a") as f:
        f.write(f"{began}\n")
    if earlier < int(control.get("fail_first", 0)):
        sys.stderr.write(f"slow_server: failing start {earlier + 1} on purpose\n")
        sys.exit(3)
    time.sleep(float(control.get("sleep_s", 0)))
    names = list(control.get("tools", ["ping"])) + ["pid"]
    catalog = control.get("catalog")
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
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "slow", "version": str(control.get("version", "1"))},
            }
            if control.get("instructions"):
                result["instructions"] = control["instructions"]
            reply(msg_id, result)
        elif method == "tools/list":
            if catalog:
                tools = generated(catalog["domain"], int(catalog["count"]))
            else:
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
