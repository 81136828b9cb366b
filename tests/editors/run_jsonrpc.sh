#!/usr/bin/env bash
# The Node JSON-RPC client test against the Python server (see jsonrpc_client.mjs).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
(cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
exec node "$HERE/jsonrpc_client.mjs"
