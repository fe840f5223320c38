#!/usr/bin/env bash
# Builds a Redis image for the example deployment with no image registry, as
# build.sh builds the gateway's: Debian bookworm's redis-server 7.0 and the
# libraries `ldd` names, pinned, unpacked FROM scratch; user 65534, no
# persistence (the sessions it holds expire anyway). Anyone who can pull images
# may use the official one instead: CODEMCP_REDIS_IMAGE=redis:7 example.sh up.
#
# Usage: packaging/container/redis-image.sh [IMAGE]   (default codemcp-example-redis:7.0)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$PKG_ROOT/packaging/container/debs.sh"
IMAGE="${1:-codemcp-example-redis:7.0}"
DEBS=(redis-server=5:7.0.15-1~deb12u10 redis-tools=5:7.0.15-1~deb12u10 libc6=2.36-9+deb12u14
  libgcc-s1=12.2.0-14+deb12u1 gcc-12-base=12.2.0-14+deb12u1 libstdc++6=12.2.0-14+deb12u1
  libatomic1=12.2.0-14+deb12u1 liblzf1=3.6-3 libjemalloc2=5.3.0-1 libsystemd0=252.39-1~deb12u2
  libssl3=3.0.22-1~deb12u2 libcap2=1:2.66-4+deb12u3+b1 libgcrypt20=1.10.1-3+deb12u1
  liblzma5=5.4.1-1+deb12u2 libzstd1=1.5.4+dfsg2-5 liblz4-1=1.9.4-1 libgpg-error0=1.46-1)

docker info >/dev/null 2>&1 || die "no Docker engine answers; start one first: sudo scripts/docker-engine.sh"
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  say "$IMAGE is there"
  echo "$IMAGE"
  exit 0
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
R="$WORK/rootfs"
debs_rootfs "$R" "$WORK" bookworm "${DEBS[@]}"
base_accounts "$R" /data
mkdir -p "$R/data"
chown 65534:65534 "$R/data"
rm -rf "$R/etc/init.d" "$R/etc/logrotate.d" "$R/lib/systemd" "$R/usr/lib/systemd"
ldconfig -r "$R"
tar -C "$R" --numeric-owner -c . | docker import \
  -c 'USER 65534:65534' -c 'WORKDIR /data' -c 'EXPOSE 6379' \
  -c 'CMD ["/usr/bin/redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]' \
  -c "LABEL codemcp.debs=\"$DEB_VERSIONS\"" - "$IMAGE" >/dev/null
docker run --rm --network none "$IMAGE" /usr/bin/redis-server --version >/dev/null || die "redis-server does not start in $IMAGE"
say "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.1f MB", $1/1e6}'))"
echo "$IMAGE"
