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

echo "== pytest"
python -m pytest -q -p no:cacheprovider

echo "== VS Code extension"
bash client-vscode/scripts/ci.sh
