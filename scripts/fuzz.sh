#!/usr/bin/env bash
# Build the cargo-fuzz targets on stable Rust and run each for a bounded time.
# cargo-fuzz cannot pass --ignore-rust-version (monty declares Rust 1.96), so we
# build with the same coverage flags it uses (sanitizer "none") ourselves.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60, all targets)
# A crash leaves its input in fuzz/artifacts/<target>/ and exits non-zero;
# turn it into a regression test before fixing it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(monty_snippets sdk_catalog control_frames mcp_requests config_files session_snapshot preflight)

TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/fuzz/target}/fuzz"
# An explicit --target keeps the coverage flags off build scripts and proc macros.
TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
cargo build --ignore-rust-version --release --manifest-path "$ROOT/fuzz/Cargo.toml" --target-dir "$TARGET_DIR" \
  --target "$TRIPLE" \
  $(printf -- '--bin %s ' "${TARGETS[@]}")

for target in "${TARGETS[@]}"; do
  corpus="$TARGET_DIR/corpus/$target"
  mkdir -p "$corpus" "$ROOT/fuzz/artifacts/$target"
  echo "fuzz: $target for ${SECONDS_PER_TARGET}s" >&2
  "$TARGET_DIR/$TRIPLE/release/$target" "$corpus" "$ROOT/fuzz/seeds/$target" \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=4096 -max_len=4096 \
    -artifact_prefix="$ROOT/fuzz/artifacts/$target/" -print_final_stats=1 2>&1 \
    | grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|Done)|panicked|ERROR' || true
  if ls "$ROOT/fuzz/artifacts/$target"/crash-* "$ROOT/fuzz/artifacts/$target"/timeout-* >/dev/null 2>&1; then
    echo "fuzz: $target found a failing input in fuzz/artifacts/$target" >&2
    exit 1
  fi
done
