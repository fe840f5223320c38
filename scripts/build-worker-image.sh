#!/usr/bin/env bash
# Builds codemcp's CPython worker image with no image registry: a "distroless"
# CPython 3.14 root file system (the version Monty follows) from Debian forky's
# .debs, pinned by exact version (unpacked, no maintainer scripts), the pinned
# `websockets` wheel from PyPI, and worker/bootstrap.py read-only at
# /opt/codemcp/bootstrap.py; user 65534. See shared/notes/containers.md §3, §6.
#
# forky's lists are fetched into a private apt state under a temp dir: the
# host's own apt sources and lists are left alone. forky is a moving suite: when
# a pinned version has left it, the suite's current version is taken instead,
# but only if it is still CPython $PY (said loudly; the versions used are in the
# image's codemcp.debs label).
#
# Idempotent: an image whose labels match this script and bootstrap.py is kept;
# a changed bootstrap.py (or recipe) rebuilds it. Needs a running engine
# (scripts/docker-engine.sh), apt-get (Debian 12) and python3 with pip.
#
# Usage: scripts/build-worker-image.sh        (image: ${CODEMCP_DOCKER_IMAGE:-codemcp-worker:2})
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${CODEMCP_DOCKER_IMAGE:-codemcp-worker:2}"
# Keep in step with scripts/install-worker-python.sh (host workers).
WEBSOCKETS_PIN="websockets==17.4"
# Keep PY in step with src/exec/worker (MONTY_CPYTHON) and scripts/install-worker-python.sh.
PY=3.14
SUITE=forky
MIRROR="${CODEMCP_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# The closure of python3.14-minimal + libpython3.14-stdlib + dash in forky
# (`apt-cache depends --recurse`, less debconf and the installer's libraries).
DEBS=(libc6=2.43-7 libc-gconv-modules-extra=2.43-7 libgcc-s1=16.2.0-3 gcc-16-base=16.2.0-3
  zlib1g=1:1.3.dfsg+really1.3.2-3 libexpat1=2.9.0-1 libssl3t64=3.6.5-1 openssl-provider-legacy=3.6.5-1
  libffi8=3.8.0-2 libbz2-1.0=1.0.8-6+b2 liblzma5=5.8.4-1 libzstd1=1.5.7+dfsg-4 libsqlite3-0=3.53.4-2
  libuuid1=2.42.4-1 libncursesw6=6.6+20260608-2 libtinfo6=6.6+20260608-2 libreadline8t64=8.3-4
  readline-common=8.3-4 libdb5.3t64=5.3.28+dfsg2-11+b1 media-types=14.0.0 netbase=6.6
  "libpython$PY-minimal=3.14.8-1" "libpython$PY-stdlib=3.14.8-1" "python$PY-minimal=3.14.8-1" dash=0.5.12-12)
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
PY_TUPLE="${PY/./, }"
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

# A private apt state for forky: the host's sources, lists and status stay untouched.
mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$WORK/apt/sources.list"
APT=(-o "Dir::Etc::SourceList=$WORK/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$WORK/apt/lists" -o "Dir::Cache=$WORK/apt/cache" -o Dir::State::status=/dev/null
  -o APT::Sandbox::User=root -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
  -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false -o Acquire::IndexTargets::deb::CNF::DefaultEnabled=false)
apt-get "${APT[@]}" update -qq
if ! (cd "$WORK/debs" && apt-get "${APT[@]}" download -qq "${DEBS[@]}" 2>/dev/null); then
  say "WARNING: a pinned .deb has left $SUITE; taking $SUITE's current versions of the same packages"
  rm -f "$WORK"/debs/*.deb
  (cd "$WORK/debs" && apt-get "${APT[@]}" download -qq "${DEBS[@]%%=*}")
fi
DEB_VERSIONS="$(for d in "$WORK"/debs/*.deb; do dpkg-deb -f "$d" Package Version | paste -sd= -; done | paste -sd, -)"
# forky's packages ship only under /usr (merged /usr; base-files makes the links).
mkdir -p "$R/usr/bin" "$R/usr/sbin" "$R/usr/lib" "$R/usr/lib64"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$R/$d"; done
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
# The suite's current version must still be CPython $PY (see the fallback above).
PY_VERSION="$(docker run --rm --network none "$STAGE:base" "python$PY" -c "import sys; assert sys.version_info[:2] == ($PY_TUPLE), sys.version; print(sys.version.split()[0])")"
docker commit \
  -c 'USER 65534:65534' \
  -c 'ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1' \
  -c 'CMD ["python3", "-u", "/opt/codemcp/bootstrap.py"]' \
  -c "LABEL codemcp.bootstrap.sha256=$BOOTSTRAP_SHA codemcp.recipe.sha256=$RECIPE_SHA codemcp.websockets=$WEBSOCKETS_PIN codemcp.python=$PY_VERSION codemcp.debs=\"$DEB_VERSIONS\"" \
  "$STAGE" "$IMAGE" >/dev/null

# Smoke test with the hardening the gateway uses.
docker run --rm --cap-drop ALL --security-opt no-new-privileges --read-only --network none \
  --memory 256m --pids-limit 64 "$IMAGE" \
  python3 -c 'import os, websockets, websockets.asyncio.client; assert os.getuid() == 65534; assert os.path.exists("/opt/codemcp/bootstrap.py"); print("build-worker-image: worker image OK, websockets", websockets.__version__)' >&2
say "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
