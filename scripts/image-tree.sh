#!/usr/bin/env bash
# The operator image's file tree, assembled into <dir>: the operator bundle (operator/bundle.ts:
# operator.mjs and its chunks/, with the library constructs it renders with and every dependency it
# uses inside), and nothing else: no node_modules, no package.json, no sources. The Dockerfile runs
# this script in its build stage.
#
#   scripts/image-tree.sh <dir>     then: node <dir>/operator.mjs
#
# Needs the dev dependencies installed in the checkout (esbuild bundles the operator).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: scripts/image-tree.sh <output dir>}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[[ $OUT != "$ROOT" ]] || { echo "image-tree: the output must not be the checkout itself" >&2; exit 1; }

# Built apart and copied, so the build's metafile (meta.json: for tests, not for running) stays out.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node --disable-warning=ExperimentalWarning "$ROOT/operator/bundle.ts" "$work"
rm -rf "$OUT/operator.mjs" "$OUT/chunks"
cp -R "$work/operator.mjs" "$work/chunks" "$OUT/"
echo "image-tree: $OUT ($(du -sh "$OUT" | cut -f1))" >&2
