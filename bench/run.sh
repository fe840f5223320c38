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
# CPython on the host, and in Docker when the engine answers and the image exists.
CODEMCP_PYTHON="$(scripts/install-worker-python.sh "$root/.deps/worker-python")"
export CODEMCP_MONTY_BIN CODEMCP_PYTHON
extra=()
if docker image inspect "${CODEMCP_DOCKER_IMAGE:-codemcp-worker:1}" >/dev/null 2>&1; then
    extra+=(--docker)
fi

echo "bench/run.sh: building the release binary (the first build takes minutes)" >&2
cargo build --release --ignore-rust-version --quiet
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

status=0
"$CODEMCP_TEST_PY2" bench/latency.py --codemcp "$target/release/codemcp" \
    --node-modules "$CODEMCP_TEST_NODE_MODULES" "${extra[@]}" "$@" || status=$?

# The pre-flight check every run goes through, timed alone next to the runs
# above: an ignored test in tests/preflight.rs, built in release mode.
echo "bench/run.sh: timing the pre-flight check (builds the release test the first time)" >&2
if ! cargo test --release --ignore-rust-version --quiet --test preflight \
    cost_on_a_30_line_snippet_with_36_tools -- --ignored --nocapture 2>/dev/null | grep '^PREFLIGHT'; then
    echo "bench/run.sh: the pre-flight measurement failed" >&2
fi
exit "$status"
