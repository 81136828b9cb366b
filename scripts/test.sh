#!/usr/bin/env bash
# Every test suite: lint, Python unit + pytest-lsp end-to-end tests (fixture
# trees and the real corpus), the VS Code extension (type-check, unit tests,
# bundle, .vsix), and the editor tests. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p artifacts

echo "== ruff"
ruff check server tests benchmarks
ruff format --check server tests benchmarks

echo "== mypy"
mypy

echo "== pytest"
python -m pytest -q -p no:cacheprovider

echo "== VS Code extension"
bash client-vscode/scripts/ci.sh

echo "== editors: JSON-RPC client (vscode-languageserver-protocol)"
bash tests/editors/run_jsonrpc.sh
echo "== editors: Neovim"
bash tests/editors/nvim_test.sh
echo "== editors: README snippets (docs/editors) in Neovim 0.11 and Emacs 30 eglot"
bash tests/editors/editors_test.sh
echo "== editors: VS Code (code-server, headless Chromium); screenshots in artifacts/vscode-e2e"
E2E_OUT="$PWD/artifacts/vscode-e2e" bash tests/editors/run_vscode_e2e.sh
