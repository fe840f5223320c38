#!/usr/bin/env bash
# The wheel installs into a fresh virtual environment with no index, and its
# `codemcp` runs code with nothing but the venv's bin/ on PATH and no other
# environment (no HOME config; CODEMCP_FALLBACK=none only keeps it off the
# host's Docker engine, which auto would use for CPython).
#
# Usage: packaging/python/test.sh WHEEL
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
WHEEL="${1:?usage: $0 WHEEL}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check --no-index "$WHEEL"
[ -x "$WORK/venv/bin/codemcp" ] || die "the wheel put no codemcp in the venv's bin/"
mkdir -p "$WORK/home"
OUT="$(env -i PATH="$WORK/venv/bin" HOME="$WORK/home" CODEMCP_FALLBACK=none codemcp exec 'print(sum(range(10)) * 2 - 48)')"
case "$OUT" in
  *42*) say "wheel OK: $(basename "$WHEEL") installs and codemcp exec printed 42" ;;
  *) die "codemcp exec from the wheel printed: $OUT" ;;
esac
