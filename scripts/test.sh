#!/usr/bin/env bash
# Run codemcp's whole test suite. Installs the pinned test peers first when they
# are missing (scripts/test-deps.sh, into the git-ignored .deps/), so a fresh
# machine needs nothing else than Rust, Python 3 with pip, and Node.js with npm.
#
# The suite runs as named stages (the `stage` lines at the end). Every stage runs
# even when an earlier one failed; at the end a table says, per stage, passed,
# FAILED (with the names of the failing tests) or skipped (with the reason), and
# how long it took. The exit status is 1 when any stage failed.
#
# Stages that need Docker or Redis skip, with the reason, when the machine has
# neither; with CI=true they run anyway and fail there (see docs/testing.md).
#
# Usage: scripts/test.sh                   every stage
#        scripts/test.sh [cargo test args] one stage: cargo test --ignore-rust-version ARGS
# Env:   TEST_STAGES=name,name             only these stages (the others are listed as skipped)
#        CI=true                           Docker and Redis stages are required
# Each stage's output is also kept in target/tmp/test-stages/NAME.log.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
LOGS="${CARGO_TARGET_DIR:-$ROOT/target}/tmp/test-stages"
mkdir -p "$LOGS"

# ------------------------------------------------------------------ the runner

NAMES=() RESULTS=() TIMES=() NOTES=()
SETUP_FAILED=""

# What a stage needs that a machine may lack: empty when present, else why not.
lacks() {
  case "$1" in
    -) ;;
    docker) docker info >/dev/null 2>&1 || echo "no Docker engine answers (docker info)" ;;
    redis) command -v redis-server >/dev/null 2>&1 || echo "no redis-server on PATH" ;;
    rust196)
      # Monty's type checker, which the self-worker feature builds, needs Rust >= 1.96.
      [ -n "$SELF_WORKER_CARGO" ] ||
        echo "rustc $(rustc --version | awk '{print $2}') builds no self-worker (needs 1.96); CODEMCP_TEST_NIGHTLY=1 builds it with cargo +nightly (docs/testing.md)" ;;
    bwrap) command -v bwrap >/dev/null 2>&1 || echo "no bwrap on PATH (apt-get install bubblewrap)" ;;
    *) echo "unknown requirement $1 (a typo in the stage line?)" ;;
  esac
}

# Docker, Redis and bubblewrap are optional on a developer's machine, required under CI.
optional() { [ "${CI:-}" != true ] && { [ "$1" = docker ] || [ "$1" = redis ] || [ "$1" = bwrap ]; }; }

# The cargo that builds the self-worker feature (Rust >= 1.96): the default
# toolchain when it is new enough, else `cargo +nightly` when asked for
# (CODEMCP_TEST_NIGHTLY=1: a second build of the tree, about 8 min on 2 cores).
SELF_WORKER_CARGO=""
if [ "$(printf '%s\n1.96.0\n' "$(rustc --version | awk '{print $2}')" | sort -V | head -1)" = 1.96.0 ]; then
  SELF_WORKER_CARGO=cargo
elif [ "${CODEMCP_TEST_NIGHTLY:-}" = 1 ] && cargo +nightly --version >/dev/null 2>&1; then
  SELF_WORKER_CARGO="cargo +nightly"
fi

# The names of the tests that failed, from cargo's output in LOG (one line);
# else why the stage failed.
failing_tests() {
  local names
  names="$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$1" | sort -u | paste -sd' ' -)"
  if [ -n "$names" ]; then
    echo "$names"
  elif grep -q '^error: could not compile' "$1"; then
    echo "build failed: $(grep -m1 '^error' "$1")"
  elif grep -q '^error: test failed' "$1"; then
    grep -m1 '^error: test failed' "$1" | sed 's/^error: //'
  else
    echo "exit $2: $(tail -n 1 "$1" | cut -c1-140)"
  fi
}

record() { NAMES+=("$1") RESULTS+=("$2") TIMES+=("$3") NOTES+=("$4"); }

# stage NAME NEEDS 'COMMAND': runs COMMAND (a shell line, evaluated in a subshell)
# as stage NAME. NEEDS is `-` or a comma-separated list of docker, redis, bwrap, rust196.
stage() {
  local name="$1" needs="$2" command="$3" need why
  if [ -n "${TEST_STAGES:-}" ] && [[ ",$TEST_STAGES," != *",$name,"* ]]; then
    record "$name" skipped 0 "not in TEST_STAGES"
    return
  fi
  if [ -n "$SETUP_FAILED" ]; then
    record "$name" skipped 0 "setup failed: $SETUP_FAILED"
    return
  fi
  for need in ${needs//,/ }; do
    why="$(lacks "$need")"
    [ -z "$why" ] && continue
    if optional "$need" || [ "$need" = rust196 ]; then
      echo "test.sh: skipping stage $name: $why" >&2
      record "$name" skipped 0 "$why"
      return
    fi
    case "$need" in docker | redis | bwrap) ;; *) record "$name" FAILED 0 "$why"; return ;; esac
  done
  echo "test.sh: ---- stage $name: $command" >&2
  local log="$LOGS/$name.log" started=$SECONDS status
  (eval "$command") 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if [ "$status" = 0 ]; then
    record "$name" passed $((SECONDS - started)) ""
  else
    record "$name" FAILED $((SECONDS - started)) "$(failing_tests "$log" "$status")"
  fi
}

