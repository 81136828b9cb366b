#!/usr/bin/env bash
# Build, test and package the VS Code extension. Idempotent; exits non-zero on any
# failure; prints the path of the .vsix on its last line.
#   npm ci -> settings contract check -> tsc --noEmit -> unit tests (node --test,
#   stub vscode) -> esbuild -> server wheel (python -m build) -> vsce package
#
#   PYTHON  builds the server wheel; needs the `build` package
#           (default: <repo>/.venv/bin/python, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=$(pwd)
REPO=$(cd .. && pwd)

echo "== client-vscode: node $(node --version), npm $(npm --version)"
npm ci --no-audit --no-fund

echo "== settings: package.json against server/pycsamt_lsp/settings_schema.json"
node scripts/settings.mjs --check

echo "== type-check"
npx --no-install tsc --noEmit -p .

echo "== unit tests"
rm -rf out
npm test

echo "== bundle"
rm -rf dist
node esbuild.mjs --production

echo "== server wheel (python -m build --wheel)"
PY=${PYTHON:-$REPO/.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3)
if ! "$PY" -c 'import build' 2>/dev/null; then
  echo "FAIL: $PY lacks the 'build' package (pip install -e '$REPO[test]')" >&2
  exit 1
fi
WHEELS=$HERE/server-wheel
rm -rf "$WHEELS"
# build outside the shared tree: setuptools writes build/ and *.egg-info next to
# the sources, so build from a copy of what the wheel needs
SRC=$(mktemp -d "${TMPDIR:-/tmp}/pycsamt-wheel-src.XXXXXX")
trap 'rm -rf "$SRC"' EXIT
cp "$REPO/pyproject.toml" "$REPO/README.md" "$SRC/"
[ -f "$REPO/LICENSE" ] && cp "$REPO/LICENSE" "$SRC/"
mkdir -p "$SRC/server"
(cd "$REPO/server" && tar -h --exclude='__pycache__' --exclude='*.egg-info' --exclude='.pycsamt_rag' -cf - pycsamt_lsp) | tar -C "$SRC/server" -xf -
# no build isolation when setuptools and wheel are already there: offline and fast
ISOLATION=()
"$PY" -c 'import setuptools, wheel' 2>/dev/null && ISOLATION=(--no-isolation)
"$PY" -m build --wheel "${ISOLATION[@]}" --outdir "$WHEELS" "$SRC" >"$SRC/build.log" 2>&1 || {
  cat "$SRC/build.log" >&2
  exit 1
}
WHEEL=$(ls "$WHEELS"/pycsamt_lsp-*.whl)
echo "wheel: $WHEEL ($(du -k "$WHEEL" | cut -f1) kB)"
# the settings contract and the recipes travel with the server (recipes are a symlink in the tree)
WHEEL_LIST=$("$PY" -m zipfile -l "$WHEEL")
for f in pycsamt_lsp/settings_schema.json pycsamt_lsp/profiles/pycsamt.toml pycsamt_lsp/assistant_recipes/static_shift.md; do
  grep -q "$f" <<<"$WHEEL_LIST" || { echo "FAIL: the wheel lacks $f" >&2; exit 1; }
done

# the wheel's runtime dependencies, named in the extension's install messages
"$PY" - "$WHEEL" "$WHEELS/dependencies.json" <<'PYEOF'
import json, re, sys, zipfile
wheel, out = sys.argv[1:3]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode("utf-8").splitlines()
deps = [l.split(":", 1)[1].strip() for l in lines if l.startswith("Requires-Dist:")]
names = [re.split(r"[\s<>=!~;\[(]", d, maxsplit=1)[0] for d in deps if "extra ==" not in d]
json.dump({"requires": names}, open(out, "w"))
print("dependencies:", ", ".join(names))
PYEOF

echo "== package"
VERSION=$(node -p "require('./package.json').version")
VSIX="$HERE/pycsamt-lsp-$VERSION.vsix"
rm -f "$VSIX"
# the bundle holds the dependencies; nothing is fetched
npx --no-install vsce package --no-dependencies -o "$VSIX" </dev/null
test -s "$VSIX"
# the listing goes to a variable first: `unzip -l | grep -q` under pipefail fails with
# 141 (SIGPIPE) whenever grep exits before unzip has written everything
LISTING=$(unzip -Z1 "$VSIX")
for f in extension/dist/extension.js extension/images/icon.png "extension/server-wheel/$(basename "$WHEEL")" \
  extension/server-wheel/dependencies.json \
  extension/walkthrough/server.md; do
  grep -qx "$f" <<<"$LISTING" || { echo "FAIL: $VSIX lacks $f" >&2; exit 1; }
done
echo "vsix: $VSIX"
