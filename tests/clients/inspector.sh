#!/usr/bin/env bash
# Run the pinned MCP Inspector CLI (installed by scripts/test-deps.sh) against a server.
#   tests/clients/inspector.sh CMD [ARGS...] -- --method tools/list
#   tests/clients/inspector.sh CMD [ARGS...] -- --method tools/call --tool-name execute_python --tool-arg 'code=print(1)'
#   tests/clients/inspector.sh http://127.0.0.1:PORT/mcp -- --method tools/list
# The server command (or URL) comes first and the Inspector's options after `--`
# (they must follow the command: --tool-arg is variadic and would swallow it).
# Prints the result as JSON on stdout; exit status 1 on failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NM="${CODEMCP_TEST_NODE_MODULES:-$ROOT/.deps/node/node_modules}"
CLI="$NM/@modelcontextprotocol/inspector/cli/build/cli.js"
[ -f "$CLI" ] || { echo "inspector.sh: $CLI missing: run scripts/test-deps.sh" >&2; exit 2; }
target=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do target+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#target[@]} -gt 0 ] || { echo "usage: inspector.sh CMD [ARGS...] -- --method tools/list" >&2; exit 2; }
exec node "$CLI" --cli "${target[@]}" "$@"
