# Sourced by the image scripts here: unpack pinned Debian packages into a root
# file system (no maintainer scripts), from a private apt state so the host's
# sources, lists and status stay untouched (scripts/build-worker-image.sh does
# the same for the worker image).
#
# debs_rootfs ROOTFS WORK SUITE PKG=VERSION...   sets DEB_VERSIONS (pkg=ver,...)
# A suite's point release replaces versions in place: when a pin has left the
# suite, its current version is taken, said loudly, and recorded in DEB_VERSIONS.
debs_rootfs() {
  local rootfs="$1" work="$2" suite="$3" mirror="${CODEMCP_DEBIAN_MIRROR:-http://deb.debian.org/debian}" d
  shift 3
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  mkdir -p "$rootfs" "$work/debs" "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
  {
    echo "deb [signed-by=$keyring] $mirror $suite main"
    echo "deb [signed-by=$keyring] $mirror $suite-updates main"
    echo "deb [signed-by=$keyring] ${mirror%/debian}/debian-security $suite-security main"
  } >"$work/apt/sources.list"
  local apt=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache" -o Dir::State::status=/dev/null
    -o APT::Sandbox::User=root -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::CNF::DefaultEnabled=false)
  apt-get "${apt[@]}" update -qq
  if ! (cd "$work/debs" && apt-get "${apt[@]}" download -qq "$@" 2>/dev/null); then
    say "WARNING: a pinned .deb has left $suite; taking its current versions of the same packages"
    rm -f "$work"/debs/*.deb
    (cd "$work/debs" && apt-get "${apt[@]}" download -qq "${@%%=*}")
  fi
  DEB_VERSIONS="$(for d in "$work"/debs/*.deb; do dpkg-deb -W --showformat='${Package}=${Version}\n' "$d"; done | paste -sd, -)"
  for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$rootfs"; done
  rm -rf "$rootfs/usr/share/doc" "$rootfs/usr/share/man" "$rootfs/usr/share/lintian" "$rootfs/usr/share/locale"
}

# The accounts an image needs: root and nobody (65534), whose home is HOME.
base_accounts() {
  local rootfs="$1" home="$2"
  mkdir -p "$rootfs/tmp" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev" "$rootfs/etc"
  chmod 1777 "$rootfs/tmp"
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:%s:/usr/sbin/nologin\n' "$home" >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
}
