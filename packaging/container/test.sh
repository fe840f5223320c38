#!/usr/bin/env bash
# The gateway image serves: start it hardened (read-only root, no
# capabilities, no new privileges, memory and pid limits) on a network of its
# own, published on a loopback port, with a bearer token; wait for /healthz;
# then one execute_python call over Streamable HTTP from a client that has
# nothing on PATH. Prints the time from `docker run` to a served call.
#
# Usage: packaging/container/test.sh [IMAGE]   (default codemcp:latest)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
IMAGE="${1:-codemcp:latest}"
NAME="codemcp-pkgtest-$$"
TOKEN="$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
PY="$(real_python)"
cleanup() {
  docker rm -f -v "$NAME" >/dev/null 2>&1 || true
  docker network rm "$NAME" >/dev/null 2>&1 || true
}
trap cleanup EXIT
docker network create "$NAME" >/dev/null

START=$(date +%s%N)
docker run -d --name "$NAME" --network "$NAME" -p 127.0.0.1::3388 \
  --read-only --cap-drop ALL --security-opt no-new-privileges --memory 512m --pids-limit 256 \
  -e CODEMCP_HTTP_TOKEN="$TOKEN" "$IMAGE" >/dev/null
PORT="$(docker port "$NAME" 3388/tcp | head -n 1 | sed 's/.*://')"
URL="http://127.0.0.1:$PORT"

for _ in $(seq 1 120); do
  if env -i "$PY" - "$URL/healthz" "$TOKEN" <<'PY' 2>/dev/null; then break; fi
import sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
sys.exit(0 if urllib.request.urlopen(req, timeout=2).status == 200 else 1)
PY
  if [ "$(docker inspect -f '{{.State.Running}}' "$NAME")" != true ]; then
    docker logs "$NAME" >&2
    die "the gateway container stopped"
  fi
  sleep 0.5
done

if ! OUT="$(env -i PATH=/nonexistent "$PY" "$PKG_ROOT/packaging/mcp_client.py" http \
  'import sys; print(sum(range(10)) * 2 - 48, sys.platform)' "$URL/mcp" --token "$TOKEN")"; then
  docker logs "$NAME" >&2
  die "the call through the gateway image failed: $OUT"
fi
MS=$((($(date +%s%N) - START) / 1000000))
case "$OUT" in
  *42*) say "image OK: $IMAGE served execute_python over HTTP ($MS ms from docker run to the result)" ;;
  *)
    docker logs "$NAME" >&2
    die "the gateway image answered: $OUT"
    ;;
esac
