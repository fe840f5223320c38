#!/usr/bin/env bash
# Installs the test peers, builds the release binary, then runs bench/floor.py
# (one client process per connection: the headline ratios, the traced
# breakdown, the pool and host placements), bench/latency.py (one process
# driving every connection, interleaved: pool, host, Docker, policy, RSS), and
# with redis-server on PATH bench/sessions.py and bench/load.py (session stores).
# --quick goes to both; --tokens also runs bench/tokens/run.sh; other
# arguments go to latency.py (e.g. -n 500). Honours CARGO_TARGET_DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

floor_args=()
latency_args=()
tokens=0
for arg in "$@"; do
    case "$arg" in
        --quick) floor_args+=(--quick); latency_args+=(--quick) ;;
        --tokens) tokens=1 ;;
        *) latency_args+=("$arg") ;;
    esac
done

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
if docker image inspect "${CODEMCP_DOCKER_IMAGE:-codemcp-worker:2}" >/dev/null 2>&1; then
    latency_args+=(--docker)
fi

echo "bench/run.sh: building the release binary (the first build takes minutes)" >&2
cargo build --release --ignore-rust-version --quiet
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

# The worst exit status of the benches run.
status=0
keep() { if [ "$1" -gt "$status" ]; then status=$1; fi; }
"$CODEMCP_TEST_PY2" bench/floor.py --codemcp "$target/release/codemcp" \
    --node-modules "$CODEMCP_TEST_NODE_MODULES" "${floor_args[@]}" || keep $?
echo
"$CODEMCP_TEST_PY2" bench/latency.py --codemcp "$target/release/codemcp" \
    --node-modules "$CODEMCP_TEST_NODE_MODULES" "${latency_args[@]}" || keep $?
# Session stores side by side (memory, the SQLite file, Redis on loopback), then
# 200 concurrent agents through one gateway vs two sharing Redis (issue #12).
if command -v redis-server >/dev/null 2>&1; then
    echo
    quick_n=(); quick_agents=()
    if [ "${#floor_args[@]}" -gt 0 ]; then quick_n=(-n 60); quick_agents=(--agents 20); fi
    "$CODEMCP_TEST_PY2" bench/sessions.py --codemcp "$target/release/codemcp" "${quick_n[@]}" || keep $?
    echo
    "$CODEMCP_TEST_PY2" bench/load.py --codemcp "$target/release/codemcp" "${quick_agents[@]}" || keep $?
else
    echo "bench/run.sh: redis-server not found; the session-store benches are skipped" >&2
fi
if [ "$tokens" = 1 ]; then
    echo
    bench/tokens/run.sh || keep $?
fi

# The pre-flight check every run goes through, timed alone next to the runs
# above: an ignored test in tests/integration/preflight.rs, built in release mode.
echo "bench/run.sh: timing the pre-flight check (builds the release test the first time)" >&2
if ! cargo test --release --ignore-rust-version --quiet --test integration \
    cost_on_a_30_line_snippet_with_36_tools -- --ignored --nocapture 2>/dev/null | grep '^PREFLIGHT'; then
    echo "bench/run.sh: the pre-flight measurement failed" >&2
    keep 1
fi
exit "$status"
