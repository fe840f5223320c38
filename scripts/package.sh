#!/usr/bin/env bash
# Builds codemcp's install artifacts into target/dist/ and tests each one:
#   <pypi-name>-<v>-py3-none-<platform>.whl   pip install / uvx        (packaging/python)
#   npm/<name>-<v>.tgz, npm/<name>-<os>-<cpu>-<v>.tgz   npx            (packaging/npm)
#   codemcp-<v>-<os>-<cpu>.mcpb                MCP bundle              (packaging/mcpb)
#   server.json                                MCP Registry entry      (packaging/server.json)
#   image codemcp:<v> (+ codemcp-<v>-image.tar.gz with --release)     (packaging/container)
#   SHA256SUMS                                 of every file above
# and writes the sizes and build times to target/dist/figures.txt.
#
# Default: the debug build the tests use (CI compiles nothing again), stripped.
# --release: target/release/codemcp (build it first: cargo build --release
# --locked --ignore-rust-version), stripped: what a release publishes
# (docs/releasing.md), plus the cargo-binstall archive codemcp-<v>-<target>.tar.gz.
# The image needs a Docker engine (scripts/docker-engine.sh); without one it is
# skipped, except under CI=true.
#
# Usage: scripts/package.sh [--release] [--no-test]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROFILE=dev
TEST=1
for a in "$@"; do
  case "$a" in
    --release) PROFILE=release ;;
    --no-test) TEST=0 ;;
    *) echo "usage: $0 [--release] [--no-test]" >&2; exit 2 ;;
  esac
done
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CODEMCP_DIST="${CODEMCP_DIST:-$TARGET_DIR/dist}"
BUILT="${CODEMCP_BIN:-$TARGET_DIR/debug/codemcp}"
if [ "$PROFILE" = release ]; then BUILT="$TARGET_DIR/release/codemcp"; fi
# Every artifact carries this stripped copy (the debug one: 204 MB -> 84 MB).
export CODEMCP_BIN="$CODEMCP_DIST/bin/codemcp"
# shellcheck source=packaging/lib.sh
. "$ROOT/packaging/lib.sh"
rm -rf "$CODEMCP_DIST"
mkdir -p "$CODEMCP_DIST/bin"
FIGURES="$CODEMCP_DIST/figures.txt"
echo "codemcp $VERSION, profile $PROFILE, $(date -u +%FT%TZ)" >"$FIGURES"
now() { date +%s%N; }
took() { echo "$(( ($(now) - $1) / 1000000 )) ms"; }
figure() { echo "$*" | tee -a "$FIGURES" >&2; }

