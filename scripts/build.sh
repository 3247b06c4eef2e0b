#!/usr/bin/env bash
# `npm run build`: compiles the package to build/ (or the directory given) and copies beside the
# compiled modules the files they read at run time: the shell operator's script.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build}
tsc -p tsconfig.build.json --outDir "$out"
cp lib/shell-operator/website-shell-operator.sh "$out/lib/shell-operator/"
