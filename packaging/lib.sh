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
# pinned_wheel NAME: "VERSION SHA256" of NAME's wheel for this machine, from
# crates/image/recipe/wheels.pins (the binary reads the same file).
pinned_wheel() {
  awk -v n="$1" -v m="$(uname -m)" '$1 == n && $3 == m { print $2, $5 }' "$PKG_ROOT/crates/image/recipe/wheels.pins"
}

# expect_pool_answer WHAT OUT: OUT (from `mcp_client.py serve-http 'print(6*7)'`)
# printed 42 from a run on the Monty pool engine.
expect_pool_answer() {
  case "$2" in
    *42*"engine: monty-pool"*) say "$1: serve --http answered a run on monty-pool" ;;
    *) die "$1: serve --http answered: $2" ;;
  esac
}

real_python() { python3 -c 'import sys; print(sys.executable)'; }
