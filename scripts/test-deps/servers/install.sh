#!/usr/bin/env bash
# Install the real MCP servers of tests/real_peers/real_servers.rs (and bench/startup.py --kind real),
# pinned, into DEST (normally .deps/servers; called by scripts/test-deps.sh):
#   DEST/node        npm ci of package.json + package-lock.json here (19 npm servers)
#   DEST/uv          a venv holding uv (pinned below): it makes the Python venvs
#   DEST/py/NAME     one venv per file py/NAME.txt (a full freeze, `uv pip sync`): the Python
#                    servers' dependencies clash (mcp 1.x and 2.x, fastmcp versions), so each
#                    server has its own; py/mypy.txt is mypy for the stub check
# Idempotent: a stamp holds the hash of the pin files and the toolchain versions.
# Usage: install.sh DEST [FORCE(0|1)]   Env: PYTHON (python3), NPM (npm).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="${1:?usage: install.sh DEST [FORCE]}"
FORCE="${2:-0}"
PYTHON="${PYTHON:-python3}"
NPM="${NPM:-npm}"
UV_VERSION=0.13.8

log() { echo "test-deps: servers: $*" >&2; }
die() { log "error: $*"; exit 1; }

command -v "$NPM" >/dev/null || die "npm not found"
command -v "$PYTHON" >/dev/null || die "$PYTHON not found"
h="$({ cat "$HERE/package.json" "$HERE/package-lock.json" "$HERE"/py/*.txt "${BASH_SOURCE[0]}"
       node --version; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
stamp="$(dirname "$DEST")/.stamp-servers"
if [ "$FORCE" = 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$h" ] && [ -d "$DEST/py" ]; then
  log "up to date ($DEST)"
  exit 0
fi

started=$(date +%s)
next="$DEST.next"
rm -rf "$next" "$stamp"
mkdir -p "$next/node" "$next/py"
log "npm ci into $next/node"
cp "$HERE/package.json" "$HERE/package-lock.json" "$next/node/"
# No browser downloads: the browser servers list their tools without one, and their calls
# fail with a clear error, which the suite uses as an error path.
PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
  "$NPM" ci --prefix "$next/node" --no-audit --no-fund --loglevel=error >&2

log "uv $UV_VERSION into $next/uv"
"$PYTHON" -m venv "$next/uv" >&2
"$next/uv/bin/python" -m pip install --disable-pip-version-check --no-input -q "uv==$UV_VERSION" >&2
uv="$next/uv/bin/uv"
# The cache stays beside the venvs (same file system: uv hard-links from it) for reinstalls.
export UV_CACHE_DIR="$(dirname "$DEST")/.uv-cache"
for req in "$HERE"/py/*.txt; do
  name="$(basename "$req" .txt)"
  log "venv $name"
  "$uv" venv -q --python "$PYTHON" "$next/py/$name" >&2
  "$uv" pip sync -q --python "$next/py/$name/bin/python" "$req" >&2
done

rm -rf "$DEST.old"
if [ -d "$DEST" ]; then mv "$DEST" "$DEST.old"; fi
mv "$next" "$DEST"
# Venvs record their own path: fix the scripts' shebangs after the move.
for bin in "$DEST"/py/*/bin/* "$DEST"/uv/bin/*; do
  if [ -f "$bin" ] && head -c 2 "$bin" | grep -q '#!'; then
    sed -i "1s|$next/|$DEST/|" "$bin"
  fi
done
for cfg in "$DEST"/py/*/pyvenv.cfg "$DEST"/uv/pyvenv.cfg; do sed -i "s|$next/|$DEST/|g" "$cfg"; done
rm -rf "$DEST.old"
echo "$h" >"$stamp"
log "done in $(( $(date +%s) - started )) s; $(du -sh "$DEST" | cut -f1) on disk (+ $(du -sh "$UV_CACHE_DIR" | cut -f1) uv cache)"
