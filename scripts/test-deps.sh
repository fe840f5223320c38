#!/usr/bin/env bash
# Install the third-party peers codemcp's integration tests talk to, pinned,
# into <repo>/.deps/ (git-ignored):
#   .deps/node/node_modules  npm: server-everything, server-filesystem, server-memory, inspector,
#                            the conformance suite and node 22 (npm package `node`, in .bin/node)
#                            (scripts/test-deps/package.json + package-lock.json, `npm ci`)
#   .deps/py2                venv with mcp 2.x (scripts/test-deps/requirements-mcp2.txt)
#   .deps/py1                venv with mcp 1.x (scripts/test-deps/requirements-mcp1.txt)
#   .deps/fw2, .deps/fw1     venvs with agent frameworks' MCP clients for the client matrix, on mcp 2.x
#                            and 1.x (scripts/test-deps/requirements-fw2.txt, requirements-fw1.txt)
#   .deps/clients-node       npm: the MCP Inspector 2.x and the TypeScript SDK 2.x client, for the
#                            client matrix (scripts/test-deps/clients/, `npm ci`; runs on node 22)
#   .deps/servers            36 real MCP servers for tests/real_peers/real_servers.rs and bench/startup.py
#                            (scripts/test-deps/servers/: npm prefix + one uv venv per Python server)
#   .deps/env.sh             exports CODEMCP_TEST_NODE_MODULES, CODEMCP_TEST_NODE22, CODEMCP_TEST_PY2,
#                            CODEMCP_TEST_PY1, CODEMCP_TEST_FW2, CODEMCP_TEST_FW1,
#                            CODEMCP_TEST_CLIENTS_NODE_MODULES, CODEMCP_TEST_SERVERS
#
# Idempotent: each component keeps a stamp holding a hash of its pin files (and
# the toolchain version); it is reinstalled from scratch only when that changes.
# Usage: scripts/test-deps.sh [--force] [node|py2|py1|fw2|fw1|clients|servers ...]   (default: all)
# Env: PYTHON (default python3), NODE (default node), NPM (default npm).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PINS="$ROOT/scripts/test-deps"
DEPS="$ROOT/.deps"
PYTHON="${PYTHON:-python3}"
NODE="${NODE:-node}"
NPM="${NPM:-npm}"

log() { echo "test-deps: $*" >&2; }
die() { log "error: $*"; exit 1; }

FORCE=0
COMPONENTS=()
for a in "$@"; do
  case "$a" in
    --force) FORCE=1 ;;
    node|py2|py1|fw2|fw1|clients|servers) COMPONENTS+=("$a") ;;
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $a" ;;
  esac
done
[ ${#COMPONENTS[@]} -gt 0 ] || COMPONENTS=(node py2 py1 fw2 fw1 clients servers)

mkdir -p "$DEPS"

# Serialize concurrent runs (e.g. several test binaries calling this at once).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DEPS/.lock"
  flock 9
fi

hash_of() { # hash_of FILE... ; plus extra strings on stdin
  { cat "$@"; cat; } | sha256sum | cut -d' ' -f1
}

up_to_date() { # up_to_date NAME HASH
  [ "$FORCE" = 0 ] && [ -f "$DEPS/.stamp-$1" ] && [ "$(cat "$DEPS/.stamp-$1")" = "$2" ]
}

install_node() {
  command -v "$NODE" >/dev/null || die "node not found (need node >= 20)"
  command -v "$NPM" >/dev/null || die "npm not found"
  local h
  h="$(echo "node $("$NODE" --version)" | hash_of "$PINS/package.json" "$PINS/package-lock.json")"
  if up_to_date node "$h"; then
    log "node: up to date ($DEPS/node/node_modules)"
    return
  fi
  log "node: installing pinned packages with npm ci into $DEPS/node"
  # Build next to the live tree and swap it in at the end, so tests still
  # running against the old tree keep working during the install.
  local next="$DEPS/node.next"
  rm -rf "$next" "$DEPS/node.old" "$DEPS/.stamp-node"
  mkdir -p "$next"
  cp "$PINS/package.json" "$PINS/package-lock.json" "$next/"
  "$NPM" ci --prefix "$next" --no-audit --no-fund --loglevel=error >&2
  local nm="$next/node_modules"
  for f in @modelcontextprotocol/server-everything/dist/index.js \
           @modelcontextprotocol/server-filesystem/dist/index.js \
           @modelcontextprotocol/server-memory/dist/index.js \
           @modelcontextprotocol/inspector/cli/build/cli.js \
           @modelcontextprotocol/conformance/dist/index.js; do
    [ -f "$nm/$f" ] || die "node: expected $nm/$f after npm ci"
  done
  # The npm package `node` (pinned node 22, for the conformance suite) fetches
  # its platform binary in an install script: check that it really runs.
  local v22
  v22="$("$nm/.bin/node" --version)" || die "node: $nm/.bin/node does not run"
  case "$v22" in v22.*) ;; *) die "node: expected node v22.x in $nm/.bin, got $v22" ;; esac
  if [ -d "$DEPS/node" ]; then mv "$DEPS/node" "$DEPS/node.old"; fi
  mv "$next" "$DEPS/node"
  rm -rf "$DEPS/node.old"
  echo "$h" >"$DEPS/.stamp-node"
  log "node: done"
}

