#!/usr/bin/env bash
# Build, test and package the VS Code extension. Idempotent; exits non-zero on any
# failure; prints the path of the .vsix on its last line.
#   npm ci -> tsc --noEmit -> unit tests (node --test, stub vscode) -> esbuild -> vsce package
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=$(pwd)

echo "== client-vscode: node $(node --version), npm $(npm --version)"
npm ci --no-audit --no-fund

echo "== type-check"
npx --no-install tsc --noEmit -p .

echo "== unit tests"
rm -rf out
npm test

echo "== bundle"
rm -rf dist
node esbuild.mjs --production

echo "== package"
VERSION=$(node -p "require('./package.json').version")
VSIX="$HERE/pycsamt-lsp-$VERSION.vsix"
rm -f "$VSIX"
# the bundle holds the dependencies; nothing is fetched
npx --no-install vsce package --allow-missing-repository --no-dependencies -o "$VSIX" </dev/null
test -s "$VSIX"
unzip -l "$VSIX" | grep -q 'extension/dist/extension.js'
echo "vsix: $VSIX"
