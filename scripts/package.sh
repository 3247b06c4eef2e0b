#!/usr/bin/env bash
# `npm run package`: the package in every language jsii targets, in build/packages/: the npm tarball
# (js/), the Python wheel (python/), a Maven repository folder with the jar (java/) and the Go module
# (go/). `npm run build` compiles the library and writes the jsii assembly; scripts/jsii-packages.sh
# makes the wheel, the jar and the Go module from it with jsii-pacmak, and the cdk8s Java and Go
# libraries they need where the registries lack them (cached by version). Its stdout lines say where
# each package is and what a Java or Go app needs to find them (PYTHON_WHEEL=, JAVA_SETTINGS=,
# GO_REPLACE=, ...), after NPM_TARBALL=.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/packages
bash scripts/build.sh >&2
rm -rf "$out/js"
mkdir -p "$out/js"
# The tarball of what `npm publish` uploads; its prepack (this build) has just run.
tarball=$(npm pack --ignore-scripts --silent --pack-destination "$out/js" | tail -n 1)
echo "NPM_TARBALL=$PWD/$out/js/$tarball"
bash scripts/jsii-packages.sh . "$out" "$@"
