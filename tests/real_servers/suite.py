"""suite.py: real MCP servers behind one codemcp gateway, compared with direct calls.

    $CODEMCP_TEST_PY2 tests/real_servers/suite.py --codemcp target/debug/codemcp \
        [--servers .deps/servers] [--peers .deps/node/node_modules] [--only NAME ...] > report.json

Runs with the PyPI `mcp` 2.x client (.deps/py2). With no network (see `isolation()`):
  1. each server of servers.json directly, through the `mcp` client: its tools and its offline
     calls (servers start a few at a time, each in its own scratch copy of the work files);
  2. all of them behind one gateway (its own copy of the work files): the time until every
     server joined, the stub `codemcp://sdk.pyi` (parsed, then `mypy --strict`), `describe_tool`
     and a reference to the function of every tool, the same offline calls, and invalid calls
     made from each tool's schema (wrong type, missing required, value outside an enum).
Prints one JSON report on stdout; tests/real_peers/real_servers.rs judges it. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
# Per-call and per-server bounds: a loaded 2-core machine starts a Python server in up to ~40 s.
CALL_TIMEOUT = 60.0
CONNECT_TIMEOUT = 120.0
JOIN_TIMEOUT = 600.0
# The handshake timeout each server gets behind the gateway (its config's "timeout"; the default
# is 30 s): a Python server's imports alone take more than that on an oversubscribed machine.
HANDSHAKE_TIMEOUT_S = 120


def log(msg: str) -> None:
    print(f"real_servers: {msg}", file=sys.stderr, flush=True)


def isolation() -> tuple[str, list[str], dict[str, str]]:
    """How to keep servers off the network: a fresh network namespace when we may make one
    (root, or an unprivileged user namespace), else proxy variables pointing at a closed port."""
    for prefix in (["unshare", "--net", "--"], ["unshare", "--map-root-user", "--net", "--"]):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return " ".join(prefix[:-1]), prefix, {}
        except (OSError, subprocess.TimeoutExpired):
            pass
    dead = "http://127.0.0.1:9"
    proxies = {k: dead for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")}
    proxies.update(NO_PROXY="", no_proxy="")
    return "proxies", [], proxies


def prepare_work(work: Path) -> None:
    """The files the offline calls use, the same on both sides (a git repo with a fixed commit)."""
    (work / "files").mkdir(parents=True)
    (work / "files/hello.txt").write_text("hello from the real-server suite\n")
    (work / "files/notes.md").write_text("# Notes\n\n- one\n- two\n")
    (work / "home").mkdir()
    (work / "tmp").mkdir()
    repo = work / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("suite repo\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="suite", GIT_AUTHOR_EMAIL="suite@example.invalid",
               GIT_COMMITTER_NAME="suite", GIT_COMMITTER_EMAIL="suite@example.invalid",
               GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z",
               HOME=str(work / "home"))
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "README.md"], ["git", "commit", "-q", "-m", "first"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True)


def substitute(value: Any, places: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, path in places.items():
            value = value.replace("{" + key + "}", path)
        return value
    if isinstance(value, list):
        return [substitute(v, places) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, places) for k, v in value.items()}
    return value


def launch(entry: dict[str, Any], places: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    command = substitute(entry["command"], places)
    env = substitute(entry.get("env", {}), places)
    return command, env


def child_env(work: Path, extra: dict[str, str]) -> dict[str, str]:
    """The whole environment (PATH for `node`), a scratch HOME and TMPDIR (servers write config
    and caches there), and no telemetry."""
    env = dict(os.environ, HOME=str(work / "home"), TMPDIR=str(work / "tmp"),
               DO_NOT_TRACK="1", NEXT_TELEMETRY_DISABLED="1", FASTMCP_LOG_LEVEL="ERROR")
    env.update(extra)
    return env


def normalize(value: Any, work: Path) -> Any:
    """Paths of the side's own work directory read as {work}, so the two sides compare."""
    text = json.dumps(value, sort_keys=True)
    text = text.replace(str(work), "{work}")
    return json.loads(text)


