#!/usr/bin/env bash
# Headless Neovim as a second real editor: its built-in LSP client starts
# pycsamt-lsp, opens a Python file with a hallucinated import, and checks the
# diagnostic, a hover card and a command. Exits non-zero when a check fails.
#   PYTHON       interpreter that has pycsamt_lsp (default <repo>/.venv/bin/python)
#   CORPUS_ROOT  pyCSAMT sources (default: `python -m pycsamt_lsp corpus fetch`)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PYTHONPATH="$REPO/server${PYTHONPATH:+:$PYTHONPATH}"

if ! command -v nvim >/dev/null; then
  echo "installing neovim (Debian)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q neovim >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q neovim >/dev/null; }
fi
echo "# $(nvim --version | head -1)"

CORPUS=${CORPUS_ROOT:-$("$PY" -m pycsamt_lsp corpus fetch --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["root"])')}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pycsamt-nvim.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# nothing of Neovim's lands in $HOME
export XDG_CONFIG_HOME=$TMP/config XDG_DATA_HOME=$TMP/data XDG_STATE_HOME=$TMP/state XDG_CACHE_HOME=$TMP/cache XDG_RUNTIME_DIR=$TMP/run
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME" "$XDG_RUNTIME_DIR" "$TMP/ws"
chmod 700 "$XDG_RUNTIME_DIR"
cat > "$TMP/ws/survey.py" <<'PY'
from pycsamt import static_shift
from pycsamt.emtools.ss import estimate_ss_ama

factors = estimate_ss_ama(sites, half_window=3)
PY

echo "# server: $PY -m pycsamt_lsp serve; corpus: $CORPUS; index: $TMP/index"
set +e
PYCSAMT_PYTHON=$PY PYCSAMT_FILE=$TMP/ws/survey.py PYCSAMT_CORPUS=$CORPUS PYCSAMT_INDEX_DIR=$TMP/index PYCSAMT_TIMEOUT_MS=${PYCSAMT_TIMEOUT_MS:-240000} \
  timeout 300 nvim --headless --noplugin -i NONE -n -u "$HERE/nvim_test.lua"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "# neovim test failed (exit $rc); LSP log:"
  tail -n 40 "$XDG_STATE_HOME/nvim/lsp.log" "$XDG_CACHE_HOME/nvim/lsp.log" 2>/dev/null | sed 's/^/#   /' || true
fi
exit $rc
