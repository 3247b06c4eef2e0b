#!/usr/bin/env bash
# `npm test`: lint, type-check, then every jest project.
#
# With no arguments, the jest projects run in three lanes side by side: the cluster project (its
# suites share one cluster, one at a time, and mostly wait on controllers); the isolated project
# (the chaos run and the operator image, one at a time on a cluster of their own: they would disturb
# the others), then the argocd project (a real Argo CD on a cluster of its own, mostly waiting on
# it); and the unit and package projects, then the trace project, then the node project (dist/ on a
# cluster with a real node). The
# lines of the first two lanes are prefixed with their project's name. The last line counts the
# tests of every lane.
# With arguments, one jest run gets them as they are (`npm test -- --selectProjects unit`,
# `npm test -- test/unit/workload.test.ts`).
set -euo pipefail
cd "$(dirname "$0")/.."

# For the whole suite, the Go binaries (minutes each when not cached) build in the background from
# the start, while packages install and the code is linted and type-checked; whatever needs one
# waits for it (scripts/binaries.sh). A process group of its own, so that a run that stops early
# stops the Go compilers too.
prebuild=
stop_prebuild() { [[ -z $prebuild ]] || kill -- "-$prebuild" 2>/dev/null || true; }
trap stop_prebuild EXIT
# In the order the lanes below need them, one at a time (binaries.sh): the longest chain of lanes
# is unit, then trace, then node, so actionlint (quick; the unit tests) and the trace stack's
# binaries come first (the trace lane starts when the unit lane is done, and the cluster lane's
# operator.test.ts traces into Jaeger too); then the cluster set (every lane with a cluster), the
# real node's (the last lane), and Argo CD (after the isolated lane). One stream, not two: the
# cores are busy with the lanes as it is, and two streams side by side were no faster cold (52.7 against
# 51.5 minutes one at a time in the earlier order; docs/contribute/tests.md).
if [[ $# -eq 0 ]]; then
  mkdir -p test-results
  echo "[test] Go binaries (scripts/binaries.sh actionlint tracing oauth2-proxy es-index-cleaner cluster node argocd), and the trace tests' Elasticsearch and Keycloak, in the background: test-results/binaries.log"
  # Elasticsearch and Keycloak come from Maven Central (Keycloak then builds itself once): a
  # minute or two each, cold, beside the Go builds.
  setsid bash -c 'bash scripts/binaries.sh actionlint tracing oauth2-proxy es-index-cleaner cluster node argocd &
    bash scripts/elasticsearch.sh install && bash scripts/keycloak.sh install
    wait' >test-results/binaries.log 2>&1 &
  prebuild=$!
  # Whatever a lane needs from that list, it waits for that build to make (scripts/binaries.sh).
  export WEBSITE_STACK_PREBUILD_PID=$prebuild
fi

bash scripts/cassandra.sh install >/dev/null # the trace tests' Cassandra, fetched from Maven Central once
echo "[test] format and lint (biome ci; npm run format fixes what it can), and every relative link and anchor of README.md and docs/ (remark-validate-links)"
biome ci --error-on-warnings .
remark --frail --quiet --no-stdout README.md docs
echo "[test] type-check (tsc --noEmit)"
tsc --noEmit
echo "[test] operator bundle (operator/bundle.ts: what the image, the cluster tests and the benchmark run)"
node --disable-warning=ExperimentalWarning operator/bundle.ts
export NODE_OPTIONS="${NODE_OPTIONS:-} --experimental-vm-modules --disable-warning=ExperimentalWarning"

if [[ $# -gt 0 ]]; then
  echo "[test] system packages of every lane (scripts/system-deps.txt)"
  bash scripts/system-deps.sh all
  echo "[test] jest $*"
  exec jest "$@"
fi

# Each lane installs the system programs its projects run (scripts/system-deps.txt) before its first
# test, then writes its results as JSON and its exit code beside them (the human-readable report
# still goes to the terminal), for scripts/test-summary.ts. Kept after the run, with each suite's
# time: test-results/lanes/.
results=test-results/lanes
rm -rf "$results"
mkdir -p "$results"
lane() {
  local name=$1 projects=() rc=0
  shift
  while [[ $# -gt 0 && $1 != -* ]]; do projects+=("$1"); shift; done
  bash scripts/system-deps.sh "${projects[@]}" || rc=$?
  [[ $rc -ne 0 ]] || jest --json --outputFile="$results/$name.json" --selectProjects "${projects[@]}" "$@" || rc=$?
  echo "$rc" >"$results/$name.status"
  return "$rc"
}

echo "[test] jest: the cluster project; beside it the isolated project, then the argocd project; and the unit and package projects, then the trace project, then the node project"
# Each project's global setup waits for its binaries, if the prebuild has not finished them yet.
(lane cluster cluster 2>&1 | sed -u 's/^/[cluster] /') &
cluster=$!
(
  rc=0
  lane isolated isolated 2>&1 | sed -u 's/^/[isolated] /' || rc=1
  lane argocd argocd 2>&1 | sed -u 's/^/[argocd] /' || rc=1
  exit $rc
) &
isolated=$!
status=0
lane unit unit package || status=1
lane trace trace || status=1
lane node node --runInBand 2>&1 | sed -u 's/^/[node] /' || status=1
wait "$cluster" || status=1
wait "$isolated" || status=1

# Every lane counted, and named when it failed or wrote no results (scripts/test-summary.ts).
node scripts/test-summary.ts "$results" cluster isolated argocd unit trace node || status=1
exit "$status"
