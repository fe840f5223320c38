#!/usr/bin/env bash
# An example deployment: two gateways from the codemcp image sharing one Redis
# session store on a Docker network of their own, each published on a loopback
# port. A session started on one gateway continues on the other (its Monty
# state travels sealed through Redis; docs/sessions.md). Plain `docker run`,
# no compose. Put any HTTP load balancer in front of the two ports.
#
#   example.sh up      start (prints the URLs and the bearer token)
#   example.sh check   x = 41 on gateway 1, then x + 1 on gateway 2 with the same session: 42
#   example.sh down    stop and remove everything it started
#   example.sh test    up, check, down (CI); ports chosen by Docker
# Env: CODEMCP_IMAGE (codemcp:latest), CODEMCP_REDIS_IMAGE (codemcp-example-redis:7.0,
#      built by redis-image.sh when missing; or redis:7 where images can be pulled),
#      CODEMCP_HTTP_TOKEN and CODEMCP_SESSION_KEY (random when unset; kept in $STATE),
#      PORT1 / PORT2 (3381 / 3382; 0: any free port)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
P=codemcp-example
IMAGE="${CODEMCP_IMAGE:-codemcp:latest}"
REDIS_IMAGE="${CODEMCP_REDIS_IMAGE:-codemcp-example-redis:7.0}"
STATE="${CODEMCP_EXAMPLE_STATE:-$HOME/.local/state/codemcp-example.env}"
PY="$(real_python)"

secret() { "$PY" -c 'import secrets; print(secrets.token_urlsafe(32))'; }
port_of() { docker port "$1" 3388/tcp | head -n 1 | sed 's/.*://'; }

up() {
  local token="${CODEMCP_HTTP_TOKEN:-$(secret)}" key="${CODEMCP_SESSION_KEY:-$(secret)}" i port
  [ "$REDIS_IMAGE" != codemcp-example-redis:7.0 ] || "$PKG_ROOT/packaging/container/redis-image.sh" "$REDIS_IMAGE" >/dev/null
  docker network create "$P" >/dev/null
  docker run -d --name "$P-redis" --network "$P" --read-only --cap-drop ALL \
    --security-opt no-new-privileges --memory 256m "$REDIS_IMAGE" >/dev/null
  for i in 1 2; do
    port="PORT$i"
    port="${!port:-338$i}"
    [ "$port" != 0 ] || port=""
    docker run -d --name "$P-gw$i" --network "$P" -p "127.0.0.1:$port:3388" \
      --read-only --cap-drop ALL --security-opt no-new-privileges --memory 512m --pids-limit 256 \
      -e CODEMCP_HTTP_TOKEN="$token" -e CODEMCP_SESSION_KEY="$key" \
      -e CODEMCP_SESSION_STORE="redis://$P-redis:6379" "$IMAGE" >/dev/null
  done
  mkdir -p "$(dirname "$STATE")"
  (umask 077 && printf 'TOKEN=%s\nURL1=http://127.0.0.1:%s/mcp\nURL2=http://127.0.0.1:%s/mcp\n' \
    "$token" "$(port_of "$P-gw1")" "$(port_of "$P-gw2")" >"$STATE")
  say "up: $(sed -n 's/^URL\([12]\)=/gateway \1 /p' "$STATE" | paste -sd, -) (bearer token in $STATE)"
}

# call URL CODE [SESSION]: the text of one execute_python result.
call() {
  local args=(http "$2" "$1" --token "$TOKEN")
  [ -z "${3:-}" ] || args+=(--session "$3")
  env -i PATH=/nonexistent "$PY" "$PKG_ROOT/packaging/mcp_client.py" "${args[@]}"
}

check() {
  # shellcheck source=/dev/null
  . "$STATE"
  local url out session
  for url in "$URL1" "$URL2"; do
    for _ in $(seq 1 120); do
      call "$url" 'pass' >/dev/null 2>&1 && break
      sleep 0.5
    done
  done
  out="$(call "$URL1" 'x = 41')"
  session="$(echo "$out" | sed -n 's/.*\[session: \([A-Za-z0-9_-]*\)\].*/\1/p' | tail -n 1)"
  [ -n "$session" ] || die "gateway 1 named no session: $out"
  out="$(call "$URL2" 'print(x + 1)' "$session")"
  case "$out" in
    *42*) say "example OK: a session begun on gateway 1 went on on gateway 2 through Redis" ;;
    *) docker logs "$P-gw2" >&2; die "gateway 2 did not continue the session: $out" ;;
  esac
}

down() {
  docker rm -f -v "$P-gw1" "$P-gw2" "$P-redis" >/dev/null 2>&1 || true
  docker network rm "$P" >/dev/null 2>&1 || true
  rm -f "$STATE"
}

case "${1:-}" in
  up) up ;;
  check) check ;;
  down) down ;;
  test)
    export PORT1=0 PORT2=0 CODEMCP_EXAMPLE_STATE="$(mktemp)"
    STATE="$CODEMCP_EXAMPLE_STATE"
    trap down EXIT
    down
    up
    check
    ;;
  *) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
