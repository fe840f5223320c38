#!/usr/bin/env python3
"""A minimal MCP client (standard library only) for the packaging tests: it
initializes, calls `execute_python` once with CODE and prints the text the
gateway returned, over stdio (a command) or Streamable HTTP (a URL).

  mcp_client.py stdio CODE -- COMMAND [ARG...]
  mcp_client.py http  CODE URL [--token TOKEN] [--host HOST] [--session S]
  mcp_client.py serve-http CODE -- COMMAND [ARG...]
The third form starts `COMMAND serve --http` on a free loopback port (with this
process's environment), waits for it to listen, makes the call over HTTP and
stops it: what a user gets from `codemcp serve --http` right after installing.
After the text, a last line names the engine that ran the code (`engine: ...`).
Exit status 0 when the call returned a result that is not an error.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

PROTOCOL = "2025-06-18"
INIT = {
    "protocolVersion": PROTOCOL,
    "capabilities": {},
    "clientInfo": {"name": "codemcp-packaging-test", "version": "0"},
}


def call_args(code, session):
    args = {"code": code}
    if session:
        args["session"] = session
    return {"name": "execute_python", "arguments": args}


def over_stdio(code, command):
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(msg):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def reply(want_id):
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("id") == want_id:
                return msg
        raise SystemExit("the server closed stdout before answering request %d" % want_id)

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
    reply(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call_args(code, None)})
    result = reply(2)
    proc.stdin.close()
    proc.wait(timeout=30)
    return result


def over_http(code, url, token, host, session):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = "Bearer " + token
    if host:
        headers["Host"] = host

    def post(msg):
        req = urllib.request.Request(url, data=json.dumps(msg).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=60) as resp:
            body = resp.read().decode()
            sid = resp.headers.get("Mcp-Session-Id")
            if sid:
                headers["Mcp-Session-Id"] = sid
            if "id" not in msg:
                return None
            if resp.headers.get("Content-Type", "").startswith("text/event-stream"):
                for line in body.splitlines():
                    if line.startswith("data:") and line[5:].strip():
                        data = json.loads(line[5:])
                        if data.get("id") == msg["id"]:
                            return data
                raise SystemExit("no answer to request %d in the event stream: %r" % (msg["id"], body))
            return json.loads(body)

    post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
    headers["MCP-Protocol-Version"] = PROTOCOL
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call_args(code, session)})


# A first start may download and verify the pinned Monty worker (about 15 MB).
SERVE_WAIT_SECONDS = 300


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_http(code, command):
    port = free_port()
    # Its own process group: a launcher (npx) may start codemcp as its child.
    proc = subprocess.Popen(
        command + ["serve", "--http", "127.0.0.1:%d" % port], stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + SERVE_WAIT_SECONDS
        while True:
            if proc.poll() is not None:
                raise SystemExit("`%s serve --http` exited with %d before it listened" % (command[0], proc.returncode))
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("`%s serve --http` did not listen within %d s" % (command[0], SERVE_WAIT_SECONDS))
                time.sleep(0.2)
        return over_http(code, "http://127.0.0.1:%d/mcp" % port, None, None, None)
    finally:
        stop(proc)


def stop(proc):
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=wait)
            return
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


def main(argv):
    if len(argv) < 3 or argv[0] not in ("stdio", "http", "serve-http"):
        raise SystemExit(__doc__)
    mode, code = argv[0], argv[1]
    if mode in ("stdio", "serve-http"):
        if argv[2] != "--" or len(argv) < 4:
            raise SystemExit(__doc__)
        answer = (over_stdio if mode == "stdio" else serve_http)(code, argv[3:])
    else:
        opts = dict(zip(argv[3::2], argv[4::2]))
        answer = over_http(code, argv[2], opts.get("--token"), opts.get("--host"), opts.get("--session"))
    if "error" in answer:
        raise SystemExit("JSON-RPC error: %s" % json.dumps(answer["error"]))
    result = answer["result"]
    print("\n".join(c.get("text", "") for c in result.get("content", [])))
    print("engine: %s" % (result.get("structuredContent") or {}).get("engine"))
    return 1 if result.get("isError") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
