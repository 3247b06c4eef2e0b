#!/usr/bin/env bash
# `npm run build`: compiles the library (the constructs lib/index.ts exports) twice, so that ES
# module and CommonJS apps both load it natively: build/esm (import) and build/cjs (require), each
# with its declarations; package.json's `exports` picks one per module system. The CommonJS build is
# jsii's (tsconfig.jsii.json), which checks that every public type can be expressed in Python, Java
# and Go and writes the assembly (.jsii) that jsii-pacmak makes their packages from
# (scripts/jsii-packages.sh, `npm run package`).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build/esm build/cjs .jsii
tsc -p tsconfig.build.json
# Silenced: names reserved in some language (`namespace` in C#, which is not a target; pacmak
# renames Python's `from` to `from_`), and jsii's advice to compile against the oldest peer
# versions (the package lane's consumer apps run on the oldest and the newest the ranges allow).
jsii --fail-on-warnings --silence-warnings=reserved-word --silence-warnings=metadata/missing-dev-dependency
# build/cjs/**/*.js are CommonJS although the package is "type": "module".
echo '{ "type": "commonjs" }' >build/cjs/package.json
