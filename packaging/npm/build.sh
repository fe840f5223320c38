#!/usr/bin/env bash
# Builds the npm packages: `codemcp-<os>-<cpu>`, which carries the binary for
# this machine's platform, and `codemcp`, a small launcher that lists the
# platform packages as optional dependencies and runs the one npm installed
# (the esbuild/biome pattern: npm fetches only the binary a machine needs).
# A release publishes one platform package per platform built (docs/releasing.md);
# this script builds the host's. Output: target/dist/npm/*.tgz.
#
# Usage: packaging/npm/build.sh     Env: CODEMCP_BIN, CODEMCP_DIST
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
need_binary
HERE="$PKG_ROOT/packaging/npm"
OS="$(npm_os)"
CPU="$(npm_cpu)"
# The platforms the launcher knows of; a release adds a line per platform it builds.
PLATFORMS=("$OS-$CPU")

OUT="$CODEMCP_DIST/npm"
rm -rf "$OUT"
mkdir -p "$OUT/stage/platform/bin" "$OUT/stage/main/bin"

render "$HERE/platform/package.json.in" "$OUT/stage/platform/package.json" "NPM_OS=$OS" "NPM_CPU=$CPU"
install -m 0755 "$CODEMCP_BIN" "$OUT/stage/platform/bin/codemcp"

DEPS=""
for p in "${PLATFORMS[@]}"; do
  DEPS+="${DEPS:+,\n}    \"$CODEMCP_NPM_NAME-$p\": \"$VERSION\""
done
render "$HERE/codemcp/package.json.in" "$OUT/stage/main/package.json" "OPTIONAL_DEPENDENCIES=$DEPS"
sed -i 's/\\n/\n/g' "$OUT/stage/main/package.json"
render "$HERE/codemcp/README.md.in" "$OUT/stage/main/README.md" "PLATFORMS=${PLATFORMS[*]}"
install -m 0755 "$HERE/codemcp/bin/codemcp.js" "$OUT/stage/main/bin/codemcp.js"
node -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' "$OUT/stage/main/package.json"

for d in platform main; do
  (cd "$OUT/stage/$d" && npm pack --silent --pack-destination "$OUT" >/dev/null)
done
rm -rf "$OUT/stage"
for t in "$OUT"/*.tgz; do
  say "built $t ($(size_mb "$t"))"
  echo "$t"
done
