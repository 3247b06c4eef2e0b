#!/usr/bin/env bash
# `npm test`: lint, type-check, then every jest project.
#
# With no arguments, the jest projects run in two lanes side by side: the cluster project (its
# suites share one cluster, one at a time, and mostly wait on controllers), and beside it the unit
# and package projects, then the trace project (they mostly use the CPU). The cluster lane's lines
# are prefixed "[cluster] ". The last line counts the tests of both lanes.
# With arguments, one jest run gets them as they are (`npm test -- --selectProjects unit`,
# `npm test -- test/unit/workload.test.ts`).
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
export NODE_OPTIONS="${NODE_OPTIONS:-} --experimental-vm-modules --disable-warning=ExperimentalWarning"

if [[ $# -gt 0 ]]; then
  echo "[test] jest $*"
  exec jest "$@"
fi

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
# Each lane writes its results as JSON (the human-readable report still goes to the terminal).
lane() {
  local name=$1
  shift
  jest --json --outputFile="$results/$name.json" --selectProjects "$@"
}

echo "[test] jest: the cluster project, beside it the unit and package projects, then the trace project"
# The cluster's binaries are built by its global setup while the unit tests run; the trace
# project's binaries by its own, after them (scripts/binaries.sh builds one at a time).
lane cluster cluster > >(sed -u 's/^/[cluster] /') 2>&1 &
cluster=$!
status=0
lane unit unit package || status=1
lane trace trace || status=1
wait "$cluster" || status=1

# One line for both lanes, in the plain form any CI reads ("N passed, N failed").
node -e '
  const fs = require("fs"), dir = process.argv[1];
  const runs = fs.readdirSync(dir).map((f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")));
  const sum = (key) => runs.reduce((n, r) => n + r[key], 0);
  console.log(`jest: ${sum("numPassedTests")} passed, ${sum("numFailedTests")} failed`);
' "$results"
exit "$status"
