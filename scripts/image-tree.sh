#!/usr/bin/env bash
# The operator image's file tree, assembled into <dir>: the operator compiled with the library
# constructs it renders with (operator/tsconfig.json), the two package.json files, and the operator
# workspace's production dependencies only, exactly as package-lock.json locks them. The Dockerfile
# runs this script in its build stage.
#
#   scripts/image-tree.sh <dir>     then: node <dir>/operator/src/bin/operator.js
#
# Needs the dev dependencies installed in the checkout (TypeScript compiles the operator).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: scripts/image-tree.sh <output dir>}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[[ $OUT != "$ROOT" ]] || { echo "image-tree: the output must not be the checkout itself" >&2; exit 1; }

cd "$ROOT"
rm -rf "$OUT/lib" "$OUT/imports" "$OUT/operator" "$OUT/node_modules"
tsc -p operator/tsconfig.json --outDir "$OUT"
cp package.json package-lock.json "$OUT/"
cp operator/package.json "$OUT/operator/"
# The operator workspace's dependencies, without the library's development tools; no install
# scripts (none is needed at run time).
(cd "$OUT" && npm ci --workspace operator --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
rm "$OUT/package-lock.json"
echo "image-tree: $OUT ($(du -sh "$OUT" | cut -f1))" >&2
