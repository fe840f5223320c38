#!/usr/bin/env bash
# `npx` of the packed launcher runs codemcp offline: an empty npm cache gets
# only the two tarballs, npx installs them with --offline (so nothing comes
# from a registry), and the command runs with only node, npx and sh (which
# npx runs the bin with) on PATH.
#
# Usage: packaging/npm/test.sh LAUNCHER.tgz PLATFORM.tgz
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
MAIN="$(realpath "${1:?usage: $0 LAUNCHER.tgz PLATFORM.tgz}")"
PLATFORM="$(realpath "${2:?usage: $0 LAUNCHER.tgz PLATFORM.tgz}")"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/home" "$WORK/cwd"

BIN="$(bare_path "$WORK/path" node npx sh)"
run() {
  (cd "$WORK/cwd" && env -i PATH="$BIN" HOME="$WORK/home" CODEMCP_FALLBACK=none npm_config_cache="$WORK/cache" \
    npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false "$@")
}
# The platform package enters the cache by its tarball; npx resolves the
# launcher's optional dependency from there.
run npx --yes --offline --package="$PLATFORM" --package="$MAIN" codemcp --help >/dev/null
OUT="$(run npx --yes --offline --package="$PLATFORM" --package="$MAIN" codemcp exec 'print(sum(range(10)) * 2 - 48)')"
case "$OUT" in
  *42*) say "npm OK: npx of $(basename "$MAIN") ran codemcp exec offline and printed 42" ;;
  *) die "npx codemcp exec printed: $OUT" ;;
esac
# serve --http with nothing else installed: the binary provisions its pinned
# Monty pool worker (from PyPI, checked by sha256) into the empty HOME.
OUT="$(run "$(real_python)" "$PKG_ROOT/packaging/mcp_client.py" serve-http 'print(6*7)' -- \
  npx --yes --offline --package="$PLATFORM" --package="$MAIN" codemcp)"
expect_pool_answer npm "$OUT"
