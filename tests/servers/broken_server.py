#!/usr/bin/env python3
"""broken_server: a stdio MCP server that breaks the protocol on purpose.

A real process speaking a broken protocol is the only way to make the gateway
face these faults, so this is a test peer, not a mock. Standard library only;
it handshakes properly and then misbehaves per tool:

    ok(text)         a normal text result
    pid()            its process id, as text
    not_json         writes a line that is not JSON, then never answers
    not_jsonrpc      writes JSON that is not JSON-RPC, then never answers
    noise_then_ok    writes both kinds of junk, then answers properly
    wrong_id         answers with an id nobody asked for
    bad_result       answers with the right id but a result that is not a CallToolResult
    error_response   answers with a JSON-RPC error object
    invalid_utf8     writes a line of invalid UTF-8, then never answers
    close_stdout     closes its stdout and stays alive
    huge(mib)        a text result of `mib` MiB (one JSON line)
    endless_line     writes `mib` MiB without a newline, then never answers
    half_message     writes the start of an answer without its line end, then never answers
"""

from __future__ import annotations

import json
import os
import sys
import time

OUT = sys.stdout.buffer
TOOLS = [
    ("ok", {"text": {"type": "string"}}, ["text"]),
    ("pid", {}, []),
    ("not_json", {}, []),
    ("not_jsonrpc", {}, []),
    ("noise_then_ok", {}, []),
    ("wrong_id", {}, []),
    ("bad_result", {}, []),
    ("error_response", {}, []),
    ("invalid_utf8", {}, []),
    ("close_stdout", {}, []),
    ("huge", {"mib": {"type": "integer"}}, ["mib"]),
    ("endless_line", {"mib": {"type": "integer"}}, ["mib"]),
    ("half_message", {}, []),
]


def write(raw: bytes) -> None:
    OUT.write(raw)
    OUT.flush()


def send(message: dict) -> None:
    write(json.dumps(message).encode() + b"\n")


def reply(msg_id, result) -> None:
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def text(msg_id, value: str) -> None:
    reply(msg_id, {"content": [{"type": "text", "text": value}], "isError": False})


def call_tool(msg_id, name: str, args: dict) -> None:
    if name == "ok":
        text(msg_id, f"ok {args.get('text', '')}")
    elif name == "pid":
        text(msg_id, str(os.getpid()))
    elif name == "not_json":
        write(b"this is not JSON at all\n")
    elif name == "not_jsonrpc":
        write(b'{"hello": "world"}\n[1, 2, 3]\n')
    elif name == "noise_then_ok":
        write(b'starting up...\n{"not": "a message"}\n')
        text(msg_id, "fine after all")
    elif name == "wrong_id":
        text(f"not-{msg_id}", "for nobody")
    elif name == "bad_result":
        reply(msg_id, {"content": "not a list", "isError": "perhaps"})
    elif name == "error_response":
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32000, "message": "kaput: the backend is down"}})
    elif name == "invalid_utf8":
        write(b'{"jsonrpc": "2.0", "id": \xff\xfe}\n')
    elif name == "close_stdout":
        OUT.close()
        os.close(1)
        while True:
            time.sleep(60)
    elif name == "huge":
        # Streamed, so this process never holds the whole line.
        mib = int(args.get("mib", 1))
        head = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": "@"}]}})
        before, after = head.split("@")
        write(before.encode())
        chunk = b"x" * (1 << 20)
        for _ in range(mib):
            write(chunk)
        write(after.encode() + b"\n")
    elif name == "endless_line":
        chunk = b"y" * (1 << 20)
        for _ in range(int(args.get("mib", 1))):
            write(chunk)
    elif name == "half_message":
        write(json.dumps({"jsonrpc": "2.0", "id": msg_id})[:-1].encode() + b', "result": {"cont')
    else:
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32602, "message": f"unknown tool {name}"}})


def main() -> None:
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
                "serverInfo": {"name": "broken", "version": "0"},
            })
        elif method == "tools/list":
            tools = [
                {"name": n, "description": f"misbehaves: {n}", "annotations": {"readOnlyHint": True},
                 "inputSchema": {"type": "object", "properties": p, "required": r}}
                for n, p, r in TOOLS
            ]
            reply(msg_id, {"tools": tools})
        elif method == "tools/call":
            call_tool(msg_id, params.get("name", ""), params.get("arguments") or {})
        elif method == "ping":
            reply(msg_id, {})
        else:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
