#!/usr/bin/env bash
# Builds the MCP bundle (MCPB spec, manifest 0.3, server type "binary"): a zip
# of manifest.json and server/codemcp, named codemcp-<version>-<os>-<cpu>.mcpb
# (one bundle per platform; the MCP Registry takes one URL per bundle, with its
# sha256, in server.json). The manifest is checked with the pinned `mcpb` CLI
# (npm, installed into .deps/packaging, or $CODEMCP_PACKAGING_DEPS).
#
# Usage: packaging/mcpb/build.sh     Env: CODEMCP_BIN, CODEMCP_DIST
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
need_binary
MCPB_CLI_PIN="@anthropic-ai/mcpb@2.1.2"
OS="$(npm_os)" # MCPB's platforms are Node's process.platform values
OUT="$CODEMCP_DIST/codemcp-$VERSION-$OS-$(npm_cpu).mcpb"
STAGE="$CODEMCP_DIST/mcpb-stage"
rm -rf "$STAGE" "$OUT"
mkdir -p "$STAGE/server"
render "$PKG_ROOT/packaging/mcpb/manifest.json.in" "$STAGE/manifest.json" "MCPB_PLATFORM=$OS"
install -m 0755 "$CODEMCP_BIN" "$STAGE/server/codemcp"
# The MCPB project's own validator checks the manifest against its schema.
DEPS="${CODEMCP_PACKAGING_DEPS:-$PKG_ROOT/.deps/packaging}"
MCPB_CLI="$DEPS/node_modules/.bin/mcpb"
if [ ! -x "$MCPB_CLI" ]; then
  mkdir -p "$DEPS"
  npm install --silent --no-audit --no-fund --prefix "$DEPS" "$MCPB_CLI_PIN" >&2 ||
    say "WARNING: could not install $MCPB_CLI_PIN; the manifest is not validated"
fi
if [ -x "$MCPB_CLI" ]; then
  "$MCPB_CLI" validate "$STAGE/manifest.json" >&2
elif [ "${CI:-}" = true ]; then
  die "CI=true needs the mcpb validator ($MCPB_CLI_PIN)"
fi
# Python's zipfile rather than zip(1), which CI machines may lack; the mode
# bits go in external_attr so the binary unpacks executable.
python3 - "$STAGE" "$OUT" <<'PY'
import os, sys, zipfile
stage, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for rel in ("manifest.json", "server/codemcp"):
        path = os.path.join(stage, rel)
        info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = (os.stat(path).st_mode & 0o777 | 0o100000) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        with open(path, "rb") as f:
            z.writestr(info, f.read())
PY
rm -rf "$STAGE"
say "built $OUT ($(size_mb "$OUT"))"
echo "$OUT"
