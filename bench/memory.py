"""memory.py: the in-process gateway's resident memory at rest, after the escape corpus, after a mixed load.

    .deps/py2/bin/python bench/memory.py --codemcp PATH [--minutes 60] [--before OTHER_CODEMCP]

Starts one stdio gateway (Monty in-process, the escape corpus's limits: 3 s per run, 256 MiB budget)
with two upstreams, `odd` (tests/servers/odd_server.py) and `fs` (server-filesystem on a scratch
directory), and prints its VmRSS (and RssAnon, the part the allocator decides; the rest is the
binary's code pages):

1. at rest: after connecting and 20 warm-up runs;
2. after the escape corpus: every single-session case of sandbox-tests/ (placeholders filled as
   tests/sandbox_corpus/ fills them), once, in file order;
3. after a mixed load of `--minutes`: a rotation of small runs, tool calls, 8 MB tool arguments,
   runs that build and drop 10-200 MiB, runs stopped by the memory or time limit, and errors;
   VmRSS every minute (min / max of the samples);
4. at rest again, 5 s later.

With `--before`, the same runs on a second binary first (e.g. a build of main), and both columns
print side by side. The gateway's runs are not checked: the corpus's verdicts are the test's job.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
FILESYSTEM = "@modelcontextprotocol/server-filesystem/dist/index.js"
LIMITS = {"CODEMCP_EXEC_TIMEOUT_MS": "3000", "CODEMCP_MAX_SLEEP_MS": "1000",
          "CODEMCP_MAX_TOOL_CALLS": "200", "CODEMCP_MAX_SOURCE_BYTES": "65536",
          "CODEMCP_FALLBACK": "none", "CODEMCP_LOG": "error", "CODEMCP_ISOLATION": "MONTY"}

# The mixed load: one of each per round, in this order. Its gateway allows 30 s per run (the busy
# loop asks for 2 s), so that no legitimate run overruns inside a builtin on a loaded machine: a run
# frozen there keeps its memory by design (docs/security.md) and would retire the engine.
MIXED = [
    ("print", "print(sum(range(1000)))"),
    ("tool call", "print(odd_echo_json(value='hello'))"),
    ("10 tool calls", "for i in range(10):\n    odd_echo_json(value=str(i))"),
    ("8 MB argument", "r = odd_echo_json(value='x' * 8_000_000)\nprint(len(r))\nr = None"),
    ("10 MiB string", "s = 'y' * (10 << 20)\nprint(len(s))"),
    ("200k small objects", "d = {str(i): [i, str(i)] for i in range(200_000)}\nprint(len(d))\nd = None"),
    ("list of 10 KB strings to the limit", "l = []\nwhile True:\n    l.append('x' * 10_000)"),
    ("json round trip", "import json\nv = json.loads(json.dumps([{'k': i, 'v': 'z' * 100} for i in range(20_000)]))\nprint(len(v))"),
    ("error", "raise ValueError('x' * 100_000)"),
    ("busy to its 2 s time limit", "while True:\n    pass"),
    ("keep 1 MB in the session", "kept = 'k' * 1_000_000"),
]


def status_kib(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def rss(pid: int) -> tuple[float, float]:
    """VmRSS and RssAnon in MiB."""
    return (status_kib(pid, "VmRSS") or 0) / 1024, (status_kib(pid, "RssAnon") or 0) / 1024


CODEMCP = ""


def child_pid_of_any() -> int | None:
    """The newest child of this process running the binary measured."""
    return child_pid_of(CODEMCP)


def child_pid_of(exe: str) -> int | None:
    me, want = str(os.getpid()), os.path.realpath(exe)
    found = None
    for d in sorted(Path("/proc").iterdir(), key=lambda d: int(d.name) if d.name.isdigit() else 0):
        if not d.name.isdigit():
            continue
        try:
            ppid = (d / "stat").read_text().rsplit(")", 1)[1].split()[1]
            if ppid == me and os.path.realpath(d / "exe") == want:
                found = int(d.name)
        except (OSError, IndexError):
            continue
    return found


def corpus_cases(root: Path, outside: Path, config: Path, codemcp: str) -> list[tuple[str, str]]:
    """(name, code) of every single-session case, placeholders filled."""
    values = {"ROOT": str(root), "OUTSIDE": str(outside), "CONFIG": str(config), "GATEWAY_BIN": codemcp,
              "GATEWAY_PID": "1", "GATEWAY_PORT": "9", "GATEWAY_URL": "http://127.0.0.1:9/mcp",
              "DECOY_PORT": "9", "CONTROL_PORT": "9"}
    cases = []
    for path in sorted((ROOT / "sandbox-tests").glob("*__*.py")):
        text = path.read_text()
        if "# --- session" in text:
            continue  # several sessions: the test runs those on an HTTP gateway
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        cases.append((path.stem, text))
    return cases


async def measure(a: argparse.Namespace, codemcp: str) -> dict[str, str]:
    global CODEMCP
    CODEMCP = codemcp
    tmp = Path(tempfile.mkdtemp(prefix="codemcp-memory-"))
    (tmp / "root").mkdir()
    (tmp / "outside").mkdir()
    (tmp / "root" / "in.txt").write_text("inside\n")
    node = shutil.which("node") or "node"
    config = tmp / "config.json"
    config.write_text(json.dumps({"mcpServers": {
        "odd": {"command": a.python, "args": [str(ROOT / "tests/servers/odd_server.py")],
                "env": {"ODD_LOG_LEVEL": "WARNING"}},
        "fs": {"command": node, "args": [str(Path(a.node_modules) / FILESYSTEM), str(tmp / "root")],
               "policy": {"*": "allow"}},
    }}))
    env = dict(os.environ, **LIMITS)
    env.pop("CODEMCP_MONTY_BIN", None)  # in-process only: no worker to move runs to
    out: dict[str, str] = {}

    def row(label: str, pid: int, note: str = "") -> None:
        vm, anon = rss(pid)
        out[label] = f"{vm:6.0f} MiB ({anon:4.0f} anon)"
        print(f"  {label:34} {out[label]}  {note}", flush=True)

    def gateway(errlog, **extra: str):
        params = StdioServerParameters(command=codemcp, args=["--config", str(config)], env=dict(env, **extra))
        return Client(stdio_client(params, errlog=errlog), cache=None)

    print(f"binary {codemcp}")
    with (tmp / "stderr.log").open("w") as errlog:
        # The corpus, on a gateway of its own: a run frozen inside one builtin may retire its
        # in-process engine, and the mixed load must run on one that takes runs.
        async with gateway(errlog) as gw:
            pid = await warm(gw)
            row("at rest", pid)
            cases = corpus_cases(tmp / "root", tmp / "outside", config, codemcp)
            started = time.monotonic()
            for _, code in cases:
                await run(gw, code)
            await anyio.sleep(1)
            took = time.monotonic() - started
            retired = "no longer takes runs" in await run(gw, "print(1 + 1)")
            row("after the escape corpus", pid, f"{len(cases)} cases in {took:.0f} s"
                + ("; the engine retired" if retired else ""))
            await anyio.sleep(5)
            row("after the corpus, 5 s later", pid)
        async with gateway(errlog, CODEMCP_EXEC_TIMEOUT_MS="30000") as gw:
            pid = await warm(gw)
            row("at rest (second gateway)", pid)
            samples: list[float] = []
            outcomes: dict[str, int] = {}
            first: dict[str, str] = {}
            rounds, started, next_sample = 0, time.monotonic(), time.monotonic() + 60
            while time.monotonic() - started < a.minutes * 60:
                for name, code in MIXED:
                    kind = error_type(await run_result(gw, code, 2000 if name.startswith("busy") else None))
                    outcomes[kind] = outcomes.get(kind, 0) + 1
                    if kind not in first:
                        first[kind] = code.splitlines()[0]
                rounds += 1
                if time.monotonic() >= next_sample:
                    samples.append(rss(pid)[0])
                    next_sample += 60
                    print(f"    minute {len(samples):3}: {samples[-1]:.0f} MiB", flush=True)
            await anyio.sleep(1)
            retired = "no longer takes runs" in await run(gw, "print(1 + 1)")
            row("after the mixed load", pid, f"{a.minutes:g} min, {rounds} rounds of {len(MIXED)} runs: "
                + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
                + ("; the engine retired" if retired else ""))
            for kind, code in sorted(first.items()):
                print(f"    {kind:20} first from {code!r}")
            if samples:
                out["mixed load, per-minute min / max"] = f"{min(samples):.0f} / {max(samples):.0f} MiB"
                print(f"  {'mixed load, per-minute min / max':34} {out['mixed load, per-minute min / max']}")
            await anyio.sleep(5)
            row("after the mixed load, 5 s later", pid)
    return out


async def warm(gw: Client) -> int:
    for _ in range(20):
        await run(gw, "print(1 + 1)")
    await run(gw, "odd_echo_json(value='warm')")  # the upstream has started
    pid = child_pid_of_any()
    if pid is None:
        raise SystemExit("cannot find the gateway's pid")
    return pid


async def run_result(gw: Client, code: str, timeout_ms: int | None = None):
    """The call's result, None when no answer came within 60 s."""
    args: dict = {"code": code} | ({"timeout_ms": timeout_ms} if timeout_ms else {})
    with anyio.move_on_after(60):
        return await gw.call_tool("execute_python", args)
    return None


