#!/usr/bin/env bash
# The `monty` worker pool placement (CODEMCP_MONTY=pool, the default of
# `codemcp serve --http`) runs, for scripts that want its path: a thin wrapper
# of `codemcp setup pool`, which provisions the pinned pydantic-monty-runtime
# wheel of codemcp's Monty (checked by SHA-256, unpacked into the data
# directory) unless codemcp is its own worker or one is installed beside it or
# on PATH. codemcp does this by itself on the first `serve --http`; nothing
# else needs this script.
#
# Usage: scripts/install-monty-worker.sh [DIR]   (DIR: the data directory to
# provision into, as XDG_DATA_HOME; default ~/.local/share)
# Prints the worker's path. Idempotent. CODEMCP_BIN names the codemcp to ask
# (default: this checkout's, built if needed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -z "${CODEMCP_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --ignore-rust-version --quiet --bin codemcp) >&2
  CODEMCP_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/codemcp"
fi
if [ $# -gt 0 ]; then
  mkdir -p "$1"
  export XDG_DATA_HOME="$(cd "$1" && pwd)"
fi
# The worker codemcp would choose by itself, not one named for it.
LINE="$(env -u CODEMCP_MONTY_BIN "$CODEMCP_BIN" setup pool)"
echo "install-monty-worker: $LINE" >&2
echo "${LINE##*: }"
