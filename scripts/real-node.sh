#!/usr/bin/env bash
# One real node in the local cluster (scripts/cluster.sh up --real-node): a kubelet and kube-proxy
# of the control plane's release, containerd with runc, the CNI bridge plugin, kube-router enforcing
# NetworkPolicies, and CoreDNS as the cluster's DNS, all built by scripts/binaries.sh (group node);
# the images every pod in dist/ names, built here by scripts/node-images.sh and imported, so nothing
# is pulled.
#
#   scripts/real-node.sh up       start the node and CoreDNS, or bring a running node up to date
#                                 (restarting only what changed); needs root
#   scripts/real-node.sh down     stop it, its containers and its network, and remove its state
#   scripts/real-node.sh status   exit 0 when the node is Ready
#   scripts/real-node.sh images   build the images and import the missing or changed ones
#
# Called by scripts/cluster.sh with the cluster's variables (DIR, NAME, KWOK_WORKDIR, KUBECONFIG_FILE).
#
# supervisord (Debian's supervisor) runs containerd, the kubelet, kube-proxy and kube-router, as
# systemd does on a kubeadm node: it starts each again when it exits, after a delay that grows while
# it keeps failing at start (scripts/real-node/supervisord.conf and the programs' files beside it),
# and logs each exit and start in .cluster/real-node/logs/supervisord.log. To look or act:
#   sudo supervisorctl -c .cluster/real-node/supervisor/supervisord.conf status|restart kubelet|...
# Every configuration file is rendered from its template in scripts/real-node/ and replaced only
# when its content changes; a program's file in supervisord's conf.d/ carries a fingerprint of what
# the program reads (its binary and files), so `up` on a running node restarts exactly the daemons
# whose configuration or binary changed, and on an unchanged node nothing.
#
# A kubelet owns its host: it sets kernel sysctls (vm.overcommit_memory, kernel.panic, ...), writes
# iptables chains (KUBE-FIREWALL drops traffic to 127.0.0.0/8 from other interfaces), mounts volumes
# and creates cgroups. So the node is a guest, the way kind runs one in a container: its processes
# (containerd and every container, the kubelet, kube-proxy, kube-router) share one network namespace
# and one mount namespace of their own. The network namespace reaches the host through a veth pair
# (the node is 172.31.254.2, the host 172.31.254.1) and the host routes the Service and pod ranges to
# it, so `curl` of a ClusterIP works from the host. In the mount namespace the kernel settings the
# kubelet would change read as the values it wants (files bound over /proc/sys), so it changes none.
# Its pods' cgroups sit under /website-stack-node in every hierarchy. One real node per machine: the
# addresses and routes are fixed.
# shellcheck disable=SC2034 # render() reads variables by name: those the templates' ${VAR}s name.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${DIR:?run through scripts/cluster.sh}" "${NAME:?}" "${KWOK_WORKDIR:?}" "${KUBECONFIG_FILE:?}"

NODE_NAME=real-node
# Everything the node writes, and its logs (logs/<component>.log, logs/supervisord.log).
STATE=$DIR/real-node
# supervisord's configuration (supervisord.conf, a program's file in conf.d/), pid file and socket.
SUPERVISOR_DIR=$STATE/supervisor
TEMPLATES=$ROOT/scripts/real-node
# The daemons supervisord runs, in the order `up` adds them.
DAEMONS=(containerd kubelet kube-proxy kube-router)
# The daemons' PATH, whoever runs `up` (npm run adds its own folders to the caller's).
NODE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The mount namespace is kept by a bind mount of its /proc file, on a mount of its own made private
# (a namespace file cannot be bound onto a shared mount).
RUN=/run/website-stack-node
NETNS=website-stack-node
HOST_IF=wsnode0
HOST_IP=172.31.254.1
NODE_IP=172.31.254.2
POD_CIDR=10.244.0.0/24
BRIDGE_IP=10.244.0.1
# kwokctl's Service range, and the DNS Service's address in it (kubeadm's convention: .10).
SERVICE_CIDR=10.0.0.0/24
DNS_IP=10.0.0.10
CGROUP_ROOT=/website-stack-node
PKI=$KWOK_WORKDIR/clusters/$NAME/pki
LABEL=website-stack.dev/real-node
# The kubelet's kernel settings (pkg/kubelet/cm/container_manager_linux.go, setupKernelTunables).
KERNEL_TUNABLES=(vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1
  kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000)

