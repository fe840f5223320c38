#!/usr/bin/env bash
# Installs the test peers, builds the release binary and runs bench/latency.py.
# Arguments go to latency.py (e.g. --quick, -n 500). Honours CARGO_TARGET_DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! scripts/test-deps.sh >"$log" 2>&1; then
    cat "$log" >&2
    echo "bench/run.sh: scripts/test-deps.sh failed" >&2
    exit 1
fi
. .deps/env.sh
# The pool placement's worker binary, so b and c are measured in both placements.
CODEMCP_MONTY_BIN="$(scripts/install-monty-worker.sh "$root/.deps/monty-runtime")"
export CODEMCP_MONTY_BIN

echo "bench/run.sh: building the release binary (the first build takes minutes)" >&2
cargo build --release --ignore-rust-version --quiet
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

exec "$CODEMCP_TEST_PY2" bench/latency.py --codemcp "$target/release/codemcp" \
    --node-modules "$CODEMCP_TEST_NODE_MODULES" "$@"
