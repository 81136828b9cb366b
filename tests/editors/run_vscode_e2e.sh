#!/usr/bin/env bash
# The code-server end-to-end test: real VS Code 1.139 (code-server) in headless
# Chromium, the pycsamt-lsp .vsix installed, a pycsamt script with a hallucinated
# import, the real pyCSAMT sdist as the corpus. `pycsamt.server.python` points to a
# fresh venv WITHOUT the server: the extension must offer to install its bundled
# wheel into a private environment (pip fetches the dependencies from the package
# index), and the squiggle / hover / commands flow then runs on that server. Last,
# a second code-server opens a project without pycsamt (python3 lacks the server):
# the extension must stay quiet there (status bar item, no popup).
# Prints where the screenshots are; exits non-zero when a check fails.
#
#   PYCSAMT_LSP_CACHE  cache (code-server, node 24, the sdist): ~/.cache/pycsamt-lsp
#   PYTHON             interpreter with pycsamt_lsp installed (<repo>/.venv/bin/python),
#                      used here only to fetch the corpus
#   BASE_PYTHON        Python 3.11+ that makes the server-less venv (default python3)
#   CORPUS_ROOT        pyCSAMT sources (default: `python -m pycsamt_lsp corpus fetch`)
#   VSIX               the extension (default: client-vscode/pycsamt-lsp-<version>.vsix,
#                      built with client-vscode/scripts/ci.sh when missing)
#   E2E_OUT            screenshots and logs (default <repo>/artifacts/vscode-e2e)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${PYCSAMT_LSP_CACHE:-$HOME/.cache/pycsamt-lsp}
export PYCSAMT_LSP_CACHE=$CACHE

echo "== code-server (cached in $CACHE)"
bash "$HERE/install_code_server.sh"
CS=$CACHE/code-server/node_modules/.bin/code-server
NODE24_BIN=$CACHE/node24/bin

PY=${PYTHON:-$REPO/.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3)
if ! "$PY" -c 'import pycsamt_lsp' 2>/dev/null; then
  echo "FAIL: $PY cannot import pycsamt_lsp (pip install -e $REPO first)" >&2
  exit 1
fi
CORPUS=${CORPUS_ROOT:-$("$PY" -m pycsamt_lsp corpus fetch --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["root"])')}
echo "== server: $PY; corpus: $CORPUS"

VERSION=$(node -p "require('$REPO/client-vscode/package.json').version")
VSIX=${VSIX:-$REPO/client-vscode/pycsamt-lsp-$VERSION.vsix}
if [ ! -s "$VSIX" ]; then
  echo "== building $VSIX"
  bash "$REPO/client-vscode/scripts/ci.sh"
fi

echo "== driver dependencies (puppeteer-core)"
(cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)

OUT=${E2E_OUT:-$REPO/artifacts/vscode-e2e}
rm -rf "$OUT" && mkdir -p "$OUT"
STATE=$(mktemp -d "${TMPDIR:-/tmp}/pycsamt-vscode-e2e.XXXXXX")
trap 'rm -rf "$STATE"' EXIT
export XDG_CONFIG_HOME=$STATE/xdg/config XDG_DATA_HOME=$STATE/xdg/data XDG_CACHE_HOME=$STATE/xdg/cache XDG_STATE_HOME=$STATE/xdg/state
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME" "$STATE/user-data/User" "$STATE/extensions"

# the workspace: a pycsamt script with a hallucinated import
WS=$STATE/geo-survey
mkdir -p "$WS/.vscode"
cat > "$WS/survey.py" <<'PY'
from pycsamt import static_shift
from pycsamt.emtools.ss import estimate_ss_ama

factors = estimate_ss_ama(sites, half_window=3)
PY
# the Python VS Code is told to use: a fresh venv without the server
BARE=$STATE/bare-venv
"${BASE_PYTHON:-python3}" -m venv --without-pip "$BARE"
BARE_PY=$BARE/bin/python
if "$BARE_PY" -c 'import pycsamt_lsp' 2>/dev/null; then
  echo "FAIL: $BARE_PY already has pycsamt_lsp" >&2
  exit 1
fi
echo "== pycsamt.server.python: $BARE_PY (no pycsamt_lsp: the extension must install it)"
# a project without pycsamt, for the last check (the extension stays quiet there);
# its python3 is the server-less venv
UNRELATED=$STATE/unrelated-project
mkdir -p "$UNRELATED" "$STATE/unrelated-bin"
printf 'import json\n\nprint(json.dumps({"hello": "world"}))\n' > "$UNRELATED/hello.py"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$BARE_PY" > "$STATE/unrelated-bin/python3"
chmod +x "$STATE/unrelated-bin/python3"
# a fresh index in the run's temp state, so the run does not depend on earlier runs
"$PY" - "$WS/.vscode/settings.json" "$CORPUS" "$BARE_PY" "$STATE/index" <<'PYEOF'
import json, sys
path, corpus, python, index = sys.argv[1:5]
json.dump({"pycsamt.corpusRoot": corpus, "pycsamt.server.python": python, "pycsamt.indexDir": index}, open(path, "w"), indent=2)
PYEOF
cat > "$STATE/user-data/User/settings.json" <<'JSON'
{
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.ignoreRecommendations": true,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "window.restoreWindows": "none",
  "editor.hover.delay": 300,
  "editor.minimap.enabled": false,
  "workbench.colorTheme": "Default Light Modern",
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "workbench.secondarySideBar.showLabels": false,
  "chat.disableAIFeatures": true
}
JSON

echo "== installing $VSIX"
PATH="$NODE24_BIN:$PATH" "$CS" --install-extension "$VSIX" --extensions-dir "$STATE/extensions" --user-data-dir "$STATE/user-data" --force

echo "== driving VS Code"
set +e
CODE_SERVER=$CS NODE24_BIN=$NODE24_BIN WORKSPACE=$WS SHOTS=$OUT STATE_DIR=$STATE BARE_PYTHON=$BARE_PY \
  UNRELATED_WS=$UNRELATED UNRELATED_PATH=$STATE/unrelated-bin \
  TIMEOUT_S=${TIMEOUT_S:-120} INSTALL_TIMEOUT_S=${INSTALL_TIMEOUT_S:-480} timeout 900 node "$HERE/vscode_e2e.js"
rc=$?
set -e
# the extension's output channel, as the user would see it
find "$STATE/user-data/logs" -name '*pyCSAMT*' -exec cp {} "$OUT/" \; 2>/dev/null || true
echo "screenshots and logs: $OUT"
exit $rc
