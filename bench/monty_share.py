"""monty_share.py: the share of runs Monty keeps, for agent-like sessions.

    .deps/py2/bin/python bench/monty_share.py --before OLD_codemcp --after NEW_codemcp

Each gateway is a stdio codemcp with the host CPython fallback
(`CODEMCP_FALLBACK=host`, no Docker needed) and no upstreams. The corpus
below is a set of sessions as an agent writes them: a few snippets each, one
of which needs CPython somewhere (a `del`, a standard module Monty lacks, a
class dunder, inheritance); the others are the data crunching Monty runs.
Every run's `engine` is counted; the table shows, per session and in total,
the runs on Monty for each binary side by side, and the runs that ended in
an error (a Monty gap answered as the agent's error counts there).
"""
from __future__ import annotations

import argparse
import os
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

SESSIONS: dict[str, list[str]] = {
    "report_with_del": [
        "rows = [{'id': i, 'v': i * 3 % 7} for i in range(20)]\nlen(rows)",
        "tmp = [r['v'] for r in rows]\ndel tmp[0]\ntotal = sum(tmp)\ntotal",
        "by_v = {}\nfor r in rows:\n    by_v.setdefault(str(r['v']), []).append(r['id'])\nsorted(by_v)",
        "best = max(rows, key=lambda r: r['v'])\nbest['id']",
        "summary = {'total': total, 'groups': len(by_v)}\nsummary",
        "f'{total} over {len(rows)} rows'",
    ],
    "stats_once": [
        "values = [3, 1, 4, 1, 5, 9, 2, 6]\nsorted(values)",
        "import statistics\nmedian = statistics.median(values)\nmedian",
        "def scale(xs, k):\n    return [x * k for x in xs]\nscale(values, 2)[:3]",
        "spread = max(values) - min(values)\nspread",
        "[v for v in values if v > median]",
    ],
    "helper_then_gc": [
        "def norm(s):\n    return s.strip().lower()\nnames = [norm(x) for x in ['  Ada', 'BOB ', 'cy']]\nnames",
        "import gc\ngc.collect() >= 0",
        "counts = {n: len(n) for n in names}\ncounts",
        "sum(counts.values())",
        "'-'.join(sorted(names))",
    ],
    "class_dunder": [
        "class Order:\n    pass\nOrder.__qualname__",
        "orders = [{'id': 1, 'total': 9.5}, {'id': 2, 'total': 3.0}]\nsum(o['total'] for o in orders)",
        "big = [o['id'] for o in orders if o['total'] > 5]\nbig",
        "len(orders)",
    ],
    "inheritance_stays": [
        "class Base:\n    def kind(self):\n        return 'base'\nclass Child(Base):\n    pass\nc = Child()\nc.kind()",
        "c.kind().upper()",
        "items = [1, 2, 3]\nsum(items)",
    ],
    "monty_only": [
        "data = {'a': [1, 2], 'b': [3]}\nsum(len(v) for v in data.values())",
        "flat = [x for v in data.values() for x in v]\nflat",
        "import json\njson.dumps(flat)",
    ],
}


async def run_sessions(binary: str, config: Path) -> dict[str, list[tuple[str, object]]]:
    env = dict(os.environ, CODEMCP_LOG="warn", CODEMCP_FALLBACK="host", CODEMCP_MONTY="inprocess")
    params = StdioServerParameters(command=binary, args=["--config", str(config)], env=env)
    out: dict[str, list[tuple[str, object]]] = {}
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(Client(stdio_client(params), cache=None))
        for name, snippets in SESSIONS.items():
            # A handle the gateway does not know gets a new session.
            fresh = await client.call_tool("execute_python", {"code": "None", "session": f"bench-{name}"})
            handle, runs = (fresh.structured_content or {}).get("session"), []
            for code in snippets:
                args = {"code": code, "session": handle}
                res = await client.call_tool("execute_python", args)
                sc = res.structured_content or {}
                handle = sc.get("session", handle)
                runs.append((sc.get("engine", "?"), sc.get("result") if not res.is_error else "error"))
            out[name] = runs
    return out


async def amain(a: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="codemcp-monty-share-"))
    config = tmp / "config.json"
    config.write_text('{"mcpServers": {}}')
    before = await run_sessions(a.before, config)
    after = await run_sessions(a.after, config)
    print(f"{'session':20} {'runs':>4} {'Monty before':>13} {'Monty after':>12} {'errors before':>14} {'errors after':>13}")
    totals = [0, 0, 0]
    for name in SESSIONS:
        b, f = before[name], after[name]
        on_b = sum(e == "monty" for e, _ in b)
        on_f = sum(e == "monty" for e, _ in f)
        err_b = sum(r == "error" for _, r in b)
        err_f = sum(r == "error" for _, r in f)
        totals = [totals[0] + len(b), totals[1] + on_b, totals[2] + on_f]
        print(f"{name:20} {len(b):4} {on_b:13} {on_f:12} {err_b:14} {err_f:13}")
    n = totals[0]
    print(f"{'total':20} {n:4} {totals[1]:6} ({totals[1] / n:4.0%}) {totals[2]:5} ({totals[2] / n:4.0%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="codemcp binary without the change")
    ap.add_argument("--after", required=True, help="codemcp binary with it")
    anyio.run(amain, ap.parse_args())


if __name__ == "__main__":
    main()
