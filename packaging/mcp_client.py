#!/usr/bin/env python3
"""A minimal MCP client (standard library only) for the packaging tests: it
initializes, calls `execute_python` once with CODE and prints the text the
gateway returned, over stdio (a command) or Streamable HTTP (a URL).

  mcp_client.py stdio CODE -- COMMAND [ARG...]
  mcp_client.py http  CODE URL [--token TOKEN] [--host HOST] [--session S]
Exit status 0 when the call returned a result that is not an error.
"""
import json
import subprocess
import sys
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


def main(argv):
    if len(argv) < 3 or argv[0] not in ("stdio", "http"):
        raise SystemExit(__doc__)
    mode, code = argv[0], argv[1]
    if mode == "stdio":
        if argv[2] != "--":
            raise SystemExit(__doc__)
        answer = over_stdio(code, argv[3:])
    else:
        opts = dict(zip(argv[3::2], argv[4::2]))
        answer = over_http(code, argv[2], opts.get("--token"), opts.get("--host"), opts.get("--session"))
    if "error" in answer:
        raise SystemExit("JSON-RPC error: %s" % json.dumps(answer["error"]))
    result = answer["result"]
    print("\n".join(c.get("text", "") for c in result.get("content", [])))
    return 1 if result.get("isError") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
