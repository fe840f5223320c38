#!/usr/bin/env bash
# The wheel installs into a fresh virtual environment with no index (its one
# dependency, the Monty pool worker pydantic-monty-runtime, from a wheelhouse
# holding the pinned wheel, checked by its sha256), and its `codemcp` runs code
# with nothing but the venv's bin/ on PATH and no other environment (no HOME
# config; CODEMCP_FALLBACK=none only keeps it off the host's Docker engine,
# which auto would use for CPython): `exec` over stdio, and `serve --http`
# answering a run on the pool engine with the worker pip put beside it.
#
# Usage: packaging/python/test.sh WHEEL
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
WHEEL="${1:?usage: $0 WHEEL}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

read -r MONTY_VERSION MONTY_SHA256 <<<"$(pinned_wheel pydantic-monty-runtime)"
[ -n "$MONTY_SHA256" ] || die "crates/image/recipe/wheels.pins pins no Monty worker for $(uname -m)"
echo "pydantic-monty-runtime==$MONTY_VERSION --hash=sha256:$MONTY_SHA256" >"$WORK/requirements.txt"
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
  -r "$WORK/requirements.txt" -d "$WORK/wheelhouse"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$WORK/wheelhouse" "$WHEEL"
[ -x "$WORK/venv/bin/monty" ] || die "installing the wheel put no Monty worker (monty) in the venv's bin/"
[ -x "$WORK/venv/bin/codemcp" ] || die "the wheel put no codemcp in the venv's bin/"
mkdir -p "$WORK/home"
OUT="$(env -i PATH="$WORK/venv/bin" HOME="$WORK/home" CODEMCP_FALLBACK=none codemcp exec 'print(sum(range(10)) * 2 - 48)')"
case "$OUT" in
  *42*) say "wheel OK: $(basename "$WHEEL") installs and codemcp exec printed 42" ;;
  *) die "codemcp exec from the wheel printed: $OUT" ;;
esac
OUT="$(env -i PATH="$WORK/venv/bin" HOME="$WORK/home" CODEMCP_FALLBACK=none \
  "$WORK/venv/bin/python" "$PKG_ROOT/packaging/mcp_client.py" serve-http 'print(6*7)' -- codemcp)"
expect_pool_answer wheel "$OUT"