# The client matrix's npm clients, in a tree of their own so that changing them
# does not reinstall the peers every other test uses.
install_clients_node() {
  command -v "$NPM" >/dev/null || die "npm not found"
  local pins="$PINS/clients" h
  h="$(echo "clients" | hash_of "$pins/package.json" "$pins/package-lock.json")"
  if up_to_date clients "$h"; then
    log "clients: up to date ($DEPS/clients-node/node_modules)"
    return
  fi
  log "clients: installing pinned packages with npm ci into $DEPS/clients-node"
  local next="$DEPS/clients-node.next"
  rm -rf "$next" "$DEPS/clients-node.old" "$DEPS/.stamp-clients"
  mkdir -p "$next"
  cp "$pins/package.json" "$pins/package-lock.json" "$next/"
  # The Inspector 2.x asks for node >= 22.19 (the node component's node 22 runs it).
  "$NPM" ci --prefix "$next" --no-audit --no-fund --loglevel=error --engine-strict=false >&2
  for f in @modelcontextprotocol/inspector/clients/launcher/build/index.js \
           @modelcontextprotocol/client/package.json; do
    [ -f "$next/node_modules/$f" ] || die "clients: expected $next/node_modules/$f after npm ci"
  done
  if [ -d "$DEPS/clients-node" ]; then mv "$DEPS/clients-node" "$DEPS/clients-node.old"; fi
  mv "$next" "$DEPS/clients-node"
  rm -rf "$DEPS/clients-node.old"
  echo "$h" >"$DEPS/.stamp-clients"
  log "clients: done"
}

make_venv() { # make_venv DIR
  if "$PYTHON" -m venv "$1" >&2; then return; fi
  rm -rf "$1"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "python3 -m venv failed; installing python3-venv with apt-get"
    apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv >&2
    "$PYTHON" -m venv "$1" >&2 || die "python3 -m venv still fails"
  else
    die "$PYTHON -m venv failed (install python3-venv)"
  fi
}

install_py() { # install_py NAME REQUIREMENTS EXPECTED_MCP_MAJOR
  local name="$1" req="$2" major="$3" dir="$DEPS/$1" h
  command -v "$PYTHON" >/dev/null || die "$PYTHON not found (need python >= 3.10)"
  h="$(echo "python $("$PYTHON" -c 'import sys; print(sys.version)')" | hash_of "$req")"
  if up_to_date "$name" "$h" && [ -x "$dir/bin/python" ]; then
    log "$name: up to date ($dir)"
    return
  fi
  log "$name: creating venv $dir from $(basename "$req")"
  rm -rf "$dir" "$DEPS/.stamp-$name"
  make_venv "$dir"
  "$dir/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$req" >&2
  "$dir/bin/python" -c "
import importlib.metadata as m, sys
v = m.version('mcp'); assert v.split('.')[0] == '$major', v
print('test-deps: $name: mcp', v, file=sys.stderr)" || die "$name: mcp import check failed"
  echo "$h" >"$DEPS/.stamp-$name"
  log "$name: done"
}

for c in "${COMPONENTS[@]}"; do
  case "$c" in
    node) install_node ;;
    py2) install_py py2 "$PINS/requirements-mcp2.txt" 2 ;;
    py1) install_py py1 "$PINS/requirements-mcp1.txt" 1 ;;
    fw2) install_py fw2 "$PINS/requirements-fw2.txt" 2 ;;
    fw1) install_py fw1 "$PINS/requirements-fw1.txt" 1 ;;
    clients) install_clients_node ;;
    servers) PYTHON="$PYTHON" NPM="$NPM" "$PINS/servers/install.sh" "$DEPS/servers" "$FORCE" ;;
  esac
done

cat >"$DEPS/env.sh.tmp" <<EOF
# Generated by scripts/test-deps.sh: paths to the pinned test peers.
export CODEMCP_TEST_NODE_MODULES="$DEPS/node/node_modules"
export CODEMCP_TEST_NODE22="$DEPS/node/node_modules/.bin/node"
export CODEMCP_TEST_PY2="$DEPS/py2/bin/python"
export CODEMCP_TEST_PY1="$DEPS/py1/bin/python"
export CODEMCP_TEST_FW2="$DEPS/fw2/bin/python"
export CODEMCP_TEST_FW1="$DEPS/fw1/bin/python"
export CODEMCP_TEST_CLIENTS_NODE_MODULES="$DEPS/clients-node/node_modules"
export CODEMCP_TEST_SERVERS="$DEPS/servers"
EOF
mv "$DEPS/env.sh.tmp" "$DEPS/env.sh"
log "wrote $DEPS/env.sh"
