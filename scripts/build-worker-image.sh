#!/usr/bin/env bash
# Builds codemcp's CPython worker image: a thin wrapper around
# `codemcp setup docker`, which carries the recipe (crates/exec/src/worker/image/:
# Debian forky's CPython 3.14 .debs and the websockets wheel, each pinned by
# SHA-256; no registry, no apt index) and builds the image with the engine.
# The binary also builds it by itself on the first Docker escalation that finds
# it missing; this script is for CI and for building ahead of time.
#
# Idempotent: an image whose labels match this binary's recipe and
# worker/bootstrap.py is kept. Needs a running engine (scripts/docker-engine.sh).
# Downloads are cached in ${XDG_CACHE_HOME:-~/.cache}/codemcp/worker-image.
#
# Usage: scripts/build-worker-image.sh [--rebuild]   (image: ${CODEMCP_DOCKER_IMAGE:-codemcp-worker:2})
#   CODEMCP_BIN=path/to/codemcp uses that binary instead of `cargo run`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${CODEMCP_BIN:-}" ]; then
  exec "$CODEMCP_BIN" setup docker "$@"
fi
cd "$ROOT"
# monty declares rust-version 1.96; it builds fine on 1.95 with this flag. The
# debug binary is the one `cargo test` builds next, so CI builds it once.
exec cargo run --quiet --ignore-rust-version --bin codemcp -- setup docker "$@"
