#!/usr/bin/env bash
# A CPython with `websockets` for host-mode workers (CODEMCP_FALLBACK=host or
# CODEMCP_ISOLATION=HOST_SYSTEM), in its own venv. Prints its python's path.
# The venv is made from python3.14 when one is on PATH (the CPython version
# Monty follows, as in the Docker image), else from python3: with another
# version, answers may differ once a run escalates (`codemcp check` says so).
# Usage: scripts/install-worker-python.sh [DIR]   (default ~/.local/share/codemcp/worker-python)
#        CODEMCP_BASE_PYTHON=/path/to/python picks the interpreter explicitly.
set -euo pipefail
DIR="${1:-${HOME}/.local/share/codemcp/worker-python}"
PIN="websockets==17.4"
PY="$DIR/bin/python"
if [ -x "$PY" ] && [ "$("$PY" -c "import websockets; print(websockets.__version__)" 2>/dev/null)" = "${PIN#websockets==}" ]; then
  echo "$PY"
  exit 0
fi
BASE="${CODEMCP_BASE_PYTHON:-}"
if [ -z "$BASE" ]; then
  # Debian's python3.14 needs python3.14-venv for `-m venv`; without it, python3.
  if command -v python3.14 >/dev/null 2>&1 && python3.14 -c 'import ensurepip, venv' 2>/dev/null; then
    BASE=python3.14
  else
    BASE=python3
  fi
fi
if [ "$("$BASE" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != 3.14 ]; then
  echo "install-worker-python: $BASE is not CPython 3.14 (Monty's version); using it as the fallback" >&2
fi
echo "install-worker-python: installing $PIN into $DIR from $BASE" >&2
"$BASE" -m venv "$DIR"
"$DIR/bin/pip" install -q --disable-pip-version-check "$PIN" >&2
echo "$PY"
