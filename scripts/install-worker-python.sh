#!/usr/bin/env bash
# A CPython with `websockets` for host-mode workers (CODEMCP_FALLBACK=host or
# CODEMCP_ISOLATION=HOST_SYSTEM), in its own venv. Prints its python's path.
# Usage: scripts/install-worker-python.sh [DIR]   (default ~/.local/share/codemcp/worker-python)
set -euo pipefail
DIR="${1:-${HOME}/.local/share/codemcp/worker-python}"
PIN="websockets==17.4"
PY="$DIR/bin/python"
if [ -x "$PY" ] && [ "$("$PY" -c "import websockets; print(websockets.__version__)" 2>/dev/null)" = "${PIN#websockets==}" ]; then
  echo "$PY"
  exit 0
fi
echo "install-worker-python: installing $PIN into $DIR" >&2
python3 -m venv "$DIR"
"$DIR/bin/pip" install -q --disable-pip-version-check "$PIN" >&2
echo "$PY"
