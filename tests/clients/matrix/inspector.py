#!/usr/bin/env python3
"""inspector.py: the client-matrix probe for the MCP Inspector CLI (any Python 3, standard library).

Runs `node INSPECTOR_JS --cli <target> --method ...` once per request, as a user
or a script does: every run is a new connection (over stdio a new gateway
process, which finds its configuration in CODEMCP_CONFIG because the Inspector
has a --config flag of its own). INSPECTOR_NODE and INSPECTOR_JS name the node
binary and the CLI's entry point; --client names the Inspector's version.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as c  # noqa: E402

A = c.args()
NODE = os.environ.get("INSPECTOR_NODE", "node")
JS = os.environ["INSPECTOR_JS"]
SDK = os.environ.get("INSPECTOR_SDK", "?")


def cli(*options: str) -> Any:
    """One CLI run; its stdout as JSON (a failure raises with stderr)."""
    # The Inspector 2.x hands a stdio server only the environment given with -e (INSPECTOR_PASS_ENV=1).
    env = []
    if os.environ.get("INSPECTOR_PASS_ENV") == "1":
        for k, v in os.environ.items():
            if k.startswith(("CODEMCP_", "XDG_")):
                env += ["-e", f"{k}={v}"]
    target = [A.url] if A.target == "http" else [*env, *A.command]
    run = subprocess.run([NODE, JS, "--cli", *target, *options], capture_output=True, text=True,
                         timeout=90, stdin=subprocess.DEVNULL)
    try:
        return json.loads(run.stdout)
    except ValueError:
        raise RuntimeError(f"exit {run.returncode}: {(run.stdout + run.stderr).strip()[-300:]}") from None


def call(code: str, **extra: str) -> dict[str, Any]:
    args = [f"code={code}", *(f"{k}={v}" for k, v in extra.items())]
    return c.structured(cli("--method", "tools/call", "--tool-name", "execute_python", "--tool-arg", *args))


def main() -> None:
    r = c.Report(f"MCP Inspector CLI {A.client} (TypeScript SDK {SDK})")

    def cell(name: str, body: Any) -> None:
        try:
            body()
        except Exception as e:  # noqa: BLE001 - the cell's verdict
            r.fail(name, c.describe(e))

    def listed() -> None:
        tools = cli("--method", "tools/list").get("tools", [])
        names = [t.get("name") for t in tools]
        r.passed("connect", "a new connection per run")
        r.check("list", names == ["execute_python"], f"tools: {names}")

    def called() -> None:
        s = call(c.CALL)
        r.check("call", s.get("result") == 42, f"structuredContent {s}")

    def by_handle() -> None:
        handle = call(c.SET_M).get("session")
        if not handle:
            return r.fail("state_handle", "the result named no session")
        s = call(c.GET_M, session=handle)
        r.check("state_handle", s.get("result") == 10, f"next run: {s.get('error') or s}",
                "`--tool-arg session=<handle>` on the next run")

    def approval() -> None:
        s = call(c.APPROVAL)
        if s.get("result") == "sent to a@b.c":
            return r.fail("approval", "the ask tool ran without asking")
        if "elicitation" not in json.dumps(s.get("error")):
            return r.fail("approval", f"refused for another reason: {s.get('error') or s}")
        r.unsupported("approval", "the CLI declares no elicitation; the call is refused, nothing runs")

    def resources() -> None:
        uris = [x.get("uri") for x in cli("--method", "resources/list").get("resources", [])]
        if "codemcp://sdk.pyi" not in uris:
            return r.fail("resources", f"resources: {uris}")
        contents = cli("--method", "resources/read", "--uri", "codemcp://sdk.pyi").get("contents", [])
        text = contents[0].get("text", "") if contents else ""
        r.check("resources", "def odd_send_email(" in text, "codemcp://sdk.pyi lacks the signatures")

    cell("connect", listed)
    if r.out["cells"].get("connect", {}).get("status") == "pass":
        cell("call", called)
        r.unsupported("state_implicit", "every CLI run is a new connection")
        cell("state_handle", by_handle)
        cell("approval", approval)
        r.unsupported("list_changed", "one request per run; nothing listens for notifications")
        r.unsupported("progress", "the CLI sends no progress token")
        r.unsupported("cancellation", "the CLI cannot cancel a call")
        cell("resources", resources)
    r.print()


if __name__ == "__main__":
    main()
