#!/usr/bin/env bash
# Run codemcp's whole test suite. Installs the pinned test peers first when they
# are missing (scripts/test-deps.sh, into the git-ignored .deps/), so a fresh
# machine needs nothing else than Rust, Python 3 with pip, and Node.js with npm.
#
# Usage: scripts/test.sh [extra cargo test args...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/test-deps.sh
# shellcheck source=/dev/null
. .deps/env.sh

CODEMCP_MONTY_BIN="$(scripts/install-monty-worker.sh "$ROOT/.deps/monty-runtime")"
CODEMCP_PYTHON="$(scripts/install-worker-python.sh "$ROOT/.deps/worker-python")"
export CODEMCP_MONTY_BIN CODEMCP_PYTHON
# Gateways under test get no CPython fallback unless a test asks for one: with a
# Docker engine and the worker image present, the default (auto) would escalate
# to Docker and change the Monty-only verdicts. tests/docker.rs sets its own.
export CODEMCP_FALLBACK="${CODEMCP_FALLBACK:-none}"

# monty 1.x declares rust-version 1.96; it builds fine on 1.95 with this flag.
# Stdio gateways run Monty in-process and HTTP gateways in worker processes by
# default; the second run repeats the core tests with the other placement.
# This includes tests/client_matrix.rs, the client matrix (every pinned MCP client over stdio
# and HTTP; about 6 minutes on a loaded 2-core machine, see docs/clients.md).
if [ $# -eq 0 ]; then
  # Every crate of the workspace (crates/*: their own unit tests) and the gateway.
  cargo test --ignore-rust-version --workspace
  "$CODEMCP_PYTHON" worker/test_bootstrap.py
  # One test binary (tests/integration): stages pick its modules by name.
  CODEMCP_MONTY=pool cargo test --ignore-rust-version --test integration -- gateway:: limits:: runaway::
  # The pool once more with codemcp as its own worker (CODEMCP_MONTY_BIN unset;
  # the runs above use the PyPI worker). Its cargo feature self-worker needs
  # Rust >= 1.96 (Monty's type checker); older toolchains skip this stage.
  rust="$(rustc --version | awk '{print $2}')"
  if [ "$(printf '%s\n1.96.0\n' "$rust" | sort -V | head -1)" = 1.96.0 ]; then
    env -u CODEMCP_MONTY_BIN CODEMCP_MONTY=pool cargo test --ignore-rust-version --features self-worker \
      --test integration -- pool:: self_worker:: gateway:: limits:: runaway:: sessions::
    env -u CODEMCP_MONTY_BIN CODEMCP_MONTY=pool CODEMCP_CORPUS_MODE=MONTY cargo test --ignore-rust-version \
      --features self-worker --test sandbox_corpus
  else
    echo "test.sh: no self-worker pool stage: rustc $rust builds no self-worker (needs 1.96)" >&2
  fi
  CODEMCP_MONTY=inprocess cargo test --ignore-rust-version --test integration -- http:: --skip neighbours_http::
  # The core gateway tests once more with every run in CPython: on the host, and
  # in Docker when an engine answers (always under CI, where it must).
  CODEMCP_ISOLATION=HOST_SYSTEM cargo test --ignore-rust-version --test integration -- gateway:: http:: upstream_faults:: runaway:: --skip neighbours_http::
  if [ "${CI:-}" = true ] || docker info >/dev/null 2>&1; then
    CODEMCP_ISOLATION=DOCKER cargo test --ignore-rust-version --test integration -- gateway:: runaway::
    # Stops and restarts the shared Docker engine (about 4 s), so it runs alone,
    # after every other test that uses Docker.
    cargo test --ignore-rust-version --test docker -- --ignored --test-threads=1
  fi
else
  cargo test --ignore-rust-version "$@"
fi