summary() {
  local i failed=0 t
  echo
  echo "test.sh: summary (logs in $LOGS)"
  printf '  %-20s %-8s %8s  %s\n' stage result time "failing tests / reason"
  for i in "${!NAMES[@]}"; do
    t="${TIMES[$i]}"
    printf '  %-20s %-8s %5dm%02ds  %s\n' "${NAMES[$i]}" "${RESULTS[$i]}" $((t / 60)) $((t % 60)) "${NOTES[$i]}"
    [ "${RESULTS[$i]}" = FAILED ] && failed=$((failed + 1))
  done
  if ! command -v redis-server >/dev/null 2>&1 && [ "${CI:-}" != true ]; then
    echo "  note: no redis-server on PATH: the Redis session-store tests inside the cargo stages skipped themselves"
  fi
  if [ "$failed" -gt 0 ]; then
    echo "test.sh: $failed stage(s) failed"
    return 1
  fi
  echo "test.sh: every stage that ran passed"
}

# cargo test as every stage runs it: every test binary, even after one failed.
ct() { cargo test --ignore-rust-version --no-fail-fast "$@"; }

# ------------------------------------------------------------------ setup

setup() {
  scripts/test-deps.sh || return 1
  # shellcheck source=/dev/null
  . .deps/env.sh || return 1
  CODEMCP_MONTY_BIN="$(scripts/install-monty-worker.sh "$ROOT/.deps/monty-runtime")" || return 1
  CODEMCP_PYTHON="$(scripts/install-worker-python.sh "$ROOT/.deps/worker-python")" || return 1
  export CODEMCP_MONTY_BIN CODEMCP_PYTHON
}
started=$SECONDS
if setup; then
  record setup passed $((SECONDS - started)) ""
else
  SETUP_FAILED="test peers or workers could not be installed (see above)"
  record setup FAILED $((SECONDS - started)) "$SETUP_FAILED"
fi
# Gateways under test get no CPython fallback unless a test asks for one: with a
# Docker engine and the worker image present, the default (auto) would escalate
# to Docker and change the Monty-only verdicts. The docker tests (tests/docker/) set their own.
export CODEMCP_FALLBACK="${CODEMCP_FALLBACK:-none}"

# ------------------------------------------------------------------ the stages

if [ $# -gt 0 ]; then
  ARGS=("$@")
  stage cargo-test - 'cargo test --ignore-rust-version "${ARGS[@]}"'
  summary
  exit
fi

# monty 1.x declares rust-version 1.96; it builds fine on 1.95 with --ignore-rust-version.
# Stdio gateways run Monty in-process and HTTP gateways in worker processes by
# default; later stages repeat the core tests with the other placement.
# `workspace` runs the crates' own tests and the four test binaries of tests/ (see tests/README.md):
# `integration` (needs nothing outside .deps/), `docker` (skips without an engine), `sandbox_corpus`
# (the escape corpus in every mode) and `real_peers` (the 36 real servers and the client matrix:
# about 6 + 6 minutes on a loaded 2-core machine, see docs/clients.md). The later stages run
# modules of the integration binary, picked by name (`-- gateway::`), in other placements.
stage workspace - 'ct --workspace'
stage bootstrap - '"$CODEMCP_PYTHON" worker/test_bootstrap.py'
stage pool - 'CODEMCP_MONTY=pool ct --test integration -- gateway:: limits:: runaway::'
# The pool once more with codemcp as its own worker (CODEMCP_MONTY_BIN unset;
# the runs above use the PyPI worker). Its cargo feature self-worker needs
# Rust >= 1.96 (Monty's type checker); older toolchains skip these stages.
swt() { $SELF_WORKER_CARGO test --ignore-rust-version --no-fail-fast --features self-worker "$@"; }
stage self-worker rust196 'unset CODEMCP_MONTY_BIN; CODEMCP_MONTY=pool swt --test integration -- pool:: self_worker:: gateway:: limits:: runaway:: sessions::'
stage self-worker-corpus rust196 'unset CODEMCP_MONTY_BIN; CODEMCP_MONTY=pool CODEMCP_CORPUS_MODE=MONTY swt --test sandbox_corpus'
stage http - 'CODEMCP_MONTY=inprocess ct --test integration -- http:: --skip neighbours_http::'
# The core gateway tests once more with every run in CPython: on the host, and
# in Docker when an engine answers (always under CI, where it must).
stage host - 'CODEMCP_ISOLATION=HOST_SYSTEM ct --test integration -- gateway:: http:: upstream_faults:: runaway:: --skip neighbours_http::'
# CPython in the bubblewrap sandbox (no Docker needed): the attacks it stops, and
# the core gateway tests with every run there. The escape corpus's SANDBOX mode
# runs in the workspace stage.
stage sandbox bwrap 'ct --test integration -- sandbox_placement::'
stage sandbox-gateway bwrap 'CODEMCP_ISOLATION=SANDBOX ct --test integration -- gateway:: runaway::'
stage docker docker 'CODEMCP_ISOLATION=DOCKER ct --test integration -- gateway:: runaway::'
# Stops and restarts the shared Docker engine (about 4 s), so it runs alone,
# after every other test that uses Docker.
stage docker-engine docker 'ct --test docker -- --ignored --test-threads=1'

summary
