# Shared by the packaging scripts (sourced, not run): where the binary and the
# output are, the release identity (identity.env), and template rendering.
#   CODEMCP_BIN   the binary to package (default: $CARGO_TARGET_DIR or target, debug/codemcp)
#   CODEMCP_DIST  where artifacts go (default: target/dist)
PKG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=packaging/identity.env
. "$PKG_ROOT/packaging/identity.env"
TARGET_DIR="${CARGO_TARGET_DIR:-$PKG_ROOT/target}"
CODEMCP_BIN="${CODEMCP_BIN:-$TARGET_DIR/debug/codemcp}"
CODEMCP_DIST="${CODEMCP_DIST:-$TARGET_DIR/dist}"
# The package version is the crate's (the first `version =` is [package]'s).
VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$PKG_ROOT/Cargo.toml" | head -n 1)"

say() { echo "package: $*" >&2; }
die() { say "error: $*"; exit 1; }

need_binary() {
  [ -x "$CODEMCP_BIN" ] || die "no binary at $CODEMCP_BIN: cargo build --ignore-rust-version (or set CODEMCP_BIN)"
}

# render TEMPLATE OUT [NAME=VALUE...]: replaces @NAME@ by VALUE, and the
# identity's @CODEMCP_*@ and @VERSION@; fails when a placeholder is left.
render() {
  local template="$1" out="$2" pair
  shift 2
  local args=(-e "s|@VERSION@|$VERSION|g" -e "s|@CODEMCP_GITHUB_REPO@|$CODEMCP_GITHUB_REPO|g"
    -e "s|@CODEMCP_MCP_NAME@|$CODEMCP_MCP_NAME|g" -e "s|@CODEMCP_PYPI_NAME@|$CODEMCP_PYPI_NAME|g"
    -e "s|@CODEMCP_NPM_NAME@|$CODEMCP_NPM_NAME|g")
  local value
  for pair in "$@"; do
    value="${pair#*=}"
    value="${value//&/\\&}" # sed's replacement: & is the match, | our delimiter
    value="${value//|/\\|}"
    args+=(-e "s|@${pair%%=*}@|$value|g")
  done
  sed "${args[@]}" "$template" >"$out"
  if grep -n '@[A-Z_]*@' "$out" >&2; then
    die "$out: a placeholder was left unfilled"
  fi
}

# The host's platform in npm's and MCPB's words (process.platform / process.arch).
npm_os() { case "$(uname -s)" in Linux) echo linux ;; Darwin) echo darwin ;; *) die "no npm os for $(uname -s)" ;; esac; }
npm_cpu() { case "$(uname -m)" in x86_64) echo x64 ;; aarch64|arm64) echo arm64 ;; *) die "no npm cpu for $(uname -m)" ;; esac; }

# A PATH holding only the named commands (symlinks in DIR), for the tests'
# "nothing else on the PATH".
bare_path() {
  local dir="$1" cmd
  shift
  mkdir -p "$dir"
  for cmd in "$@"; do
    ln -sf "$(command -v "$cmd")" "$dir/$cmd"
  done
  echo "$dir"
}

# size PATH: in MB, for the figures.
size_mb() { stat -c %s "$1" | awk '{printf "%.1f MB", $1/1e6}'; }

# The interpreter itself, not a shim (pyenv's are bash scripts), for the tests'
# clients that run with nothing on PATH.
real_python() { python3 -c 'import sys; print(sys.executable)'; }
