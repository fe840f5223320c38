#!/usr/bin/env bash
# Install the `monty` worker binary that pool mode (CODEMCP_MONTY=pool, the
# default for `codemcp serve --http`) runs: PyPI pydantic-monty-runtime 1.4.0,
# a prebuilt binary, in its own venv.
#
# Usage: scripts/install-monty-worker.sh [DIR]   (default ~/.local/share/codemcp/monty-runtime)
# Prints the binary's path. Idempotent.
set -euo pipefail
DIR="${1:-${HOME}/.local/share/codemcp/monty-runtime}"
VERSION=1.4.0
BIN="$DIR/bin/monty"
if [ -x "$BIN" ] && "$DIR/bin/pip" show pydantic-monty-runtime 2>/dev/null | grep -qx "Version: $VERSION"; then
  echo "$BIN"
  exit 0
fi
echo "install-monty-worker: installing pydantic-monty-runtime==$VERSION into $DIR" >&2
python3 -m venv "$DIR"
"$DIR/bin/pip" install -q --disable-pip-version-check "pydantic-monty-runtime==$VERSION" >&2
"$BIN" -c '1 + 1' >/dev/null
echo "$BIN"