def wraps_result(output: Any) -> bool:
    """FastMCP's `{"result": T}` wrapper around a plain return value, which the gateway
    unwraps (src/sdk/function.rs, `wrapped_result`)."""
    if not isinstance(output, dict):
        return False
    props = output.get("properties")
    if not isinstance(props, dict) or list(props) != ["result"] or "result" not in (output.get("required") or []):
        return False
    title = output.get("title")
    return output.get("x-fastmcp-wrap-result") is True or (isinstance(title, str) and title.endswith("Output"))


def tool_value(result: Any, output_schema: Any = None) -> dict[str, Any]:
    """What the gateway hands agent code for this CallToolResult (src/upstream/result.rs, and
    `unwrap_result` in crates/exec/src/lib.rs)."""
    blocks = result.content
    texts = [b.text for b in blocks if getattr(b, "type", "") == "text"]
    if result.is_error:
        return {"error": "\n".join(texts) or "the tool reported an error without a message"}
    if result.structured_content is not None:
        value = result.structured_content
        if wraps_result(output_schema) and isinstance(value, dict) and list(value) == ["result"]:
            value = value["result"]
        return {"value": value}
    if len(texts) == len(blocks):
        return {"value": "\n".join(texts)}
    items = [b.text if getattr(b, "type", "") == "text" else b.model_dump(mode="json", by_alias=True, exclude_none=True)
             for b in blocks]
    return {"value": items[0] if len(items) == 1 else items}


def exc_text(e: BaseException) -> str:
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    error = getattr(e, "error", None)
    if error is not None and getattr(error, "message", None):
        return str(error.message)
    return str(e) or type(e).__name__


async def list_all(client: Any) -> list[Any]:
    tools, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def quiet(command: list[str], log_file: Path) -> tuple[list[str], dict[str, str]]:
    """The command with its stderr appended to log_file (servers log a lot there)."""
    return ["sh", "-c", 'exec "$@" 2>>"$SUITE_LOG"', "sh", *command], {"SUITE_LOG": str(log_file)}


