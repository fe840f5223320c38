#!/usr/bin/env python3
"""startup.py: how fast N real upstream servers become usable behind one gateway.

    python3 bench/startup.py --codemcp target/release/codemcp [-n 12] [--kind slow|everything|real]
                             [--sleep 0.5] [--node-modules .deps/node_modules] [--runs 3]

For each run it starts one gateway over stdio with N servers configured and
speaks raw JSON-RPC lines to it (no client SDK, so only the gateway is timed):

    initialize        the answer to `initialize`
    first list        the first `tools/list` answer
    complete          the first description naming a function of every server
    joined            the first description with no server still starting
    rss               the gateway's VmRSS then (its own process, not the servers)

once cold (an empty state directory) and once warm (the catalog remembered by
the cold run). Beside it: the same servers started one by one directly
(spawn, initialize, tools/list each), the time a client pays without a gateway.

`--kind slow` runs tests/servers/slow_server.py (each sleeping --sleep seconds
before its handshake); `--kind everything` runs server-everything from
--node-modules; `--kind real` runs the 36 real npm and PyPI servers of
tests/real_servers/servers.json (installed by `scripts/test-deps.sh servers`; -n is
ignored) with no network (a fresh network namespace when `unshare --net` works), and
also prints each server's own start (spawn to tools/list) and the slowest one alone.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def real_servers(deps: Path, work: Path) -> dict:
    """The suite's servers (tests/real_servers/servers.json) with its placeholders filled."""
    for sub in ("files", "home", "tmp", "repo"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    (work / "files/hello.txt").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(work / "repo")], check=True)
    places = {"servers": str(deps / "servers"), "peers": str(deps / "node/node_modules"),
              "node22": str(deps / "node/node_modules/.bin/node"), "work": str(work)}

    def fill(text: str) -> str:
        for key, value in places.items():
            text = text.replace("{" + key + "}", value)
        return text

    table = json.loads((REPO / "tests/real_servers/servers.json").read_text())["servers"]
    return {name: {"command": fill(e["command"][0]), "args": [fill(a) for a in e["command"][1:]],
                   "env": {k: fill(v) for k, v in e.get("env", {}).items()}}
            for name, e in table.items()}


def no_network() -> list[str]:
    """`unshare --net --` when this user may make a network namespace, else nothing."""
    try:
        if subprocess.run(["unshare", "--net", "--", "true"], capture_output=True).returncode == 0:
            return ["unshare", "--net", "--"]
    except OSError:
        pass
    return []


def servers(kind: str, n: int, sleep: float, node_modules: Path, work: Path) -> dict:
    if kind == "real":
        return real_servers(node_modules.parent.parent, work)
    entries = {}
    for i in range(n):
        name = f"s{i}"
        if kind == "everything":
            script = node_modules / "@modelcontextprotocol/server-everything/dist/index.js"
            entries[name] = {"command": "node", "args": [str(script), "stdio"]}
        else:
            control = work / f"{name}.json"
            control.write_text(json.dumps({"sleep_s": sleep}))
            entries[name] = {"command": sys.executable,
                             "args": [str(REPO / "tests/servers/slow_server.py"), str(control)]}
    return entries


