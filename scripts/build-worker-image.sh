#!/usr/bin/env bash
# Builds codemcp's CPython worker image with no image registry: a "distroless"
# CPython 3.11 root file system from Debian's .debs (unpacked, no maintainer
# scripts), the pinned `websockets` wheel from PyPI, and worker/bootstrap.py
# read-only at /opt/codemcp/bootstrap.py; user 65534. See shared/notes/containers.md §3, §6.
#
# Idempotent: an image whose labels match this script and bootstrap.py is kept;
# a changed bootstrap.py (or recipe) rebuilds it. Needs a running engine
# (scripts/docker-engine.sh), apt-get (Debian 12) and python3 with pip.
#
# Usage: scripts/build-worker-image.sh        (image: ${CODEMCP_DOCKER_IMAGE:-codemcp-worker:1})
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${CODEMCP_DOCKER_IMAGE:-codemcp-worker:1}"
# Keep in step with scripts/install-worker-python.sh (host workers).
WEBSOCKETS_PIN="websockets==17.4"
PY=3.11
DEBS=(libc6 libgcc-s1 gcc-12-base zlib1g libexpat1 libssl3 libffi8 libbz2-1.0 liblzma5 libsqlite3-0
  libuuid1 libncursesw6 libtinfo6 libreadline8 readline-common libcrypt1 libdb5.3 libgdbm6 libnsl2
  libtirpc3 libtirpc-common libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1
  libcom-err2 media-types "libpython$PY-minimal" "libpython$PY-stdlib" "python$PY-minimal" dash)
say() { echo "build-worker-image: $*" >&2; }

if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers; start one first: sudo scripts/docker-engine.sh"
  exit 1
fi
BOOTSTRAP_SHA="$(sha256sum "$ROOT/worker/bootstrap.py" | cut -d' ' -f1)"
RECIPE_SHA="$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)"
label() { docker image inspect -f "{{index .Config.Labels \"$1\"}}" "$IMAGE" 2>/dev/null || true; }
if [ "$(label codemcp.bootstrap.sha256)" = "$BOOTSTRAP_SHA" ] && [ "$(label codemcp.recipe.sha256)" = "$RECIPE_SHA" ]; then
  say "$IMAGE is up to date"
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  say "python3 has no pip, which fetches the websockets wheel: apt-get install python3-pip"
  exit 1
fi

say "building $IMAGE"
WORK="$(mktemp -d)"
STAGE="codemcp-worker-stage-$$"
cleanup() {
  docker rm -f "$STAGE" >/dev/null 2>&1 || true
  docker rmi "$STAGE:base" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
R="$WORK/rootfs"
mkdir -p "$R" "$WORK/debs"

# `apt-get download` needs package lists; fetch them once when they are missing.
fetch() { (cd "$WORK/debs" && apt-get download -qq -o APT::Sandbox::User=root "${DEBS[@]}"); }
if ! fetch 2>/dev/null; then
  apt-get update -qq
  fetch
fi
for deb in "$WORK"/debs/*.deb; do dpkg-deb -x "$deb" "$R"; done
ln -sf "python$PY" "$R/usr/bin/python3"
ln -sf dash "$R/bin/sh"
mkdir -p "$R/tmp" "$R/proc" "$R/sys" "$R/dev" "$R/etc" "$R/opt/codemcp"
chmod 1777 "$R/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$R/etc/group"
rm -rf "$R/usr/share/doc" "$R/usr/share/man" "$R/usr/share/lintian" "$R/usr/share/locale"
ldconfig -r "$R"

case "$(uname -m)" in
  x86_64) PLATFORM=manylinux2014_x86_64 ;;
  aarch64) PLATFORM=manylinux2014_aarch64 ;;
  *) say "no websockets wheel platform known for $(uname -m)"; exit 1 ;;
esac
python3 -m pip install -q --disable-pip-version-check --no-cache-dir --no-deps \
  --target "$R/usr/local/lib/python$PY/dist-packages" --only-binary=:all: --platform "$PLATFORM" \
  --python-version "$PY" --implementation cp --abi "cp${PY/./}" "$WEBSOCKETS_PIN" 2>&1 |
  grep -v -i "running pip as the 'root' user" >&2 || true
test -d "$R/usr/local/lib/python$PY/dist-packages/websockets"

install -m 0444 "$ROOT/worker/bootstrap.py" "$R/opt/codemcp/bootstrap.py"
chmod 0555 "$R/opt/codemcp"

# Stage 1: the bare file system. Stage 2 compiles the bytecode with the image's
# own CPython (the root file system is read-only at run time, so without .pyc
# files every worker would compile asyncio and websockets again on start).
tar -C "$R" --numeric-owner --owner=0 --group=0 -c . | docker import - "$STAGE:base" >/dev/null
docker run --name "$STAGE" --user 0:0 --network none "$STAGE:base" \
  "python$PY" -m compileall -q -j 0 "/usr/lib/python$PY" "/usr/local/lib/python$PY/dist-packages" /opt/codemcp \
  >/dev/null || true  # a few test modules do not compile; the rest does
docker commit \
  -c 'USER 65534:65534' \
  -c 'ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1' \
  -c 'CMD ["python3", "-u", "/opt/codemcp/bootstrap.py"]' \
  -c "LABEL codemcp.bootstrap.sha256=$BOOTSTRAP_SHA codemcp.recipe.sha256=$RECIPE_SHA codemcp.websockets=$WEBSOCKETS_PIN" \
  "$STAGE" "$IMAGE" >/dev/null

# Smoke test with the hardening the gateway uses.
docker run --rm --cap-drop ALL --security-opt no-new-privileges --read-only --network none \
  --memory 256m --pids-limit 64 "$IMAGE" \
  python3 -c 'import os, websockets, websockets.asyncio.client; assert os.getuid() == 65534; assert os.path.exists("/opt/codemcp/bootstrap.py"); print("build-worker-image: worker image OK, websockets", websockets.__version__)' >&2
say "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