if [ "$PROFILE" = release ] && [[ "$CODEMCP_GITHUB_REPO" == OWNER/* ]]; then
  die "packaging/identity.env still has placeholders: set the repository and names first (docs/releasing.md)"
fi
[ -x "$BUILT" ] || die "no binary at $BUILT: cargo build --ignore-rust-version ${PROFILE/dev/} (or set CODEMCP_BIN)"
# A release serves as its own Monty pool worker (docs/releasing.md#toolchains):
# without it `serve --http` would need a worker installed or downloaded first.
if [ "$PROFILE" = release ] && ! "$BUILT" subprocess </dev/null >/dev/null 2>&1; then
  die "$BUILT was built without the self-worker: cargo +nightly build --release --locked --features self-worker"
fi
strip -o "$CODEMCP_BIN" "$BUILT"
figure "binary     $BUILT $(size_mb "$BUILT"), stripped $(size_mb "$CODEMCP_BIN")"
if [ "$PROFILE" = release ]; then
  TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
  ARCHIVE="codemcp-$VERSION-$TRIPLE"
  mkdir -p "$CODEMCP_DIST/$ARCHIVE"
  cp "$CODEMCP_BIN" "$ROOT/README.md" "$CODEMCP_DIST/$ARCHIVE/"
  tar -C "$CODEMCP_DIST" -czf "$CODEMCP_DIST/$ARCHIVE.tar.gz" "$ARCHIVE"
  rm -rf "${CODEMCP_DIST:?}/$ARCHIVE"
  figure "binstall   $ARCHIVE.tar.gz  $(size_mb "$CODEMCP_DIST/$ARCHIVE.tar.gz")"
fi

T=$(now)
WHEEL="$("$ROOT/packaging/python/build.sh" | tail -n 1)"
figure "wheel      $(basename "$WHEEL")  $(size_mb "$WHEEL")  built in $(took "$T")"

T=$(now)
mapfile -t NPM < <("$ROOT/packaging/npm/build.sh")
NPM_PLATFORM="$(printf '%s\n' "${NPM[@]}" | grep -- "-$(npm_os)-$(npm_cpu)-")"
NPM_MAIN="$(printf '%s\n' "${NPM[@]}" | grep -v -- "-$(npm_os)-$(npm_cpu)-")"
figure "npm        $(basename "$NPM_MAIN") $(size_mb "$NPM_MAIN") + $(basename "$NPM_PLATFORM") $(size_mb "$NPM_PLATFORM")  built in $(took "$T")"

T=$(now)
MCPB="$("$ROOT/packaging/mcpb/build.sh" | tail -n 1)"
figure "mcpb       $(basename "$MCPB")  $(size_mb "$MCPB")  built in $(took "$T")"

render "$ROOT/packaging/server.json" "$CODEMCP_DIST/server.json" \
  "MCPB_FILE=$(basename "$MCPB")" "MCPB_SHA256=$(sha256sum "$MCPB" | cut -d' ' -f1)"
python3 "$ROOT/packaging/check_server_json.py" "$CODEMCP_DIST/server.json" --wheel "$WHEEL" \
  --npm "$NPM_MAIN" --mcpb "$MCPB" --crate-readme "$ROOT/README.md"

IMAGE=""
if docker info >/dev/null 2>&1; then
  T=$(now)
  IMAGE="$("$ROOT/packaging/container/build.sh" "codemcp:$VERSION" | tail -n 1)"
  figure "image      $IMAGE  $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.1f MB", $1/1e6}')  built in $(took "$T")"
  if [ "$PROFILE" = release ]; then
    docker save "$IMAGE" | gzip -6 >"$CODEMCP_DIST/codemcp-$VERSION-image.tar.gz"
    figure "image tar  codemcp-$VERSION-image.tar.gz  $(size_mb "$CODEMCP_DIST/codemcp-$VERSION-image.tar.gz")"
  fi
elif [ "${CI:-}" = true ]; then
  die "no Docker engine answers (CI=true needs the image): scripts/docker-engine.sh"
else
  say "no Docker engine answers: the gateway image is skipped"
fi

(cd "$CODEMCP_DIST" && find . -maxdepth 2 -type f \( -name '*.whl' -o -name '*.tgz' -o -name '*.mcpb' \
  -o -name 'server.json' -o -name '*.tar.gz' \) -printf '%P\n' | sort | xargs sha256sum >SHA256SUMS)

if [ "$TEST" = 1 ]; then
  T=$(now); "$ROOT/packaging/python/test.sh" "$WHEEL"; figure "test wheel $(took "$T")"
  T=$(now); "$ROOT/packaging/npm/test.sh" "$NPM_MAIN" "$NPM_PLATFORM"; figure "test npm   $(took "$T")"
  T=$(now); "$ROOT/packaging/mcpb/test.sh" "$MCPB"; figure "test mcpb  $(took "$T")"
  if [ -n "$IMAGE" ]; then
    T=$(now); "$ROOT/packaging/container/test.sh" "$IMAGE"; figure "test image $(took "$T")"
    T=$(now); CODEMCP_IMAGE="$IMAGE" "$ROOT/packaging/container/example.sh" test
    figure "test two gateways + Redis example $(took "$T") (Redis image built when missing)"
  fi
fi
say "artifacts in $CODEMCP_DIST (SHA256SUMS, figures.txt)"
