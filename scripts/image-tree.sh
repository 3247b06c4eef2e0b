#!/usr/bin/env bash
# The operator image's file tree, assembled into <dir>: the compiled package (build/lib,
# build/imports), package.json, and production dependencies only. The Dockerfile runs this script,
# and so does a test (no Docker engine there), so both get the same tree.
#
#   scripts/image-tree.sh <dir>     then: node <dir>/build/lib/bin/operator.js
#
# Needs the dev dependencies installed in the checkout (TypeScript compiles the package).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: scripts/image-tree.sh <output dir>}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[[ $OUT != "$ROOT" ]] || { echo "image-tree: the output must not be the checkout itself" >&2; exit 1; }

cd "$ROOT"
rm -rf "$OUT/build" "$OUT/node_modules"
# Compile into the output folder directly: the checkout's build/ is left alone.
tsc -p tsconfig.build.json --outDir "$OUT/build"
cp package.json package-lock.json "$OUT/"
# Production dependencies only, exactly as locked; no install scripts (none are needed at run time).
(cd "$OUT" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
rm "$OUT/package-lock.json"
echo "image-tree: $OUT ($(du -sh "$OUT" | cut -f1))" >&2
