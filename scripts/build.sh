#!/usr/bin/env bash
# `npm run build`: compiles the library (the constructs reachable from lib/index.ts) twice, so that
# ES module and CommonJS apps both load it natively: build/esm (import) and build/cjs (require),
# each with its declarations. package.json's `exports` picks one per module system.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build/esm build/cjs
tsc -p tsconfig.build.json
tsc -p tsconfig.cjs.json
# build/cjs/**/*.js are CommonJS although the package is "type": "module".
echo '{ "type": "commonjs" }' >build/cjs/package.json
