#!/usr/bin/env bash
# Token benchmark: installs the test peers, builds codemcp (release) and the benchmark,
# then prints the tables. Arguments go to the benchmark (e.g. --sizes 10,100).
# Honours CARGO_TARGET_DIR.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! scripts/test-deps.sh >"$log" 2>&1; then
    cat "$log" >&2
    echo "bench/tokens/run.sh: scripts/test-deps.sh failed" >&2
    exit 1
fi
. .deps/env.sh

echo "bench/tokens/run.sh: building codemcp and the benchmark (release; the first build takes minutes)" >&2
cargo build --release --ignore-rust-version --quiet
cargo build --release --ignore-rust-version --quiet --manifest-path "$here/Cargo.toml"
target="${CARGO_TARGET_DIR:-}"
case "$target" in
    "") codemcp="$root/target/release/codemcp"; bench="$here/target/release/codemcp-bench-tokens" ;;
    /*) codemcp="$target/release/codemcp"; bench="$target/release/codemcp-bench-tokens" ;;
    *) codemcp="$root/$target/release/codemcp"; bench="$root/$target/release/codemcp-bench-tokens" ;;
esac

exec "$bench" --codemcp "$codemcp" --python "$CODEMCP_TEST_PY2" \
    --node-modules "$CODEMCP_TEST_NODE_MODULES" "$@"