def tail(path: Path, chars: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


async def direct_server(name: str, entry: dict[str, Any], prefix: list[str], places: dict[str, str],
                        work: Path, proxies: dict[str, str]) -> dict[str, Any]:
    command, env = launch(entry, places)
    stderr = work / "stderr.log"
    command, log_env = quiet(prefix + command, stderr)
    params = StdioServerParameters(command=command[0], args=command[1:],
                                   env=child_env(work, {**proxies, **env, **log_env}), cwd=str(work))
    out: dict[str, Any] = {"calls": []}
    started = time.monotonic()
    try:
        async with Client(params, mode="legacy", cache=None, read_timeout_seconds=CONNECT_TIMEOUT) as client:
            tools = await list_all(client)
            out["started_s"] = round(time.monotonic() - started, 2)
            out["tools"] = [{"name": t.name, "input_schema": t.input_schema} for t in tools]
            outputs = {t.name: t.output_schema for t in tools}
            for call in entry.get("calls", []):
                args = substitute(call.get("args", {}), places)
                try:
                    result = await client.call_tool(call["tool"], args, read_timeout_seconds=CALL_TIMEOUT)
                    got = tool_value(result, outputs.get(call["tool"]))
                except Exception as e:  # a JSON-RPC error or a result the client refused
                    got = {"error": exc_text(e), "raised": type(e).__name__}
                out["calls"].append(normalize(got, work))
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {exc_text(e)}"
        out["stderr"] = tail(stderr)
    log(f"direct {name}: {len(out.get('tools', []))} tools, {out.get('started_s', '-')} s {out.get('error', '')}")
    return out


async def direct_all(table: dict[str, Any], prefix: list[str], root: Path, places: dict[str, str],
                     proxies: dict[str, str], parallel: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(parallel)

    async def one(name: str, entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        async with gate:
            work = root / f"direct-{name}"
            prepare_work(work)
            return name, await direct_server(name, entry, prefix, {**places, "work": str(work)}, work, proxies)

    return dict(await asyncio.gather(*(one(n, e) for n, e in table.items())))


# ---- through the gateway ----------------------------------------------------------------------

class Gateway:
    def __init__(self, client: Any) -> None:
        self.client = client

    async def run(self, code: str) -> dict[str, Any]:
        result = await self.client.call_tool("execute_python", {"code": code}, read_timeout_seconds=CALL_TIMEOUT * 2)
        structured = result.structured_content or {}
        text = "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")
        return {"is_error": bool(result.is_error), "structured": structured, "text": text}

    async def description(self) -> str:
        tools = await list_all(self.client)
        return tools[0].description or ""


def pylit(value: Any) -> str:
    """A JSON value as a Python literal."""
    return repr(value)


def call_code(fn: str, args: dict[str, Any]) -> str:
    kwargs = ", ".join(f"{k}={pylit(v)}" for k, v in args.items())
    return (f"try:\n    __r = {{'value': {fn}({kwargs})}}\n"
            f"except Exception as __e:\n    __r = {{'error': str(__e), 'type': type(__e).__name__}}\n__r")


def names_every_server(text: str, names: list[str]) -> bool:
    """Each server's name stands in the text as a word of its own (the description shows a
    large catalog as `name (count)` or bare names, not every function)."""
    return all(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text) for n in names)


async def still_starting(gw: Gateway) -> bool:
    """Whether a server is still starting (connecting, or failing and retried). The
    description no longer says (it is a pure function of the catalog); `search_tools`
    ends with one `<server>_*` hit per such server, whatever the query."""
    ran = await gw.run('[str(h) for h in search_tools("zqxjkv no such words", limit=1)]')
    return ran["is_error"] or "_*" in ran["text"]


async def wait_joined(gw: Gateway, names: list[str], started: float) -> dict[str, Any]:
    """Until no server is still starting (joined, or failing)."""
    out: dict[str, Any] = {}
    deadline = started + JOIN_TIMEOUT
    text = ""
    while time.monotonic() < deadline:
        text = await gw.description()
        now = round(time.monotonic() - started, 2)
        if "complete_s" not in out and names_every_server(text, names):
            out["complete_s"] = now
        if not await still_starting(gw):
            out["joined_s"] = now
            break
        await asyncio.sleep(0.5)
    out["description_tail"] = text[-1500:]
    return out


async def check_stub(client: Any, mypy: str | None, scratch: Path) -> dict[str, Any]:
    res = await client.read_resource("codemcp://sdk.pyi")
    stub = "".join(getattr(c, "text", "") for c in res.contents)
    path = scratch / "sdk.pyi"
    path.write_text(stub)
    out: dict[str, Any] = {"chars": len(stub), "defs": sorted(
        n.name for n in ast.walk(ast.parse(stub)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))}
    if mypy:
        proc = subprocess.run([mypy, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                               str(path)], capture_output=True, text=True, timeout=600)
        out["mypy_status"] = proc.returncode
        out["mypy_output"] = (proc.stdout + proc.stderr)[-4000:]
    return out


def json_types(schema: Any) -> set[str] | None:
    """The JSON types a property schema allows (through anyOf/oneOf and type lists); None when
    it cannot be told simply ($ref, allOf, no type at all)."""
    if not isinstance(schema, dict):
        return None
    if "anyOf" in schema or "oneOf" in schema:
        found: set[str] = set()
        for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
            t = json_types(sub)
            if t is None:
                return None
            found |= t
        return found
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list) and all(isinstance(x, str) for x in t):
        return set(t)
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return {"string"}
    return None


def sample(schema: Any) -> tuple[bool, Any]:
    """A value the schema surely accepts, for the other required parameters of an invalid call."""
    if not isinstance(schema, dict):
        return False, None
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return True, schema["enum"][0]
    if "const" in schema:
        return True, schema["const"]
    t = schema.get("type")
    simple = {"string": "x", "integer": 1, "number": 1, "boolean": True}
    if isinstance(t, str) and t in simple and not any(k in schema for k in ("pattern", "format", "minimum", "minLength", "exclusiveMinimum")):
        return True, simple[t]
    if t == "array" and not schema.get("minItems"):
        return True, []
    return False, None


