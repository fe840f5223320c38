#!/usr/bin/env python3
"""sandbox.py: escalation latency and idle memory of the CPython placements, side by side.

    python3 bench/sandbox.py --codemcp PATH [--runs N] [--warm N]

For each placement (the bubblewrap sandbox, then Docker when an engine answers,
else "no engine"), codemcp is launched over stdio with Monty escalating to that
placement only (CODEMCP_FALLBACK=sandbox|docker), and the JSON-RPC is spoken by
hand on the pipes (no client library's start-up counted). Per launch:

    cold   the first escalated `1 + 1` (`import statistics` makes Monty hand it
           to CPython), sent right after `initialize`: the worker is started on
           demand (the gateway begins pre-starting one at start; the call waits
           for it to dial in), so this is a worker's whole start
    spare  after that worker exits (`os._exit(0)`) and the gateway has had 2 s
           to pre-start the next one, the next escalated call: a new session's
           first call with a pool of one
    warm   then N escalated calls on the live worker: the median

and, with the session idle, the memory of everything the gateway started for
the worker (bwrap, the worker; the container's processes for Docker): resident
(VmRSS) and proportional (Pss, shared library pages split among sharers).

The table shows the median over the launches (min and max in brackets).
Exit status: 0 when every placement that can run here answered, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ANSWER_TIMEOUT_S = 60.0
ESCALATED = "import statistics\n1 + 1"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "sandbox-bench", "version": "0"},
    },
}


class Gateway:
    """One stdio codemcp, spoken to by hand."""

    def __init__(self, codemcp: str, env: dict[str, str], config: Path):
        self.proc = subprocess.Popen(
            [codemcp, "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.buf = b""
        self.next_id = 10

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self, want: int) -> dict:
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == want:
                    return message
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                raise TimeoutError(f"no answer to request {want}")
            assert self.proc.stdout is not None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("codemcp exited")
            self.buf += chunk

    def initialize(self) -> None:
        self.send(INITIALIZE)
        self.answer(1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, code: str) -> tuple[float, str]:
        """Seconds to the answer, and its text."""
        self.next_id += 1
        request = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": "execute_python", "arguments": {"code": code}},
        }
        start = time.perf_counter()
        self.send(request)
        reply = self.answer(self.next_id)
        elapsed = time.perf_counter() - start
        content = reply.get("result", {}).get("content", [{}])
        return elapsed, content[0].get("text", json.dumps(reply))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        parent = int(stat[stat.rfind(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def memory_kib(pids: list[int]) -> tuple[int, int]:
    """Summed VmRSS and Pss of `pids`, in KiB."""
    rss = pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                rss += next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            with open(f"/proc/{pid}/smaps_rollup") as f:
                pss += next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
    return rss, pss


def worker_pids(gateway: Gateway, placement: str) -> list[int]:
    """The processes the worker lives in: under the gateway for the sandbox,
    under containerd-shim for Docker (every codemcp worker container)."""
    if placement == "sandbox":
        return descendants(gateway.proc.pid)
    out = subprocess.run(
        ["docker", "ps", "-q", "--filter", "label=codemcp.worker"],
        capture_output=True, text=True, check=False,
    ).stdout.split()
    pids = []
    for container in out:
        top = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Pid}}", container],
            capture_output=True, text=True, check=False,
        ).stdout.strip()
        if top.isdigit():
            pids.append(int(top))
            pids.extend(descendants(int(top)))
    return pids


def one_launch(codemcp: str, placement: str, warm_calls: int, config: Path) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "CODEMCP_FALLBACK": placement,
            "CODEMCP_LOG": "error",
            "CODEMCP_OUTPUT": "json",
        }
    )
    gateway = Gateway(codemcp, env, config)
    try:
        gateway.initialize()
        cold, text = gateway.call(ESCALATED)
        if '"result":2' not in text.replace(" ", ""):
            raise RuntimeError(f"cold call answered: {text[:300]}")
        gateway.call("import os\nos._exit(0)")
        time.sleep(2.0)  # the pool of one fills again
        spare, _ = gateway.call(ESCALATED)
        warm = [gateway.call(ESCALATED)[0] for _ in range(warm_calls)]
        time.sleep(1.0)  # idle: one session's worker plus the pre-started spare
        pids = worker_pids(gateway, placement)
        rss, pss = memory_kib(pids)
        workers = 2  # the session's and the spare
        return {
            "cold": cold,
            "spare": spare,
            "warm": statistics.median(warm),
            "rss_mib": rss / 1024 / workers,
            "pss_mib": pss / 1024 / workers,
        }
    finally:
        gateway.close()


def docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


def cell(values: list[float], scale: float, unit: str) -> str:
    med = statistics.median(values) * scale
    return f"{med:7.1f} {unit} [{min(values) * scale:.1f}-{max(values) * scale:.1f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--codemcp", required=True)
    parser.add_argument("--runs", type=int, default=5, help="launches per placement")
    parser.add_argument("--warm", type=int, default=20, help="warm calls per launch")
    args = parser.parse_args()
    failed = False
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mcp.json"
        config.write_text('{"mcpServers": {}}')
        for placement in ("sandbox", "docker"):
            if placement == "docker" and not docker_answers():
                rows.append((placement, None, "no engine (docker info fails)"))
                continue
            try:
                runs = [one_launch(args.codemcp, placement, args.warm, config) for _ in range(args.runs)]
                rows.append((placement, runs, ""))
            except (RuntimeError, TimeoutError, EOFError) as e:
                failed = True
                rows.append((placement, None, f"FAILED: {e}"))
    print(f"escalated `1 + 1`, {args.runs} launches per placement, {args.warm} warm calls each; median [min-max]")
    print(f"{'placement':10} {'cold':>22} {'spare (pool of 1)':>22} {'warm':>22} {'idle RSS/worker':>24} {'idle PSS/worker':>24}")
    for placement, runs, note in rows:
        if runs is None:
            print(f"{placement:10} {note}")
            continue
        print(
            f"{placement:10} {cell([r['cold'] for r in runs], 1000, 'ms'):>22} "
            f"{cell([r['spare'] for r in runs], 1000, 'ms'):>22} "
            f"{cell([r['warm'] for r in runs], 1000, 'ms'):>22} "
            f"{cell([r['rss_mib'] for r in runs], 1, 'MiB'):>24} "
            f"{cell([r['pss_mib'] for r in runs], 1, 'MiB'):>24}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
