#!/usr/bin/env bash
# Size of the `execute_python` description at the generated catalog sizes the snapshots pin
# (1, 2, 5 and 36 tools; 36 servers with 624 tools; 100 servers with 1,000 tools): characters,
# and cl100k_base tokens of the whole description and of the first 2,048 characters (what
# Claude Code keeps). Budget: $CODEMCP_DESCRIPTION_BUDGET (default: the default, 2048).
# Honours CARGO_TARGET_DIR. Debug builds: the numbers do not depend on the build.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

CODEMCP_DUMP_DESCRIPTIONS="$out" cargo test --ignore-rust-version --quiet --test integration -- sdk_snapshots::dump_descriptions >/dev/null
cargo build --ignore-rust-version --quiet --manifest-path "$here/Cargo.toml"
target="${CARGO_TARGET_DIR:-$here/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
count="$target/debug/codemcp-bench-tokens"

printf '%-12s %8s %8s %14s\n' catalog chars tokens "tokens@2048"
for label in 1_tool 2_tools 5_tools 36_tools 36_servers 1000_tools; do
    file="$out/$label.txt"
    chars=$(python3 -c 'import sys; print(len(open(sys.argv[1], encoding="utf-8").read()))' "$file")
    tokens=$("$count" --count <"$file")
    head_tokens=$(python3 -c 'import sys; sys.stdout.write(open(sys.argv[1], encoding="utf-8").read()[:2048])' "$file" | "$count" --count)
    printf '%-12s %8s %8s %14s\n' "$label" "$chars" "$tokens" "$head_tokens"
done