log() { printf '[real-node] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

kubectl_() { "$DIR/bin/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }
# A command inside the node's namespaces.
in_node() { nsenter --net="/run/netns/$NETNS" --mount="$RUN/mnt" -- "$@"; }

# BIN[<name>]: the path of each binary of group node, resolved (built when missing) by `binaries
# NAME...` when a stage first needs it: on a cold machine, containerd and the kubelet start while
# kube-router and CoreDNS, the longest builds, still compile (the order of group node).
declare -A BIN
eval "$(grep -E '^(COREDNS|KUBERNETES)_VERSION=' "$ROOT/scripts/binaries.sh")"
binaries() {
  local line
  while IFS= read -r line; do
    BIN[${line%%=*}]=${line#*=}
  done < <("$ROOT/scripts/binaries.sh" "$@")
}

# CoreDNS as kubeadm deploys it: kubeadm's own manifests, from the Kubernetes module the node's
# kubelet and kube-proxy are built from, rendered by real-node/coredns-manifests.go. It is a pod
# like the rest, labelled k8s-app=kube-dns in kube-system, as the package's NetworkPolicies expect.
coredns() {
  local module
  module=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | jq -r .Dir)
  (cd "$ROOT/scripts/real-node" && go run coredns-manifests.go "$module" "$DNS_IP" \
    "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" cluster.local) |
    kubectl_ apply --server-side --field-manager real-node -f - >/dev/null
}

deps() {
  [[ $(id -u) -eq 0 ]] || die "a real node needs root (network and mount namespaces, cgroups, iptables); run it with sudo"
  # The node's tools from Debian (scripts/system-deps.txt, group real-node), when missing. (Where
  # systemd runs, Debian's supervisor package also starts a supervisord of its own, for
  # /etc/supervisor/conf.d: not the node's, which `up` starts with its own configuration.)
  bash "$ROOT/scripts/system-deps.sh" real-node
}

wait_for() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || { tail -n 30 "$STATE"/logs/*.log >&2 2>/dev/null || true; die "timed out waiting for $what (logs: $STATE/logs)"; }
    sleep 1
  done
}

api_port() { sed -n 's|^ *server: https://[^:]*:\([0-9]*\).*|\1|p' "$KUBECONFIG_FILE" | head -1; }

# The network namespace, the veth pair and the routes both ways.
network() {
  if [[ ! -e /run/netns/$NETNS ]]; then
    ip netns add "$NETNS"
  fi
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    ip link add "$HOST_IF" type veth peer name eth0 netns "$NETNS"
    ip addr add "$HOST_IP/30" dev "$HOST_IF"
    ip link set "$HOST_IF" up
    ip -n "$NETNS" addr add "$NODE_IP/30" dev eth0
    ip -n "$NETNS" link set eth0 up
    ip -n "$NETNS" link set lo up
    ip -n "$NETNS" route add default via "$HOST_IP"
  fi
  # The host reaches ClusterIPs and pods through the node, as a machine on a node's network would.
  ip route replace "$SERVICE_CIDR" via "$NODE_IP" dev "$HOST_IF"
  ip route replace "$POD_CIDR" via "$NODE_IP" dev "$HOST_IF"
  # Both per network namespace: routing between pods and out, and bridged pod-to-pod traffic through
  # iptables, where kube-proxy and kube-router act on it.
  ip netns exec "$NETNS" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
}

# The mount namespace, its /proc/sys overlays and the folders the kubelet writes at fixed paths.
mounts() {
  [[ -e $RUN/mnt ]] && in_node true 2>/dev/null && return 0
  mkdir -p "$RUN"
  mountpoint -q "$RUN" || { mount --bind "$RUN" "$RUN"; mount --make-private "$RUN"; }
  touch "$RUN/mnt"
  mkdir -p "$STATE/sysctl" "$STATE/container-logs" /var/log/containers
  local tunable binds=""
  for tunable in "${KERNEL_TUNABLES[@]}"; do
    mkdir -p "$(dirname "$STATE/sysctl/${tunable%%=*}")"
    echo "${tunable#*=}" >"$STATE/sysctl/${tunable%%=*}"
    binds+="mount --bind $STATE/sysctl/${tunable%%=*} /proc/sys/${tunable%%=*}; "
  done
  # Folders at fixed paths the kubelet and containerd write to, kept inside: /var/log/containers
  # (links to container logs), /run/netns (pods' network namespaces), /run/containerd (shim
  # sockets), /run/nri.
  mkdir -p /run/netns /run/containerd /run/nri
  unshare --mount="$RUN/mnt" --propagation private -- sh -ec "$binds mount --bind $STATE/container-logs /var/log/containers
    for dir in /run/netns /run/containerd /run/nri; do mount -t tmpfs -o mode=0755 tmpfs \$dir; done"
}

# The kubelet's, kube-proxy's and kube-router's client certificates, signed by the cluster's CA.
certificate() {
  local name=$1 subject=$2
  [[ -f $STATE/pki/$name.crt ]] && return 0
  mkdir -p "$STATE/pki"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$STATE/pki/$name.key" -subj "$subject" -out "$STATE/pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$STATE/pki/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 365 -out "$STATE/pki/$name.crt" 2>/dev/null
  rm -f "$STATE/pki/$name.csr"
}

# Renders scripts/real-node/<template> to <dest>: each ${VAR} in it is the variable of that name here
# (every one must be set), nothing else changes. <dest> is replaced (by a new file renamed over it)
# only when its content changes, so an unchanged file keeps its inode and time, which the daemons'
# fingerprints are made of. WROTE says whether it was.
WROTE=false
render() {
  local template=$TEMPLATES/$1 dest=$2 name tmp
  local -a vars=() env=()
  # shellcheck disable=SC2016 # a literal ${ in the pattern
  mapfile -t vars < <(grep -o '\${[A-Za-z_][A-Za-z0-9_]*}' "$template" | sort -u | tr -d '${}')
  for name in "${vars[@]}"; do
    [[ -v $name ]] || die "$template names \${$name}, which is not set"
    env+=("$name=${!name}")
  done
  mkdir -p "$(dirname "$dest")"
  tmp=$(mktemp "$dest.XXXXXX")
  chmod 644 "$tmp"
  if [[ ${#vars[@]} -gt 0 ]]; then
    # shellcheck disable=SC2016 # envsubst's list of the variables to replace: ${A} ${B} ...
    env "${env[@]}" envsubst "$(printf '${%s} ' "${vars[@]}")" <"$template" >"$tmp"
  else
    cat "$template" >"$tmp"
  fi
  if cmp -s "$tmp" "$dest"; then
    rm -f "$tmp"
    WROTE=false
  else
    [[ ! -e $dest ]] || log "updating $dest"
    mv -f "$tmp" "$dest"
    WROTE=true
  fi
}

# What identifies the files a daemon reads, its binary among them: their inode, size and time, as one
# short hash. render() replaces a file whose content changes (a new inode); binaries.sh builds a
# binary anew as a new file.
fingerprint() { stat -L -c '%n %i %s %Y' -- "$@" | sha256sum | cut -c1-16; }

kubeconfig_for() {
  local CLIENT=$1
  render kubeconfig "$STATE/$CLIENT.kubeconfig"
}

supervisorctl_() { supervisorctl -c "$SUPERVISOR_DIR/supervisord.conf" "$@"; }

# The pid of this node's supervisord, if it runs (its pid file may be stale: the process must be
# a supervisord of this configuration).
supervisord_pid() {
  local pid
  pid=$(cat "$SUPERVISOR_DIR/supervisord.pid" 2>/dev/null) && [[ -n $pid ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$SUPERVISOR_DIR/supervisord.conf" || return 1
  echo "$pid"
}

# Waits up to $2 seconds for process $1 to exit, then kills it.
stop_process() {
  local pid=$1 waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if (( waited++ == $2 * 10 )); then kill -9 "$pid" 2>/dev/null || true; fi
    sleep 0.1
  done
}

# The node's daemons running without supervisord: started by this script before it used one, or
# left by a supervisord that was killed. They stop before supervisord starts its own (the containers
# stay). A daemon is a process of the node's network namespace that runs one of their binaries, of
# this build or another one of binaries.sh (<name>-v<version>): not a shim, not a container.
stop_strays() {
  local pid exe name
  local -a pids=() binaries=()
  for name in "${DAEMONS[@]}"; do [[ -z ${BIN[$name]:-} ]] || binaries+=("$(readlink -f "${BIN[$name]}")"); done
  for pid in $(ip netns pids "$NETNS" 2>/dev/null); do
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
    exe=${exe% (deleted)}
    if [[ " ${binaries[*]} " == *" $exe "* || ${exe##*/} =~ ^(containerd|kubelet|kube-proxy|kube-router)-v[0-9] ]]; then
      pids+=("$pid")
    fi
  done
  # The pid files of the script before supervisord.
  rm -rf "$STATE/pids"
  [[ ${#pids[@]} -gt 0 ]] || return 0
  log "stopping the node's daemons that run unsupervised (pids ${pids[*]})"
  kill "${pids[@]}" 2>/dev/null || true
  for pid in "${pids[@]}"; do stop_process "$pid" 10; done
}

# supervisord, in the node's namespaces, and revive.py beside it. A supervisord already running is
# kept, unless its own configuration changed: then it stops its programs and starts anew.
supervisor() {
  local PYTHON INPUTS pid SUPERVISORD
  SUPERVISORD=$(PATH=$NODE_PATH command -v supervisord)
  render supervisord.conf "$SUPERVISOR_DIR/supervisord.conf"
  if pid=$(supervisord_pid) && [[ $WROTE == true ]]; then
    log "supervisord's configuration changed: restarting it and the node's daemons"
    kill "$pid"
    stop_process "$pid" 60
  fi
  if ! supervisord_pid >/dev/null; then
    stop_strays
    # `up` adds the programs one stage at a time.
    rm -f "$SUPERVISOR_DIR"/conf.d/*.conf
    mkdir -p "$SUPERVISOR_DIR/conf.d" "$STATE/logs"
    # An empty environment but the PATH of supervisord.conf; supervisord daemonizes once listening.
    local out
    out=$(in_node env -i "$SUPERVISORD" -c "$SUPERVISOR_DIR/supervisord.conf" 2>&1 </dev/null) \
      || die "supervisord did not start: $out"
    wait_for "supervisord" 30 supervisorctl_ pid
  fi
  # The Python supervisord runs on, which has its modules.
  PYTHON=$(sed -n '1s/^#! *//p' "$SUPERVISORD")
  render revive.py "$SUPERVISOR_DIR/revive.py"
  INPUTS=$(fingerprint "$SUPERVISOR_DIR/revive.py")
  render revive.conf "$SUPERVISOR_DIR/conf.d/revive.conf"
  update revive
}

# `supervisorctl update` for group $1: adds it, or restarts it with its new file, or leaves it be.
update() {
  supervisorctl_ update "$1" | while IFS= read -r line; do log "supervisord: $line"; done
}

# The program file of daemon $1 (scripts/real-node/$1.conf) with the fingerprint of its binary and
# of the files $2... it reads, then `supervisorctl update`: a new daemon starts, a changed one
# restarts, an unchanged one runs on. One stopped by hand (supervisorctl stop) starts again.
daemon() {
  local name=$1 BINARY=${BIN[$1]} INPUTS state
  shift
  INPUTS=$(fingerprint "$BINARY" "$@")
  render "$name.conf" "$SUPERVISOR_DIR/conf.d/$name.conf"
  update "$name"
  state=$(supervisorctl_ status "$name" 2>/dev/null | awk '{print $2}' || true)
  case "$state" in
    STOPPED | EXITED | FATAL)
      log "starting $name (it was $state)"
      supervisorctl_ start "$name" >/dev/null || true
      ;;
  esac
}

containerd_config() {
  mkdir -p "$STATE/containerd" "$STATE/cni/bin" "$STATE/cni/net.d"
  local plugin RUNC
  for plugin in bridge host-local loopback portmap; do
    ln -sfn "${BIN[cni-$plugin]}" "$STATE/cni/bin/$plugin"
  done
  RUNC=$(PATH=$NODE_PATH command -v runc)
  render 10-website-stack.conflist "$STATE/cni/net.d/10-website-stack.conflist"
  render containerd-config.toml "$STATE/containerd/config.toml"
  # The shim is found on containerd's PATH by its name.
  mkdir -p "$STATE/bin"
  ln -sfn "${BIN[containerd-shim-runc-v2]}" "$STATE/bin/containerd-shim-runc-v2"
}

# A manifest of scripts/real-node/, applied (server-side: unchanged objects stay as they are).
apply() {
  local dir
  dir=$(mktemp -d)
  render "$1" "$dir/$1"
  kubectl_ apply --server-side --field-manager real-node -f "$dir/$1" >/dev/null
  rm -rf "$dir"
}


ctr_() { in_node "${BIN[ctr]}" --address "$STATE/containerd/containerd.sock" -n k8s.io "$@"; }

# Imports each image of the "<reference> <tar>" lines on stdin (as scripts/node-images.sh build
# prints them) whose archive changed since it was last imported (stamps/ holds the archive's size
# and time per image).
import_images() {
  local ref tar stamp
  mkdir -p "$STATE/stamps"
  while read -r ref tar; do
    [[ -n $ref ]] || continue
    stamp=$STATE/stamps/$(echo "$ref" | tr '/:' '__')
    if [[ "$(cat "$stamp" 2>/dev/null)" == "$(stat -c '%s %Y' "$tar")" ]]; then continue; fi
    log "importing $ref"
    # (ctr warns about cgroup v1 on every call.)
    ctr_ images import --snapshotter overlayfs "$tar" 2> >(grep -v 'cgroup v1 is deprecated' >&2) >/dev/null
    stat -c '%s %Y' "$tar" >"$stamp"
  done
}

# Builds the images of scripts/node-images.sh named (all when none is) when missing, and imports them.
images() {
  local list
  list=$(bash "$ROOT/scripts/node-images.sh" build "$@")
  import_images <<<"$list"
}

node_ready() {
  [[ $(kubectl_ get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

up() {
  deps
  local start=$SECONDS
  [[ -f $PKI/ca.key ]] || die "no cluster CA at $PKI: the cluster must be created by scripts/cluster.sh up --real-node"
  if ! owned; then
    die "the real node of the cluster in $(cat "$RUN/owner") runs on this machine (one per machine): stop it first (WEBSITE_STACK_CLUSTER_DIR=$(cat "$RUN/owner") scripts/cluster.sh down)"
  fi
  # supervisord's files split a program's command line at spaces, and take % for its own.
  [[ $STATE != *[[:space:]%]* ]] || die "the node's state directory ($STATE) has a space or a %: use another WEBSITE_STACK_CLUSTER_DIR"
  mkdir -p "$STATE" "$RUN"
  echo "$DIR" >"$RUN/owner"
  # Every pod image but CoreDNS's is built beside the stages below (on a cold machine, minutes of
  # buildah while the node's binaries still compile: they need none of them), and imported once
  # containerd runs. CoreDNS's waits for its binary, the last to compile.
  local -a pod_images
  mapfile -t pod_images < <(bash "$ROOT/scripts/node-images.sh" names | grep -vx coredns)
  bash "$ROOT/scripts/node-images.sh" build "${pod_images[@]}" >"$STATE/pod-images" &
  local pod_images_build=$!
  binaries containerd containerd-shim-runc-v2 ctr cni-bridge cni-host-local cni-loopback cni-portmap kubelet kube-proxy
  network
  mounts
  local cgroup
  for cgroup in /sys/fs/cgroup/*/; do
    [[ -e $cgroup/cgroup.procs ]] && mkdir -p "$cgroup${CGROUP_ROOT#/}"
  done
  certificate kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
  certificate kube-proxy "/CN=system:kube-proxy"
  certificate kube-router "/CN=system:kube-router"
  local API_PORT client
  API_PORT=$(api_port)
  for client in kubelet kube-proxy kube-router; do kubeconfig_for "$client"; done
  apply kube-router-rbac.yaml
  supervisor

  # Each stage adds its daemons to supervisord (or, on a running node, restarts those whose
  # configuration or binary changed) and waits for them.
  containerd_config
  daemon containerd "$STATE/containerd/config.toml" "$STATE/cni/net.d/10-website-stack.conflist"
  wait_for "containerd" 60 ctr_ version

  render kubelet.yaml "$STATE/kubelet.yaml"
  mkdir -p "$STATE/kubelet" "$STATE/pod-logs"
  daemon kubelet "$STATE/kubelet.yaml" "$STATE/kubelet.kubeconfig" "$STATE/pki/kubelet.crt" "$PKI/ca.crt"
  render kube-proxy.yaml "$STATE/kube-proxy.yaml"
  daemon kube-proxy "$STATE/kube-proxy.yaml" "$STATE/kube-proxy.kubeconfig" "$STATE/pki/kube-proxy.crt" "$PKI/ca.crt"
  wait_for "node $NODE_NAME Ready" 120 node_ready
  # kube-router finds its Node object at start (or exits).
  binaries kube-router
  daemon kube-router "$STATE/kube-router.kubeconfig" "$STATE/pki/kube-router.crt" "$PKI/ca.crt"
  wait_for "kube-router" 60 in_node curl -fsS http://127.0.0.1:20244/healthz
  wait "$pod_images_build" || die "building the pod images failed (scripts/node-images.sh's log above)"
  import_images <"$STATE/pod-images"
  binaries coredns
  images coredns
  coredns
  wait_for "CoreDNS" 120 kubectl_ -n kube-system rollout status deployment/coredns --timeout 5s
  log "node '$NODE_NAME' Ready, with CoreDNS, in $((SECONDS - start)) s"
}

status() { [[ -d $STATE ]] && node_ready; }

# Every process of the node: those in its network namespace (the components, the shims) and those
# in its pods' cgroups (the containers, in network namespaces of their own).
node_pids() {
  [[ ! -e /run/netns/$NETNS ]] || ip netns pids "$NETNS" 2>/dev/null || true
  cat /sys/fs/cgroup/pids"$CGROUP_ROOT"/cgroup.procs 2>/dev/null || true
  find /sys/fs/cgroup/pids"$CGROUP_ROOT" -mindepth 2 -name cgroup.procs -exec cat {} + 2>/dev/null || true
}

# The machine's real node, if any, is this cluster's (its directory is in $RUN/owner).
owned() { [[ ! -f $RUN/owner || "$(cat "$RUN/owner")" == "$DIR" ]]; }

down() {
  local pid waited=0
  if ! owned; then
    log "the real node on this machine is another cluster's ($(cat "$RUN/owner")): leaving it"
    rm -rf "$STATE"
    return
  fi
  # supervisord first, so that it starts again none of what follows stops. It runs in the node's
  # network namespace, as its daemons and revive.py do: all of them go next.
  if pid=$(supervisord_pid); then kill -9 "$pid"; fi
  while pid=$(node_pids) && [[ -n $pid ]]; do
    # shellcheck disable=SC2086 # one pid per word
    kill -9 $pid 2>/dev/null || true
    (( waited++ < 100 )) || die "processes of the node survive kill -9: $pid"
    sleep 0.1
  done
  ip netns del "$NETNS" 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  if [[ -e $RUN/mnt ]]; then umount "$RUN/mnt" 2>/dev/null || true; rm -f "$RUN/mnt"; fi
  if mountpoint -q "$RUN"; then umount "$RUN"; fi
  rm -rf "$RUN"
  # Pod cgroups, deepest first (a cgroup is removed when empty).
  local cgroup
  for cgroup in /sys/fs/cgroup/*/"${CGROUP_ROOT#/}"; do
    if [[ -d $cgroup ]]; then find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
  done
  rm -rf "$STATE"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  images) binaries ctr; images ;;
  *) die "usage: scripts/real-node.sh up|down|status|images" ;;
esac
