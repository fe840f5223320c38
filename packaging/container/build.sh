#!/usr/bin/env bash
# Builds the gateway image with no image registry, as scripts/build-worker-image.sh
# builds the worker's: a root file system from Debian bookworm .debs pinned by
# version (unpacked, no maintainer scripts) holding only what the binary needs
# at run time (`ldd`: glibc and libgcc_s; the CA bundle for upstreams over
# HTTPS; tini as PID 1 to reap upstream servers' children), the codemcp binary,
# and, until codemcp serves as its own Monty worker, the pinned `monty` worker
# binary from PyPI (pool placement, the default of `serve --http`). FROM
# scratch via `docker import`; user 65534; HOME=/var/lib/codemcp.
#
# The image serves `codemcp serve --http 0.0.0.0:3388`, which needs a bearer
# token: docker run -e CODEMCP_HTTP_TOKEN=... -p 127.0.0.1:3388:3388 codemcp:VERSION
# Servers file: mount it at /var/lib/codemcp/.config/codemcp/mcp.json, or set
# CODEMCP_CONFIG (see docs). No CPython fallback inside (CODEMCP_FALLBACK=none).
#
# Usage: packaging/container/build.sh [IMAGE]   (default codemcp:$VERSION; also tagged codemcp:latest)
# Env: CODEMCP_BIN, CODEMCP_DEBIAN_MIRROR, CODEMCP_PYPI_FILES, CODEMCP_GATEWAY_MONTY (pypi|none, default pypi)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
need_binary
IMAGE="${1:-codemcp:$VERSION}"
SUITE=bookworm
DEBS=(libc6=2.36-9+deb12u14 libgcc-s1=12.2.0-14+deb12u1 gcc-12-base=12.2.0-14+deb12u1
  ca-certificates=20250419~deb12u2 tini=0.19.0-1+b3)
# The Monty worker wheel: the same pins the binary provisions from (one table,
# crates/image/recipe/wheels.pins: name version machine size sha256 path).
MONTY_PINS="$PKG_ROOT/crates/image/recipe/wheels.pins"
MONTY="${CODEMCP_GATEWAY_MONTY:-pypi}"

. "$PKG_ROOT/packaging/container/debs.sh"
docker info >/dev/null 2>&1 || die "no Docker engine answers; start one first: sudo scripts/docker-engine.sh"
say "building $IMAGE from $CODEMCP_BIN"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
R="$WORK/rootfs"
debs_rootfs "$R" "$WORK" "$SUITE" "${DEBS[@]}"
# What ca-certificates' maintainer script would have generated.
mkdir -p "$R/etc/ssl/certs"
cat "$R"/usr/share/ca-certificates/mozilla/*.crt >"$R/etc/ssl/certs/ca-certificates.crt"

install -m 0755 "$CODEMCP_BIN" "$R/usr/bin/codemcp"
if [ "$MONTY" = pypi ]; then
  ARCH="$(uname -m)"
  read -r _ MONTY_VERSION _ MONTY_SIZE MONTY_SHA256 MONTY_PATH < <(
    awk -v m="$ARCH" '$1 == "pydantic-monty-runtime" && $3 == m' "$MONTY_PINS") ||
    die "no pinned Monty worker wheel for $ARCH in $MONTY_PINS (set CODEMCP_GATEWAY_MONTY=none)"
  PYPI_FILES="${CODEMCP_PYPI_FILES:-https://files.pythonhosted.org}"
  WHL="$WORK/${MONTY_PATH##*/}"
  say "fetching pydantic-monty-runtime $MONTY_VERSION ($MONTY_SIZE bytes)"
  python3 -c 'import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as r, open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(r, out)' "$PYPI_FILES/$MONTY_PATH" "$WHL" || die "could not download $PYPI_FILES/$MONTY_PATH"
  echo "$MONTY_SHA256  $WHL" | sha256sum -c --quiet - || die "$WHL does not have the pinned sha256"
  python3 - "$WHL" "$R/usr/bin/monty" <<'PY'
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
name = next(n for n in z.namelist() if n.endswith(".data/scripts/monty"))
with open(sys.argv[2], "wb") as out:
    out.write(z.read(name))
os.chmod(sys.argv[2], 0o755)
PY
fi

base_accounts "$R" /var/lib/codemcp
mkdir -p "$R/var/lib/codemcp"
chown 65534:65534 "$R/var/lib/codemcp"
chmod 0700 "$R/var/lib/codemcp"
rm -rf "$R/usr/share/ca-certificates"
ldconfig -r "$R"

tar -C "$R" --numeric-owner -c . | docker import \
  -c 'USER 65534:65534' \
  -c 'ENV HOME=/var/lib/codemcp CODEMCP_FALLBACK=none' \
  -c 'WORKDIR /var/lib/codemcp' \
  -c 'VOLUME /var/lib/codemcp' \
  -c 'EXPOSE 3388' \
  -c 'ENTRYPOINT ["/usr/bin/tini-static", "--", "/usr/bin/codemcp"]' \
  -c 'CMD ["serve", "--http", "0.0.0.0:3388"]' \
  -c "LABEL io.modelcontextprotocol.server.name=$CODEMCP_MCP_NAME org.opencontainers.image.version=$VERSION org.opencontainers.image.source=https://github.com/$CODEMCP_GITHUB_REPO codemcp.debs=\"$DEB_VERSIONS\" codemcp.monty=$MONTY" \
  - "$IMAGE" >/dev/null
[ "$IMAGE" = "codemcp:latest" ] || docker tag "$IMAGE" codemcp:latest

# The binary starts in the image (a missing library or too old a glibc shows here).
docker run --rm --network none "$IMAGE" --help >/dev/null || die "codemcp does not start in $IMAGE"
say "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.1f MB", $1/1e6}'); debs: $DEB_VERSIONS)"
echo "$IMAGE"
