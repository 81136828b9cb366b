#!/usr/bin/env bash
# Real editors, headless, each configured ONLY by a README snippet from
# docs/editors/ loaded unmodified (tests/test_readme_editors.py checks that
# README.md embeds exactly these files):
#   nvim.lua       Neovim 0.11 (vim.lsp.config / vim.lsp.enable), utf-8
#   nvim-0.10.lua  the FileType + vim.lsp.start form, same Neovim
#   eglot.el       Emacs 30 eglot in python-mode and python-ts-mode, utf-32
# Each must attach the buffer itself, show the diagnostic on exactly
# `static_shift` in a line with non-BMP characters, apply the quick fix
# there without touching the rest of the line, and show a hover card.
# Helix is in none of Debian bookworm(-backports), PyPI or npm: not run.
# The snippets say corpusRoot = "~/src/pycsamt": HOME is a temp folder whose
# src/pycsamt is a copy of the fetched sdist with its index built once here,
# so the editors load it instead of building four times.
#   PYTHON       interpreter that has pycsamt_lsp (default <repo>/.venv/bin/python)
#   CORPUS_ROOT  pyCSAMT sources (default: `python -m pycsamt_lsp corpus fetch`)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
LSP_BIN=$(dirname "$PY")/pycsamt-lsp
[ -x "$LSP_BIN" ] || { echo "no pycsamt-lsp next to $PY" >&2; exit 1; }
eval "$(bash "$HERE/install_editors.sh")"
CORPUS=${CORPUS_ROOT:-$("$PY" -m pycsamt_lsp corpus fetch --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["root"])')}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pycsamt-editors.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export HOME=$TMP/home
unset XDG_CONFIG_HOME XDG_DATA_HOME XDG_STATE_HOME XDG_CACHE_HOME
export XDG_RUNTIME_DIR=$TMP/run
mkdir -p "$HOME/src" "$HOME/project" "$TMP/bin" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
cp -r "$CORPUS" "$HOME/src/pycsamt"
rm -rf "$HOME/src/pycsamt/.pycsamt_rag"
# the user's PATH: pycsamt-lsp installed, and no other Python language server
ln -s "$LSP_BIN" "$TMP/bin/pycsamt-lsp"
export PATH="$TMP/bin:/usr/local/bin:/usr/bin:/bin"
echo "# index of $CORPUS built once into ~/src/pycsamt/.pycsamt_rag"
pycsamt-lsp build --root "$HOME/src/pycsamt" | tail -1

touch "$HOME/project/pyproject.toml"
survey() {
  cat > "$HOME/project/survey.py" <<'PY'
s = "é𝄞"; from pycsamt import static_shift
from pycsamt.emtools.ss import estimate_ss_ama

factors = estimate_ss_ama(sites, half_window=3)
PY
}

rc=0
run() {  # label, command...
  local label=$1; shift
  survey
  echo "== $label"
  set +e
  (cd "$HOME/project" && PYCSAMT_LABEL=$label timeout 150 "$@")
  local r=$?
  set -e
  if [ $r -ne 0 ]; then
    echo "# $label failed (exit $r)"
    tail -n 30 "$HOME"/.local/state/nvim/lsp.log 2>/dev/null | sed 's/^/#   /' || true
    rc=1
  fi
}

echo "# $("$NVIM" --version | head -1); $("$EMACS" --version | head -1)"
for snippet in nvim.lua nvim-0.10.lua; do
  run "neovim $snippet" "$NVIM" --headless -i NONE -n -u "$REPO/docs/editors/$snippet" \
    -c "luafile $HERE/nvim_check.lua" survey.py
done
for mode in python-mode python-ts-mode; do
  PYCSAMT_FILE=$HOME/project/survey.py PYCSAMT_MODE=$mode TS_GRAMMAR_DIR=$TS_GRAMMAR_DIR \
    run "emacs eglot.el $mode" "$EMACS" --batch -Q -l "$REPO/docs/editors/eglot.el" -l "$HERE/eglot_check.el"
done
echo "# helix: not run (not in Debian bookworm or its backports, PyPI or npm)"
exit $rc
