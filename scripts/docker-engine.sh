#!/usr/bin/env bash
# Makes a Docker engine answer on /var/run/docker.sock, for codemcp's sandboxed
# CPython worker (CODEMCP_ISOLATION=DOCKER, CODEMCP_FALLBACK=docker|auto).
# As root on Debian: installs Debian's docker.io when dockerd is missing and
# starts dockerd by hand when no engine answers (machines without systemd, such
# as CI; see shared/notes/containers.md §1). Safe to re-run: an engine that
# already answers is left alone. Then build the image: scripts/build-worker-image.sh
#
# Usage: sudo scripts/docker-engine.sh      (log: $DOCKERD_LOG, default /var/log/codemcp-dockerd.log)
set -euo pipefail
LOG="${DOCKERD_LOG:-/var/log/codemcp-dockerd.log}"
say() { echo "docker-engine: $*" >&2; }
answers() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && answers; then
  say "an engine already answers ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  say "no Docker engine answers, and installing or starting one needs root: run sudo $0"
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  say "installing Debian's docker.io (about 30 s)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker.io >/dev/null
fi

say "starting dockerd (log: $LOG)"
# /run may be on disk: a pid file left by an engine that died blocks a new one.
if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
  rm -f /var/run/docker.pid
fi
setsid nohup dockerd >>"$LOG" 2>&1 </dev/null &
for _ in $(seq 1 120); do
  answers && break
  sleep 0.5
done
if ! answers; then
  say "dockerd did not answer within 60 s; the end of $LOG:"
  tail -n 30 "$LOG" >&2
  exit 1
fi
say "engine ready ($(docker version -f '{{.Server.Version}}' 2>/dev/null)); stop it with: kill \$(cat /var/run/docker.pid)"
