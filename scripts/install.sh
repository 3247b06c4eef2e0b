#!/usr/bin/env bash
# Installs node_modules exactly as package-lock.json says, when missing or out of date; otherwise
# a no-op in milliseconds. Every npm entry point (synth, codegen, test) runs it first, so a fresh
# clone needs no separate install step. The `node` devDependency brings Node 22, which npm scripts
# then run on (node_modules/.bin comes first on their PATH).
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=node_modules/.website-stack-installed
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [[ -f $stamp && "$(cat "$stamp")" == "$want" && -x node_modules/.bin/node ]]; then
  exit 0
fi
echo "[install] installing dependencies from package-lock.json (npm ci)" >&2
npm ci --no-audit --no-fund --loglevel=error
echo "$want" >"$stamp"
