#!/usr/bin/env bash
# The bundle does what an MCPB host does with it: unpack, read manifest.json,
# check the required fields, substitute ${__dirname} in mcp_config and start
# that command as a stdio MCP server, which then serves one execute_python
# call, with nothing on PATH.
#
# Usage: packaging/mcpb/test.sh BUNDLE.mcpb
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
BUNDLE="${1:?usage: $0 BUNDLE.mcpb}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ext" "$WORK/home"
python3 -m zipfile -e "$BUNDLE" "$WORK/ext"
# zipfile does not restore mode bits; hosts do (the bits are in the bundle: checked here).
python3 - "$BUNDLE" <<'PY'
import sys, zipfile
info = zipfile.ZipFile(sys.argv[1]).getinfo("server/codemcp")
assert (info.external_attr >> 16) & 0o111, "server/codemcp is not executable in the bundle"
PY
chmod +x "$WORK/ext/server/codemcp"

# The command line the host would run, from the manifest.
mapfile -t CMD < <(python3 - "$WORK/ext" <<'PY'
import json, sys
ext = sys.argv[1]
m = json.load(open(ext + "/manifest.json"))
for field in ("manifest_version", "name", "version", "description", "author", "server"):
    assert field in m, "manifest.json lacks " + field
assert m["server"]["type"] == "binary"
cfg = m["server"]["mcp_config"]
for part in [cfg["command"]] + cfg.get("args", []):
    print(part.replace("${__dirname}", ext))
PY
)
OUT="$(env -i PATH=/nonexistent HOME="$WORK/home" CODEMCP_FALLBACK=none "$(real_python)" "$PKG_ROOT/packaging/mcp_client.py" \
  stdio 'print(sum(range(10)) * 2 - 48)' -- "${CMD[@]}")"
case "$OUT" in
  *42*) say "mcpb OK: $(basename "$BUNDLE") served execute_python over stdio and printed 42" ;;
  *) die "the bundle's server answered: $OUT" ;;
esac
# The same command over Streamable HTTP, with nothing else installed: the
# binary provisions its pinned Monty pool worker into the empty HOME.
OUT="$(env -i PATH=/nonexistent HOME="$WORK/home" CODEMCP_FALLBACK=none "$(real_python)" "$PKG_ROOT/packaging/mcp_client.py" \
  serve-http 'print(6*7)' -- "${CMD[@]}")"
expect_pool_answer mcpb "$OUT"
