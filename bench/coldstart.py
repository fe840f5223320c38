#!/usr/bin/env python3
"""coldstart.py: how soon a freshly launched codemcp answers.

    .deps/py2/bin/python bench/coldstart.py --codemcp PATH [--node-modules DIR] [--runs N] [--startup-wait-ms MS]

For each configuration, codemcp is launched over stdio N times; each time the
script writes `initialize` at once and times, from just before the launch:

    initialize   the answer to `initialize`
    tools/list   the answer to the first `tools/list` (sent right after `initialized`)

Configurations: no upstream; 1 and 4 copies of node server-everything; one
upstream that never answers its handshake (`sleep 600`). The table shows the
median of the runs (min and max in brackets). The JSON-RPC is spoken by hand on
the pipes, so no client library's own start-up is counted. Exit status: 0 when
every run answered, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EVERYTHING = "@modelcontextprotocol/server-everything/dist/index.js"
ANSWER_TIMEOUT_S = 60.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "coldstart-bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def configs(node_modules: Path) -> list[tuple[str, dict[str, Any]]]:
    everything = {"command": "node", "args": [str(node_modules / EVERYTHING), "stdio"]}
    silent = {"command": "sleep", "args": ["600"]}
    return [
        ("0 upstreams", {}),
        ("1 x everything", {"everything": everything}),
        ("4 x everything", {f"everything{i}": everything for i in range(1, 5)}),
        ("1 never answers", {"silent": silent}),
        ("everything + silent", {"everything": everything, "silent": silent}),
    ]


class Gateway:
    """One codemcp process and a line reader over its stdout."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, request_id: int) -> dict[str, Any]:
        """Reads messages until the answer to `request_id` (notifications are skipped)."""
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                if line.strip():
                    message = json.loads(line)
                    if message.get("id") == request_id:
                        return message
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                raise TimeoutError(f"no answer to request {request_id} within {ANSWER_TIMEOUT_S} s")
            assert self.proc.stdout is not None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError("codemcp closed its stdout")
            self.buffer += chunk

    def close(self) -> None:
        self.selector.close()
        self.proc.kill()
        self.proc.wait()


def one_run(codemcp: str, config: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(ms to initialize, ms to tools/list, length of the description)."""
    launched = time.perf_counter()
    gateway = Gateway([codemcp, "--config", str(config), "serve"], env)
    try:
        gateway.send(INITIALIZE)
        gateway.answer(1)
        initialized = time.perf_counter()
        gateway.send(INITIALIZED)
        gateway.send(TOOLS_LIST)
        listed = gateway.answer(2)
        done = time.perf_counter()
        if "result" not in listed:
            raise RuntimeError(f"tools/list failed: {listed.get('error')}")
        description = listed["result"]["tools"][0].get("description", "")
        return (initialized - launched) * 1e3, (done - launched) * 1e3, len(description)
    finally:
        gateway.close()


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):8.0f} ({min(values):.0f}-{max(values):.0f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--codemcp", required=True, help="the codemcp binary (a release build)")
    parser.add_argument("--node-modules", default=".deps/node/node_modules", type=Path)
    parser.add_argument("--runs", type=int, default=5, help="launches per configuration (default 5)")
    parser.add_argument(
        "--startup-wait-ms", type=int, default=None, help="CODEMCP_STARTUP_WAIT_MS (default: codemcp's own, 5000)"
    )
    args = parser.parse_args()
    env = dict(os.environ)
    env.setdefault("CODEMCP_FALLBACK", "none")
    env["CODEMCP_LOG"] = "warn"
    if args.startup_wait_ms is not None:
        env["CODEMCP_STARTUP_WAIT_MS"] = str(args.startup_wait_ms)
    failures = 0
    print(f"{'configuration':<22} {'initialize ms':>22} {'first tools/list ms':>24} {'description':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, servers in configs(args.node_modules.resolve()):
            config = Path(tmp) / "mcp.json"
            config.write_text(json.dumps({"mcpServers": servers}))
            inits: list[float] = []
            lists: list[float] = []
            sizes: set[int] = set()
            for _ in range(args.runs):
                try:
                    init_ms, list_ms, size = one_run(args.codemcp, config, env)
                except (OSError, TimeoutError, EOFError, RuntimeError, ValueError) as e:
                    print(f"{name}: ERROR {e}", file=sys.stderr)
                    failures += 1
                    continue
                inits.append(init_ms)
                lists.append(list_ms)
                sizes.add(size)
            if inits:
                sizes_text = ",".join(str(s) for s in sorted(sizes))
                print(f"{name:<22} {summary(inits):>22} {summary(lists):>24} {sizes_text:>12}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
