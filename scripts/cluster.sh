#!/usr/bin/env bash
# A real local Kubernetes cluster: kube-apiserver, etcd, kube-controller-manager, kube-scheduler and
# kwok (fake nodes whose pods become Ready), all built from their Go modules by scripts/binaries.sh.
#
#   scripts/cluster.sh up     start it (or reuse a healthy one; replace a stale one)
#   scripts/cluster.sh up --real-node
#                             the same with one real node (scripts/real-node.sh: kubelet, containerd,
#                             kube-proxy, kube-router, CoreDNS; needs root) instead of kwok's fake ones,
#                             so every pod runs; the API server then listens on 6443, its certificate
#                             names the `kubernetes` Service's address, and kwok leaves the real node alone
#   scripts/cluster.sh up --tracing
#                             the same with the control plane traced: the API server (and etcd, as
#                             the API server's children) export OTLP over gRPC to a Collector, by
#                             default the one of `npm run tracing:up` (.tracing/endpoints.env), else
#                             127.0.0.1:4317; with --real-node, the kubelet too. Combine with --real-node.
#   scripts/cluster.sh down   stop it (and its real node) and remove its state
#   scripts/cluster.sh status exit 0 when it is up and healthy
#   scripts/cluster.sh restart-apiserver
#                             stop kube-apiserver and start it again with the same command line
#                             (every client's watches break; the tests prove the operator recovers)
#   scripts/cluster.sh restart-etcd
#                             the same for etcd (its data directory stays)
#
# WEBSITE_STACK_CLUSTER_DIR (default <repo>/.cluster) holds the kubeconfig, bin/kubectl and kwok's
# state; WEBSITE_STACK_CLUSTER_NAME (default website-stack) names the cluster. Tests use their own.
# WEBSITE_STACK_CLUSTER_AUDIT_POLICY (default none) is an audit policy file: the API server then logs
# the requests it selects to $DIR/kwok/clusters/$NAME/logs/audit.log. A running cluster started
# with another policy (or none) is replaced.
# With --tracing: WEBSITE_STACK_CLUSTER_TRACING_ENDPOINT (host:port of an OTLP gRPC receiver) and
# WEBSITE_STACK_CLUSTER_TRACING_SAMPLING (the API server's new traces per million requests, default
# 1000000: every request; it always follows the sampled traceparent of a trusted caller). A running
# cluster traced otherwise (or not at all) is replaced.
set -euo pipefail
# Command substitutions stop on errors too (bash does not inherit set -e into them otherwise).
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${WEBSITE_STACK_CLUSTER_DIR:-$ROOT/.cluster}
NAME=${WEBSITE_STACK_CLUSTER_NAME:-website-stack}
NODES=${WEBSITE_STACK_CLUSTER_NODES:-2}
AUDIT_POLICY=${WEBSITE_STACK_CLUSTER_AUDIT_POLICY:-}
KUBECONFIG_FILE=$DIR/kubeconfig
TRACING_CONFIG=$DIR/tracing-config.yaml
export KWOK_WORKDIR=$DIR/kwok
# scripts/real-node.sh reads these.
export DIR NAME KUBECONFIG_FILE
REAL_NODE=false
TRACING=false

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

binaries() {
  local line
  while IFS= read -r line; do
    local name=${line%%=*} path=${line#*=}
    case "$name" in
      kube-apiserver) APISERVER=$path ;;
      kube-controller-manager) CONTROLLER_MANAGER=$path ;;
      kube-scheduler) SCHEDULER=$path ;;
      kubectl) KUBECTL=$path ;;
      etcd) ETCD=$path ;;
      kwok) KWOK=$path ;;
      kwokctl) KWOKCTL=$path ;;
    esac
  done < <("$ROOT/scripts/binaries.sh")
  # kwokctl asks for versions to pick component flags; ours are the pinned ones.
  eval "$(grep -E '^(KUBERNETES|ETCD)_VERSION=' "$ROOT/scripts/binaries.sh")"
  export KWOK_KUBE_VERSION=$KUBERNETES_VERSION KWOK_ETCD_VERSION=${ETCD_VERSION#v} KWOK_KUBECTL_BINARY=$KUBECTL
}

