#!/usr/bin/env bash
# One real node in the local cluster (scripts/cluster.sh up --real-node): a kubelet and kube-proxy
# of the control plane's release, containerd with runc, the CNI bridge plugin, kube-router enforcing
# NetworkPolicies, and CoreDNS as the cluster's DNS, all built by scripts/binaries.sh (group node);
# the images every pod in dist/ names, built here by scripts/node-images.sh and imported, so nothing
# is pulled.
#
#   scripts/real-node.sh up       start the node (or keep a healthy one) and CoreDNS; needs root
#   scripts/real-node.sh down     stop it, its containers and its network, and remove its state
#   scripts/real-node.sh status   exit 0 when the node is Ready
#   scripts/real-node.sh images   build the images and import the missing or changed ones
#
# Called by scripts/cluster.sh with the cluster's variables (DIR, NAME, KWOK_WORKDIR, KUBECONFIG_FILE).
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
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${DIR:?run through scripts/cluster.sh}" "${NAME:?}" "${KWOK_WORKDIR:?}" "${KUBECONFIG_FILE:?}"

NODE_NAME=real-node
# Everything the node writes, and its logs (logs/<component>.log).
STATE=$DIR/real-node
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

# BIN[<name>]: the path of each binary of group node.
declare -A BIN
binaries() {
  local line
  while IFS= read -r line; do
    BIN[${line%%=*}]=${line#*=}
  done < <("$ROOT/scripts/binaries.sh" node)
  eval "$(grep -E '^COREDNS_VERSION=' "$ROOT/scripts/binaries.sh")"
}

deps() {
  [[ $(id -u) -eq 0 ]] || die "a real node needs root (network and mount namespaces, cgroups, iptables); run it with sudo"
  local missing=()
  command -v ipset >/dev/null 2>&1 || missing+=(ipset)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  command -v conntrack >/dev/null 2>&1 || missing+=(conntrack)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "installing ${missing[*]} from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
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

kubeconfig_for() {
  local name=$1
  cat >"$STATE/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {certificate-authority: $PKI/ca.crt, server: "https://$HOST_IP:$(api_port)"}
users:
- name: $name
  user: {client-certificate: $STATE/pki/$name.crt, client-key: $STATE/pki/$name.key}
contexts:
- name: local
  context: {cluster: local, user: $name}
current-context: local
EOF
}

# Start a component in the node's namespaces, in a session of its own; its pid goes to pids/.
start() {
  local name=$1
  shift
  local pidfile=$STATE/pids/$name.pid
  if [[ -f $pidfile ]] && kill -0 "$(<"$pidfile")" 2>/dev/null; then return 0; fi
  mkdir -p "$STATE/pids" "$STATE/logs"
  # nsenter execs the component, so the recorded pid is the component's.
  setsid nsenter --net="/run/netns/$NETNS" --mount="$RUN/mnt" -- "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

containerd_config() {
  mkdir -p "$STATE/containerd" "$STATE/cni/bin" "$STATE/cni/net.d"
  local plugin
  for plugin in bridge host-local loopback portmap; do
    ln -sf "${BIN[cni-$plugin]}" "$STATE/cni/bin/$plugin"
  done
  cat >"$STATE/cni/net.d/10-website-stack.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "website-stack",
  "plugins": [
    {
      "type": "bridge", "bridge": "wsbr0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "$POD_CIDR", "gateway": "$BRIDGE_IP" }]],
                "routes": [{ "dst": "0.0.0.0/0" }], "dataDir": "$STATE/cni/ipam" }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
  cat >"$STATE/containerd/config.toml" <<EOF
version = 3
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"

[grpc]
  address = "$STATE/containerd/containerd.sock"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = 'registry.k8s.io/pause:3.10.2'

[plugins.'io.containerd.cri.v1.runtime']
  # The kubelet asks for negative oom_score_adj values (-998 for sandboxes); a host that refuses
  # them (some VMs do) makes runc fail with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['$STATE/cni/bin']
    conf_dir = '$STATE/cni/net.d'
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = 'io.containerd.runc.v2'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = '$(command -v runc)'
      SystemdCgroup = false
EOF
}

kubelet_config() {
  mkdir -p "$STATE/kubelet" "$STATE/pod-logs"
  cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 hosts are deprecated from 1.35 on and refused unless this is false.
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
containerRuntimeEndpoint: unix://$STATE/containerd/containerd.sock
podLogsDir: $STATE/pod-logs
address: $NODE_IP
port: 10250
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
# The node's disk and memory are the host's, which other work fills (a cold build of the caches
# took the disk to 97 % and the kubelet evicted every pod for disk pressure): no eviction (0% turns
# each hard threshold off), and no image garbage collection (every image is imported; none could
# be pulled again).
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "0%", nodefs.available: "0%", nodefs.inodesFree: "0%", imagefs.available: "0%"}
serializeImagePulls: false
EOF
}

kube_proxy_config() {
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
clientConnection: {kubeconfig: $STATE/kube-proxy.kubeconfig}
# The conntrack table size is global to the host: leave it as it is.
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
EOF
}

# kube-router's permissions: what its NetworkPolicy controller watches (as in its own
# daemonset/kube-router-firewall-daemonset.yaml, minus what the router and proxy parts use).
kube_router_rbac() {
  kubectl_ apply --server-side --field-manager real-node -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: website-stack:kube-router}
rules:
- apiGroups: [""]
  resources: [namespaces, pods, services, nodes, endpoints]
  verbs: [list, get, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, get, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, get, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: website-stack:kube-router}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: website-stack:kube-router}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:kube-router}
EOF
}

