#!/usr/bin/env bash
# Builds the Python wheel that carries the codemcp binary (the layout of
# maturin's `bin` bindings, as ruff and uv ship), from the binary already
# built: target/dist/<name>-<version>-py3-none-manylinux_2_X_<arch>.whl, so
# `pip install <name>` / `uvx --from <name> codemcp` work once it is on PyPI.
#
# Usage: packaging/python/build.sh     Env: CODEMCP_BIN, CODEMCP_DIST
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
need_binary
mkdir -p "$CODEMCP_DIST"
render "$PKG_ROOT/packaging/python/README.md.in" "$CODEMCP_DIST/pypi-README.md"
rm -f "$CODEMCP_DIST/${CODEMCP_PYPI_NAME//-/_}-$VERSION-"*.whl
WHEEL="$(python3 "$PKG_ROOT/packaging/python/wheel.py" "$CODEMCP_BIN" "$CODEMCP_PYPI_NAME" "$VERSION" \
  "$CODEMCP_DIST/pypi-README.md" "$CODEMCP_DIST")"
rm -f "$CODEMCP_DIST/pypi-README.md"
say "built $WHEEL ($(size_mb "$WHEEL"))"
echo "$WHEEL"