WRONG = [("string", "wrong"), ("number", 12345), ("array", [1]), ("object", {"k": 1})]


def wrong_value(types: set[str]) -> tuple[bool, Any]:
    allowed = set(types)
    if "number" in allowed:
        allowed.add("integer")
    for kind, value in WRONG:
        if kind == "number" and ({"number", "integer"} & allowed):
            continue
        if kind not in allowed:
            return True, value
    return False, None


def invalid_cases(described: dict[str, Any]) -> list[dict[str, Any]]:
    """Up to three calls the tool's schema rules out, each with one problem only."""
    schema = described.get("input_schema") or {}
    props = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if r in props]
    ok_names = {p["name"] for p in described.get("parameters") or []}
    if described.get("note") or not all(r in ok_names for r in required):
        return []  # unchecked (the gateway says so) or a renamed wire name
    fills: dict[str, Any] = {}
    for r in required:
        good, value = sample(props[r])
        if not good:
            fills = {}
            break
        fills[r] = value
    cases = []
    if required:
        cases.append({"case": "missing required", "args": {}})
    if fills or not required:
        for name, prop in props.items():
            types = json_types(prop)
            if name not in ok_names or types is None:
                continue
            good, value = wrong_value(types)
            if good:
                cases.append({"case": f"wrong type for {name}", "args": {**fills, name: value}})
                break
        for name, prop in props.items():
            if name in ok_names and isinstance(prop, dict) and isinstance(prop.get("enum"), list) \
                    and all(isinstance(v, str) for v in prop["enum"]):
                cases.append({"case": f"{name} outside its enum", "args": {**fills, name: "not-in-the-enum"}})
                break
    return cases


async def gateway_side(table: dict[str, Any], direct: dict[str, Any], args: argparse.Namespace, prefix: list[str],
                       places: dict[str, str], proxies: dict[str, str], root: Path) -> dict[str, Any]:
    work = root / "gateway"
    prepare_work(work)
    places = {**places, "work": str(work)}
    servers = {}
    for name, entry in table.items():
        command, env = launch(entry, places)
        # Every tool allowed: what refuses an invalid call must be the schema check, not the
        # policy (which asks before tools that are not read-only).
        servers[name] = {"command": command[0], "args": command[1:], "env": env, "policy": {"*": "allow"},
                          "timeout": HANDSHAKE_TIMEOUT_S}
    config = root / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    env = child_env(work, {**proxies, "XDG_STATE_HOME": str(root / "state"), "CODEMCP_LOG": "warn",
                           "CODEMCP_FALLBACK": "none"})
    command, log_env = quiet(prefix + [args.codemcp, "--config", str(config)], root / "gateway.log")
    params = StdioServerParameters(command=command[0], args=command[1:], env={**env, **log_env}, cwd=str(work))
    out: dict[str, Any] = {"servers": {}}
    started = time.monotonic()
    async with Client(params, mode="legacy", cache=None, read_timeout_seconds=CONNECT_TIMEOUT) as client:
        gw = Gateway(client)
        out["initialize_s"] = round(time.monotonic() - started, 3)
        out["join"] = await wait_joined(gw, list(table), started)
        log(f"gateway: joined {out['join'].get('joined_s')}")
        out["stub"] = await check_stub(client, args.mypy, root)
        log(f"gateway: stub {out['stub'].get('chars')} chars, mypy {out['stub'].get('mypy_status')}")
        for name in table:
            out["servers"][name] = await gateway_server(gw, name, table[name], direct[name], places, work)
    out["log_tail"] = tail(root / "gateway.log", 4000)
    return out