async def run(gw: Client, code: str) -> str:
    """The result's text (empty when no answer came within 60 s)."""
    result = await run_result(gw, code)
    return "" if result is None else "".join(getattr(c, "text", "") for c in result.content)


def error_type(result) -> str:
    """"ok", the error's type, or "no answer"."""
    if result is None:
        return "no answer"
    if not result.is_error:
        return "ok"
    error = (result.structured_content or {}).get("error") or {}
    return str(error.get("type", "error"))


async def amain(a: argparse.Namespace) -> int:
    print(f"codemcp memory bench: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    results = []
    for label, binary in (("before", a.before), ("after", a.codemcp)):
        if binary:
            print(f"-- {label}")
            results.append((label, await measure(a, binary)))
    if len(results) == 2:
        print()
        print(f"  {'':34} {'before':>22} {'after':>22}")
        for key in results[1][1]:
            print(f"  {key:34} {results[0][1].get(key, '-'):>22} {results[1][1][key]:>22}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--codemcp", required=True, help="the codemcp binary to measure")
    p.add_argument("--before", help="another codemcp binary, measured first, printed side by side")
    p.add_argument("--minutes", type=float, default=60, help="length of the mixed load (default 60)")
    p.add_argument("--python", default=os.environ.get("CODEMCP_TEST_PY2", str(ROOT / ".deps/py2/bin/python")),
                   help="Python with mcp 2.x, for the odd server")
    p.add_argument("--node-modules", default=os.environ.get("CODEMCP_TEST_NODE_MODULES", str(ROOT / ".deps/node/node_modules")))
    return anyio.run(amain, p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
