#!/usr/bin/env bash
# Create .venv with the server and its test tools, and fetch the real corpus
# (pycsamt==2.6.4 sdist from PyPI into ${PYCSAMT_LSP_CACHE:-~/.cache/pycsamt-lsp}).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,bench]"
# an editable install compiles no bytecode (a wheel install does); where
# PYTHONDONTWRITEBYTECODE is set, as on these machines, every process (each
# build worker, each CLI call, the server) would compile the modules again
.venv/bin/python -m compileall -q server/pycsamt_lsp >/dev/null
.venv/bin/pycsamt-lsp corpus fetch