async def gateway_server(gw: Gateway, name: str, entry: dict[str, Any], direct: dict[str, Any],
                         places: dict[str, str], work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    wire = [t["name"] for t in direct.get("tools", [])]
    ran = await gw.run(f"[describe_tool(n) for n in {[f'{name}.{t}' for t in wire]!r}]")
    described = ran["structured"].get("result")
    if ran["is_error"] or not isinstance(described, list):
        out["describe_error"] = ran["text"][-2000:]
        return out
    out["described"] = [{"tool": t, "name": (d or {}).get("name"), "signature": (d or {}).get("signature"),
                         "note": (d or {}).get("note")} for t, d in zip(wire, described)]
    fns = [d["name"] for d in described if d and d.get("name")]
    # Monty has no callable(): naming each function is the check (the pre-flight refuses an
    # unknown name with NameError).
    ran = await gw.run("[" + ", ".join(f"{f} is not None" for f in fns) + "]")
    out["functions"] = ran["structured"].get("result") if not ran["is_error"] else ran["text"][-2000:]
    by_tool = {t: d for t, d in zip(wire, described) if d}
    out["calls"] = []
    for call in entry.get("calls", []):
        d = by_tool.get(call["tool"])
        if d is None:
            out["calls"].append({"error": f"no function for {call['tool']}", "type": "missing"})
            continue
        ran = await gw.run(call_code(d["name"], substitute(call.get("args", {}), places)))
        got = ran["structured"].get("result") if not ran["is_error"] else {"run_error": ran["text"][-2000:]}
        out["calls"].append(normalize(got, work))
    out["invalid"] = []
    for tool, d in by_tool.items():
        for case in invalid_cases(d):
            ran = await gw.run(f"{d['name']}(" + ", ".join(f"{k}={pylit(v)}" for k, v in case["args"].items()) + ")")
            err = ran["structured"].get("error") or {}
            out["invalid"].append({"tool": tool, "case": case["case"], "args": case["args"],
                                   "is_error": ran["is_error"], "kind": err.get("kind"), "type": err.get("type"),
                                   "message": (err.get("message") or ran["text"])[:300],
                                   "tool_calls": ran["structured"].get("tool_calls")})
    log(f"gateway {name}: {len(fns)} functions, {len(out['calls'])} calls, {len(out['invalid'])} invalid calls")
    return out


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    table = json.loads((HERE / "servers.json").read_text())["servers"]
    if args.only:
        table = {k: v for k, v in table.items() if k in args.only}
    mode, prefix, proxies = isolation()
    log(f"isolation: {mode}")
    places = {"servers": str(Path(args.servers).resolve()), "peers": str(Path(args.peers).resolve()),
              "node22": str(Path(args.peers).resolve() / ".bin/node"), "repo": str(REPO)}
    root = Path(tempfile.mkdtemp(prefix="real-servers-"))
    report: dict[str, Any] = {"isolation": mode, "servers": list(table)}
    try:
        t0 = time.monotonic()
        report["direct"] = await direct_all(table, prefix, root, places, proxies, args.parallel)
        report["direct_s"] = round(time.monotonic() - t0, 1)
        if args.direct_only:
            return report
        t0 = time.monotonic()
        report["gateway"] = await gateway_side(table, report["direct"], args, prefix, places, proxies, root)
        report["gateway_s"] = round(time.monotonic() - t0, 1)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    deps = Path(os.environ.get("CODEMCP_TEST_SERVERS", REPO / ".deps/servers"))
    ap.add_argument("--codemcp", required=True)
    ap.add_argument("--servers", default=str(deps))
    ap.add_argument("--peers", default=os.environ.get("CODEMCP_TEST_NODE_MODULES", str(REPO / ".deps/node/node_modules")))
    ap.add_argument("--mypy", default=str(deps / "py/mypy/bin/python"))
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--direct-only", action="store_true", help="skip the gateway (to look at the servers)")
    args = ap.parse_args()
    if not Path(args.mypy).exists():
        args.mypy = None
    logging.disable(logging.CRITICAL)  # the client logs every non-JSON line a server prints
    report = asyncio.run(amain(args))
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