# CoreDNS as the cluster's DNS, a pod like the rest: labelled k8s-app=kube-dns in kube-system, as
# kubeadm runs it and as the package's NetworkPolicies expect it.
coredns() {
  kubectl_ apply --server-side --field-manager real-node -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: website-stack:coredns}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: website-stack:coredns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: website-stack:coredns}
subjects:
- {kind: ServiceAccount, name: coredns, namespace: kube-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
        }
        cache 30
        loop
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      containers:
      - name: coredns
        image: registry.k8s.io/coredns/coredns:$COREDNS_VERSION
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}
        livenessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 128Mi}}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $DNS_IP
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
EOF
}

# The image list of scripts/node-images.sh: "<reference> <docker-archive tar>" lines.
IMAGE_LIST=
image_list() { [[ -n $IMAGE_LIST ]] || IMAGE_LIST=$(bash "$ROOT/scripts/node-images.sh" build); echo "$IMAGE_LIST"; }

ctr_() { in_node "${BIN[ctr]}" --address "$STATE/containerd/containerd.sock" -n k8s.io "$@"; }

# Imports each image whose archive changed since it was last imported (stamps/ holds the archive's
# size and time per image).
images() {
  local ref tar stamp
  mkdir -p "$STATE/stamps"
  while read -r ref tar; do
    stamp=$STATE/stamps/$(echo "$ref" | tr '/:' '__')
    if [[ "$(cat "$stamp" 2>/dev/null)" == "$(stat -c '%s %Y' "$tar")" ]]; then continue; fi
    log "importing $ref"
    # (ctr warns about cgroup v1 on every call.)
    ctr_ images import --snapshotter overlayfs "$tar" 2> >(grep -v 'cgroup v1 is deprecated' >&2) >/dev/null
    stat -c '%s %Y' "$tar" >"$stamp"
  done < <(image_list)
}

node_ready() {
  [[ $(kubectl_ get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

up() {
  deps
  binaries
  local start=$SECONDS
  [[ -f $PKI/ca.key ]] || die "no cluster CA at $PKI: the cluster must be created by scripts/cluster.sh up --real-node"
  if ! owned; then
    die "the real node of the cluster in $(cat "$RUN/owner") runs on this machine (one per machine): stop it first (WEBSITE_STACK_CLUSTER_DIR=$(cat "$RUN/owner") scripts/cluster.sh down)"
  fi
  mkdir -p "$STATE" "$RUN"
  echo "$DIR" >"$RUN/owner"
  network
  mounts
  local cgroup
  for cgroup in /sys/fs/cgroup/*/; do
    [[ -e $cgroup/cgroup.procs ]] && mkdir -p "$cgroup${CGROUP_ROOT#/}"
  done
  certificate kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
  certificate kube-proxy "/CN=system:kube-proxy"
  certificate kube-router "/CN=system:kube-router"
  kubeconfig_for kubelet
  kubeconfig_for kube-proxy
  kubeconfig_for kube-router
  kube_router_rbac

  containerd_config
  # The shim is found on containerd's PATH by its name.
  mkdir -p "$STATE/bin"
  ln -sf "${BIN[containerd-shim-runc-v2]}" "$STATE/bin/containerd-shim-runc-v2"
  start containerd env PATH="$STATE/bin:$PATH" "${BIN[containerd]}" --config "$STATE/containerd/config.toml"
  wait_for "containerd" 60 ctr_ version
  images

  kubelet_config
  start kubelet "${BIN[kubelet]}" --config "$STATE/kubelet.yaml" --kubeconfig "$STATE/kubelet.kubeconfig" \
    --root-dir "$STATE/kubelet" --cert-dir "$STATE/kubelet/pki" --hostname-override "$NODE_NAME" \
    --node-ip "$NODE_IP" --node-labels "$LABEL=true"
  kube_proxy_config
  start kube-proxy "${BIN[kube-proxy]}" --config "$STATE/kube-proxy.yaml"
  wait_for "node $NODE_NAME Ready" 120 node_ready
  # Only the NetworkPolicy part: kube-proxy serves Services, the bridge plugin routes pods. It
  # finds its Node object at start, or exits.
  start kube-router "${BIN[kube-router]}" --kubeconfig "$STATE/kube-router.kubeconfig" --hostname-override "$NODE_NAME" \
    --run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
    --service-cluster-ip-range "$SERVICE_CIDR" --health-port 20244
  wait_for "kube-router" 60 in_node curl -fsS http://127.0.0.1:20244/healthz
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
  images) binaries; images ;;
  *) die "usage: scripts/real-node.sh up|down|status|images" ;;
esac
