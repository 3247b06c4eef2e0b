#!/usr/bin/env bash
# `npm test`: type-check, then every jest project. Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "[test] system packages (nginx, Chromium, fonts)"
bash scripts/system-deps.sh
bash scripts/cassandra.sh install >/dev/null # the trace tests' Cassandra, fetched from Maven Central once
echo "[test] format and lint (biome ci; npm run format fixes what it can)"
biome ci --error-on-warnings .
echo "[test] type-check (tsc --noEmit)"
tsc --noEmit
echo "[test] operator bundle (scripts/build-operator.ts: what the image, the cluster tests and the benchmark run)"
node --disable-warning=ExperimentalWarning scripts/build-operator.ts
echo "[test] jest"
NODE_OPTIONS="${NODE_OPTIONS:-} --experimental-vm-modules --disable-warning=ExperimentalWarning" jest "$@"