kubectl_() { "$DIR/bin/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# Every process kwokctl started is alive (the controller manager and scheduler would otherwise be
# missed: the API server answers without them).
processes_alive() {
  local pidfile
  for pidfile in "$KWOK_WORKDIR/clusters/$NAME"/pids/*.pid; do
    [[ -f $pidfile ]] && kill -0 "$(<"$pidfile")" 2>/dev/null || return 1
  done
}

api_ready() {
  [[ -x $DIR/bin/kubectl && -f $KUBECONFIG_FILE ]] || return 1
  processes_alive || return 1
  kubectl_ get --raw /readyz --request-timeout=5s >/dev/null 2>&1
}

healthy() {
  api_ready || return 1
  # A default ServiceAccount means the controller manager runs; a Ready node means kwok does.
  kubectl_ get serviceaccount default -n default --request-timeout=5s >/dev/null 2>&1 || return 1
  [[ $(kubectl_ get nodes --request-timeout=5s -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True) -ge 1 ]]
}

# The API server calls webhooks behind a Service at the Service's endpoints (there is no kube-proxy to
# route a ClusterIP): an operator run outside the cluster (`npm run operator`) makes itself the
# conversion webhook Service's endpoint, and the image test points it at a container. A cluster
# started before this flag existed is replaced.
aggregator_routing() {
  local pidfile=$KWOK_WORKDIR/clusters/$NAME/pids/kube-apiserver.pid
  [[ -f $pidfile ]] && tr '\0' '\n' <"/proc/$(<"$pidfile")/cmdline" 2>/dev/null | grep -qx -- '--enable-aggregator-routing=true'
}

# The running cluster has the audit policy asked for (kwokctl keeps a copy as audit.yaml), or neither has one.
same_audit_policy() {
  local copy=$KWOK_WORKDIR/clusters/$NAME/audit.yaml
  if [[ -n $AUDIT_POLICY ]]; then cmp -s "$AUDIT_POLICY" "$copy"; else [[ ! -e $copy ]]; fi
}

# The running cluster traces as asked: its API server reads the tracing configuration file (which
# names the endpoint and the sampling) with the same content, or neither traces.
same_tracing() {
  local pidfile=$KWOK_WORKDIR/clusters/$NAME/pids/kube-apiserver.pid flag
  flag=$(tr '\0' '\n' <"/proc/$(<"$pidfile")/cmdline" 2>/dev/null | grep -x -- "--tracing-config-file=.*" || true)
  if [[ $TRACING == true ]]; then
    [[ $flag == "--tracing-config-file=$TRACING_CONFIG" ]] && tracing_config | cmp -s - "$TRACING_CONFIG"
  else
    [[ -z $flag ]]
  fi
}

# The API server's TracingConfiguration (apiserver.config.k8s.io/v1, GA since 1.34).
tracing_config() {
  cat <<YAML
apiVersion: apiserver.config.k8s.io/v1
kind: TracingConfiguration
endpoint: $TRACING_ENDPOINT
samplingRatePerMillion: $TRACING_SAMPLING
YAML
}

# Where --tracing sends spans: the variable, else the Collector of `npm run tracing:up`, else the
# OTLP gRPC port on this machine.
tracing_settings() {
  local endpoints=$ROOT/.tracing/endpoints.env
  TRACING_ENDPOINT=${WEBSITE_STACK_CLUSTER_TRACING_ENDPOINT:-}
  if [[ -z $TRACING_ENDPOINT && -f $endpoints ]]; then
    TRACING_ENDPOINT=$(sed -n 's/^COLLECTOR_OTLP_GRPC=//p' "$endpoints")
  fi
  TRACING_ENDPOINT=${TRACING_ENDPOINT:-127.0.0.1:4317}
  [[ $TRACING_ENDPOINT =~ ^[^/:]+:[0-9]+$ ]] \
    || die "WEBSITE_STACK_CLUSTER_TRACING_ENDPOINT='$TRACING_ENDPOINT' is not host:port (an OTLP gRPC receiver, no scheme)"
  TRACING_SAMPLING=${WEBSITE_STACK_CLUSTER_TRACING_SAMPLING:-1000000}
  [[ $TRACING_SAMPLING =~ ^[0-9]+$ ]] && (( TRACING_SAMPLING <= 1000000 )) \
    || die "WEBSITE_STACK_CLUSTER_TRACING_SAMPLING='$TRACING_SAMPLING' is not a whole number of traces per million requests (0 to 1000000)"
}

# A cluster made for a real node has a marker; one of each kind is not the other.
same_node_kind() {
  if [[ $REAL_NODE == true ]]; then [[ -f $KWOK_WORKDIR/clusters/$NAME/real-node ]]; else [[ ! -f $KWOK_WORKDIR/clusters/$NAME/real-node ]]; fi
}

# kwokctl's configuration file for what the flags of `up` ask of the control plane. In a file:
# kwokctl 0.8's --extra-args mix up the arguments of a component named twice once another component
# has been named twice (cluster.go, mutationComponentPatches). Prints the arguments that pass it.
kwokctl_config() {
  local config=$DIR/kwokctl.yaml apiserver_args=() etcd_patch=""
  [[ $REAL_NODE == true || $TRACING == true ]] || return 0
  # What a real node needs of the control plane: the API server on 6443 (where the package's
  # NetworkPolicies let the operator reach it), a certificate naming the `kubernetes` Service's
  # address (10.0.0.1) and the node's gateway (172.31.254.1, see scripts/real-node.sh), a client
  # certificate for the kubelets (logs, exec, port-forward) and their addresses (the node's name
  # resolves nowhere), and kwok managing only nodes annotated as its own.
  if [[ $REAL_NODE == true ]]; then
    local pki=$KWOK_WORKDIR/clusters/$NAME/pki
    apiserver_args+=("{key: kubelet-client-certificate, value: $pki/admin.crt}"
      "{key: kubelet-client-key, value: $pki/admin.key}"
      "{key: kubelet-preferred-address-types, value: InternalIP}")
  fi
  # Tracing: the API server's configuration file (where same_tracing reads it back), and etcd
  # exporting at rate 0: only as children of sampled requests, whose context the API server's etcd
  # client carries.
  if [[ $TRACING == true ]]; then
    tracing_config >"$TRACING_CONFIG"
    apiserver_args+=("{key: tracing-config-file, value: $TRACING_CONFIG}")
    etcd_patch="- name: etcd
  extraArgs:
  - {key: enable-distributed-tracing, value: \"true\"}
  - {key: distributed-tracing-address, value: \"$TRACING_ENDPOINT\"}
  - {key: distributed-tracing-service-name, value: etcd}
  - {key: distributed-tracing-instance-id, value: $NAME}
  - {key: distributed-tracing-sampling-rate, value: \"0\"}"
  fi
  {
    printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\n'
    if [[ $REAL_NODE == true ]]; then
      printf 'options:\n  kubeApiserverPort: 6443\n  kubeApiserverCertSANs: [10.0.0.1, 172.31.254.1]\n'
    fi
    printf 'componentsPatches:\n- name: kube-apiserver\n  extraArgs:\n'
    printf '  - %s\n' "${apiserver_args[@]}"
    [[ -z $etcd_patch ]] || printf '%s\n' "$etcd_patch"
    if [[ $REAL_NODE == true ]]; then
      printf -- '- name: kwok-controller\n  extraArgs:\n'
      printf '  - {key: manage-all-nodes, value: "false"}\n'
      printf '  - {key: manage-nodes-with-annotation-selector, value: kwok.x-k8s.io/node=fake}\n'
    fi
  } >"$config"
  printf '%s\n' --config "$config"
}

usage_hint() {
  cat >&2 <<MSG
[cluster] '$NAME' is up. Use it with:
    export KUBECONFIG=$KUBECONFIG_FILE
    $DIR/bin/kubectl get nodes
  or: $DIR/bin/kubectl --kubeconfig $KUBECONFIG_FILE apply -f dist/website-operator/website-crd.yaml
  Stop it with: npm run cluster:down
MSG
}

# Waits for a command to succeed: $1 says what for, $2 the bound in seconds; on timeout, the last
# lines of $WAIT_LOG (a component's log, when set) say why.
wait_for() {
  local what=$1 deadline=$((SECONDS + ${2:-120}))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS >= deadline )); then
      [[ -z ${WAIT_LOG:-} ]] || tail -n 20 "$WAIT_LOG" >&2 || true
      die "timed out waiting for $what"
    fi
    sleep 1
  done
}

up() {
  binaries
  mkdir -p "$DIR/bin"
  # kubectl with a discovery cache of this cluster's own unless the caller names one (KUBECACHEDIR):
  # the default one (~/.kube/cache) is keyed by host and port, and another local cluster that used
  # the same port earlier (with other CRDs) would make kubectl resolve names against the wrong API.
  rm -f "$DIR/bin/kubectl"
  printf '#!/bin/sh\n: "${KUBECACHEDIR:=%s}"\nexport KUBECACHEDIR\nexec %q "$@"\n' "$DIR/kube-cache" "$KUBECTL" >"$DIR/bin/kubectl"
  chmod +x "$DIR/bin/kubectl"
  [[ -z $AUDIT_POLICY || -f $AUDIT_POLICY ]] || die "no audit policy file at $AUDIT_POLICY (WEBSITE_STACK_CLUSTER_AUDIT_POLICY)"
  local replacing="found a stale cluster '$NAME' (left by an interrupted run?): replacing it"
  if healthy || { [[ $REAL_NODE == true ]] && api_ready; }; then
    if same_audit_policy && aggregator_routing && same_node_kind && same_tracing; then
      log "reusing the running cluster '$NAME'"
      [[ $REAL_NODE == false ]] || "$ROOT/scripts/real-node.sh" up
      usage_hint
      return
    fi
    replacing="the running cluster '$NAME' has another audit policy than WEBSITE_STACK_CLUSTER_AUDIT_POLICY asks for, no aggregator routing, or is not of the kind asked for (--real-node, --tracing or their settings): replacing it"
  fi
  if [[ -d $KWOK_WORKDIR/clusters/$NAME ]]; then
    log "$replacing"
    [[ ! -d $DIR/real-node ]] || "$ROOT/scripts/real-node.sh" down
    "$KWOKCTL" --name "$NAME" delete cluster >/dev/null 2>&1 || true
    stop_leftovers
    rm -rf "$KWOK_WORKDIR/clusters/$NAME"
  fi
  rm -rf "$KUBECONFIG_FILE" "$DIR/kube-cache"
  # kwokctl gives each component the first free port counting down from 32767, so two clusters
  # created at once (the test lanes' clusters, a benchmark's beside them) would pick the same ones.
  # One creation at a time on this machine, until every component listens; kwokctl and what it
  # starts do not inherit the lock.
  exec 8>"${TMPDIR:-/tmp}/website-stack-cluster-create.lock"
  flock 8
  local start=$SECONDS
  local -a audit=() config=()
  [[ -z $AUDIT_POLICY ]] || audit=(--kube-audit-policy "$AUDIT_POLICY")
  mapfile -t config < <(kwokctl_config)
  log "creating cluster '$NAME' (Kubernetes $KWOK_KUBE_VERSION, etcd $KWOK_ETCD_VERSION, binary runtime)"
  # One controller manager and one scheduler: without leader election they survive an API server
  # restart (with it they exit when they cannot renew their lease, and nothing restarts them here).
  "$KWOKCTL" --name "$NAME" create cluster \
    --runtime binary \
    --kubeconfig "$KUBECONFIG_FILE" \
    --kube-apiserver-binary "$APISERVER" \
    --kube-controller-manager-binary "$CONTROLLER_MANAGER" \
    --kube-scheduler-binary "$SCHEDULER" \
    --kwok-controller-binary "$KWOK" \
    --etcd-binary "$ETCD" \
    --extra-args kube-controller-manager=leader-elect=false \
    --extra-args kube-scheduler=leader-elect=false \
    --extra-args kube-apiserver=enable-aggregator-routing=true \
    "${audit[@]}" "${config[@]}" \
    --wait 2m ${WEBSITE_STACK_CLUSTER_EXTRA_ARGS:-} >"$DIR/kwokctl.log" 2>&1 8>&- \
    || { tail -20 "$DIR/kwokctl.log" >&2; die "kwokctl could not create the cluster (full log: $DIR/kwokctl.log; component logs: $KWOK_WORKDIR/clusters/$NAME/logs)"; }
  if [[ $REAL_NODE == false ]]; then
    "$KWOKCTL" --name "$NAME" scale node --replicas "$NODES" >>"$DIR/kwokctl.log" 2>&1 8>&- \
      || { tail -20 "$DIR/kwokctl.log" >&2; die "kwokctl could not create nodes (log: $DIR/kwokctl.log)"; }
  fi
  wait_for "the API server" 60 api_ready
  flock -u 8
  exec 8>&-
  wait_for "the default ServiceAccount (controller manager)" 120 kubectl_ get serviceaccount default -n default
  if [[ $REAL_NODE == true ]]; then
    touch "$KWOK_WORKDIR/clusters/$NAME/real-node"
    "$ROOT/scripts/real-node.sh" up
  fi
  wait_for "Ready nodes" 120 healthy
  if [[ $REAL_NODE == false ]]; then
    # Room for a thousand Websites' Services: the API server's default Service range (10.0.0.0/24)
    # holds 253 besides `kubernetes`, and the next create fails with "failed to allocate a
    # serviceIP: range is full". A ServiceCIDR (networking.k8s.io/v1) adds a /16 to the running
    # cluster. Not with a real node, whose kube-proxy and kube-router are configured for the
    # default range (and which runs a handful of Services).
    kubectl_ apply --server-side -f - >/dev/null <<<'{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"website-stack-services"},"spec":{"cidrs":["10.96.0.0/16"]}}'
    wait_for "the cluster's second Service range" 60 kubectl_ wait --for=condition=Ready --timeout=5s servicecidr/website-stack-services
  fi
  log "cluster '$NAME' ready in $((SECONDS - start)) s"
  usage_hint
}

# Processes of a cluster whose state directory is gone or unreadable (kill -9 of kwokctl itself).
# An API server whose etcd is gone can hang in its graceful shutdown: after 10 s, kill -9.
stop_leftovers() {
  local pids waited=0
  pids=$(pgrep -f -- "$KWOK_WORKDIR/clusters/$NAME/" || true)
  [[ -n $pids ]] || return 0
  kill $pids 2>/dev/null || true
  while pgrep -f -- "$KWOK_WORKDIR/clusters/$NAME/" >/dev/null; do
    if (( waited++ >= 100 )); then
      pkill -9 -f -- "$KWOK_WORKDIR/clusters/$NAME/" || true
      break
    fi
    sleep 0.1
  done
}

down() {
  binaries
  [[ ! -d $DIR/real-node ]] || "$ROOT/scripts/real-node.sh" down
  if [[ -d $KWOK_WORKDIR/clusters/$NAME ]]; then
    mkdir -p "$DIR"
    "$KWOKCTL" --name "$NAME" delete cluster >>"$DIR/kwokctl.log" 2>&1 || true
  fi
  stop_leftovers
  rm -rf "$KWOK_WORKDIR/clusters/$NAME" "$KUBECONFIG_FILE" "$DIR/kube-cache" "$TRACING_CONFIG"
  log "cluster '$NAME' is down"
}

# kwokctl can stop and start only whole clusters; this restarts one process exactly as kwokctl
# launched it (command line, working directory and log file from /proc), and records its new pid
# so `down` stops it. Either restart breaks every client's watches (the tests and `npm run chaos`
# prove the operator recovers); the API server's /readyz covers etcd too.
restart_component() {
  local component=$1 pidfile=$KWOK_WORKDIR/clusters/$NAME/pids/$1.pid pid cwd
  [[ -f $pidfile ]] || die "no $component pid file for cluster '$NAME': is it up? (npm run cluster:up)"
  pid=$(<"$pidfile")
  [[ -r /proc/$pid/cmdline ]] || die "$component (pid $pid) is not running: recreate the cluster (scripts/cluster.sh down && scripts/cluster.sh up)"
  local -a cmd
  mapfile -d '' -t cmd <"/proc/$pid/cmdline"
  cwd=$(readlink "/proc/$pid/cwd")
  # Its port is free from the stop until it listens again: a cluster created meanwhile would take
  # it (kwokctl counts down from 32767 to the first free port), so the restart holds the creation
  # lock (see up) until the component is back. The process started does not inherit it.
  exec 8>"${TMPDIR:-/tmp}/website-stack-cluster-create.lock"
  flock 8
  # A graceful stop of the API server waits up to a minute for open watches to end; after 10 s,
  # crash it instead.
  kill "$pid"
  local waited=0
  while kill -0 "$pid" 2>/dev/null; do
    (( waited++ < 100 )) || kill -9 "$pid" 2>/dev/null || true
    sleep 0.1
  done
  log "$component stopped; starting it again"
  (cd "$cwd" && exec setsid "${cmd[@]}" >>"$KWOK_WORKDIR/clusters/$NAME/logs/$component.log" 2>&1 </dev/null 8>&-) &
  echo $! >"$pidfile"
  # A bound, not a pause: on a machine busy with other builds and tests, the API server has taken
  # over a minute to start again (its CRDs, aggregator and informers all start afresh).
  WAIT_LOG=$KWOK_WORKDIR/clusters/$NAME/logs/$component.log wait_for "kube-apiserver /readyz" 180 \
    kubectl_ get --raw /readyz --request-timeout=2s
  flock -u 8
  exec 8>&-
}

case "${1:-}" in
  up)
    for option in "${@:2}"; do
      case "$option" in
        --real-node) REAL_NODE=true ;;
        --tracing) TRACING=true ;;
        *) die "unknown option '$option' (scripts/cluster.sh up [--real-node] [--tracing])" ;;
      esac
    done
    [[ $TRACING == false ]] || tracing_settings
    up ;;
  down) down ;;
  status) binaries >/dev/null; healthy ;;
  restart-apiserver) restart_component kube-apiserver ;;
  restart-etcd) restart_component etcd ;;
  *) die "usage: scripts/cluster.sh up|down|status|restart-apiserver|restart-etcd" ;;
esac