class Lines:
    """JSON-RPC over a child's stdin/stdout, one message a line."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.buf = b""
        self.next_id = 1

    def send(self, method: str, params: dict | None = None, notify: bool = False) -> int:
        msg: dict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            msg["id"] = self.next_id
            self.next_id += 1
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return msg.get("id", 0)

    def answer(self, msg_id: int, timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg.get("id") == msg_id:
                    return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to request {msg_id}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise EOFError("the process closed its output")
                self.buf += chunk

    def request(self, method: str, params: dict | None = None) -> dict:
        return self.answer(self.send(method, params))


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def gateway_run(codemcp: str, config: Path, state: Path, names: list[str], prefix: list[str]) -> dict:
    env = dict(os.environ, XDG_STATE_HOME=str(state), CODEMCP_LOG="warn", CODEMCP_FALLBACK="none",
               HOME=str(config.parent / "home"), TMPDIR=str(config.parent / "tmp"))
    started = time.monotonic()
    proc = subprocess.Popen([*prefix, codemcp, "--config", str(config)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    rpc = Lines(proc)
    out: dict = {}
    try:
        rpc.request("initialize", INIT)
        out["initialize"] = time.monotonic() - started
        rpc.send("notifications/initialized", notify=True)
        deadline = started + 300
        while time.monotonic() < deadline:
            listed = rpc.request("tools/list", {})
            now = time.monotonic() - started
            out.setdefault("first list", now)
            text = listed["result"]["tools"][0]["description"]
            if "complete" not in out and all(
                    re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in names):
                out["complete"] = now
            if "complete" in out and not still_starting(rpc):
                out["joined"] = now
                break
            time.sleep(0.05)
        out["rss MiB"] = rss_kib(proc.pid) / 1024
    finally:
        proc.kill()
        proc.wait()
    return out


def still_starting(rpc) -> bool:
    """Whether a server is still starting: the description no longer says (it is a pure
    function of the catalog), but `search_tools` ends with one `<server>_*` hit per such
    server, whatever the query."""
    code = '[str(h) for h in search_tools("zqxjkv no such words", limit=1)]'
    ran = rpc.request("tools/call", {"name": "execute_python", "arguments": {"code": code}})
    result = ran.get("result", {})
    text = "".join(c.get("text", "") for c in result.get("content", []))
    return bool(result.get("isError")) or "_*" in text


def direct_run(entries: dict, prefix: list[str], work: Path) -> tuple[float, dict[str, float]]:
    """The servers one by one: the total, and each one's own spawn-to-tools/list time."""
    started = time.monotonic()
    each = {}
    for name, entry in entries.items():
        alone = time.monotonic()
        env = dict(os.environ, HOME=str(work / "home"), TMPDIR=str(work / "tmp"), **entry.get("env", {}))
        proc = subprocess.Popen([*prefix, entry["command"], *entry["args"]], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        rpc = Lines(proc)
        try:
            rpc.request("initialize", INIT)
            rpc.send("notifications/initialized", notify=True)
            rpc.request("tools/list", {})
        finally:
            proc.kill()
            proc.wait()
        each[name] = time.monotonic() - alone
    return time.monotonic() - started, each


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codemcp", default=str(REPO / "target/release/codemcp"))
    ap.add_argument("-n", type=int, default=12)
    ap.add_argument("--kind", choices=["slow", "everything", "real"], default="slow")
    ap.add_argument("--sleep", type=float, default=0.5)
    ap.add_argument("--node-modules", type=Path, default=REPO / ".deps/node/node_modules")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows: dict[str, list[float]] = {}
    directs = []
    slowest: list[tuple[float, str]] = []
    prefix = no_network() if args.kind == "real" else []
    if args.kind == "real":
        print(f"no network: {' '.join(prefix) or 'not isolated (unshare --net failed)'}", flush=True)
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            entries = servers(args.kind, args.n, args.sleep, args.node_modules, work)
            config = work / "mcp.json"
            config.write_text(json.dumps({"mcpServers": entries}))
            names = list(entries)
            for label in ("cold", "warm"):
                got = gateway_run(args.codemcp, config, work / "state", names, prefix)
                for key, value in got.items():
                    rows.setdefault(f"{label} {key}", []).append(value)
                print(f"run {run + 1} {label}: " + ", ".join(f"{k} {v:.3f}" for k, v in got.items()), flush=True)
            total, each = direct_run(entries, prefix, work)
            directs.append(total)
            slowest.append(max((t, n) for n, t in each.items()))
            print(f"run {run + 1} direct, one by one: {total:.3f} s (slowest alone: {slowest[-1][1]} "
                  f"{slowest[-1][0]:.3f} s)", flush=True)
            if args.kind == "real":
                print("  each alone: " + ", ".join(f"{n} {t:.2f}" for n, t in each.items()), flush=True)
    count = len(names)
    print(f"\n{count} x {args.kind} servers, {args.runs} runs, medians (seconds; rss in MiB):")
    for key, values in rows.items():
        print(f"  gateway {key:<22} {statistics.median(values):8.3f}")
    print(f"  direct, one by one           {statistics.median(directs):8.3f}")
    print(f"  slowest server alone         {statistics.median(t for t, _ in slowest):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
