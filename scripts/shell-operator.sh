#!/usr/bin/env bash
# Runs the shell operator's script on this machine against the cluster of $KUBECONFIG, the way its
# pod runs it: the script and template come from the cluster's ConfigMap, and it authenticates as
# the operator's ServiceAccount (a TokenRequest token), so exactly its Role applies.
#
#   bash scripts/shell-operator.sh                          reconcile website-system until Ctrl-C
#   NAMESPACE=team ONCE=1 bash scripts/shell-operator.sh    one cycle in namespace team
#
# Needs dist/website-shell-operator/website-shell-operator.yaml (or the ShellOperator construct's output) applied in that
# namespace, and jq. INTERVAL, ONCE, FIELD_MANAGER and HEARTBEAT are passed to the script (see its header).
# KUBECTL chooses kubectl (default: kubectl on PATH, else the local cluster's .cluster/bin/kubectl).
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAMESPACE=${NAMESPACE:-website-system}
NAME=website-shell-operator

die() { printf '[shell-operator] error: %s\n' "$*" >&2; exit 1; }

if [[ -z ${KUBECTL:-} ]]; then
  KUBECTL=$(command -v kubectl || echo "$ROOT/.cluster/bin/kubectl")
fi
[[ -x $KUBECTL ]] || die "kubectl not found: put it on PATH, set KUBECTL, or start the local cluster (npm run cluster:up)"
command -v jq >/dev/null || die "jq is not installed (Debian: apt-get install jq)"
if [[ -z ${KUBECONFIG:-} && -f $ROOT/.cluster/kubeconfig ]]; then
  export KUBECONFIG=$ROOT/.cluster/kubeconfig
fi
kube() { "$KUBECTL" "$@"; }

dir=$(mktemp -d)
chmod 700 "$dir"
pid=
cleanup() { rm -rf "$dir"; }
trap cleanup EXIT

# The ConfigMap the pod mounts: the script and the children template.
kube get configmap "$NAME" --namespace "$NAMESPACE" --output json >"$dir/configmap.json" \
  || die "no ConfigMap $NAME in namespace $NAMESPACE: apply dist/website-shell-operator/website-shell-operator.yaml first (or set NAMESPACE)"
jq -r '.data["website-shell-operator.sh"]' "$dir/configmap.json" >"$dir/website-shell-operator.sh"
jq -r '.data["children-template.json"]' "$dir/configmap.json" >"$dir/children-template.json"

# A kubeconfig with only the server, its CA and the ServiceAccount's token: a client certificate
# next to the token would authenticate the certificate's user instead.
token=$(kube create token "$NAME" --namespace "$NAMESPACE" --duration=24h) \
  || die "cannot create a token for ServiceAccount $NAMESPACE/$NAME"
kube config view --raw --minify --flatten --output json \
  | jq --arg token "$token" '{
      apiVersion: "v1", kind: "Config", "current-context": "shell-operator",
      clusters: [{name: "cluster", cluster: .clusters[0].cluster}],
      users: [{name: "shell-operator", user: {token: $token}}],
      contexts: [{name: "shell-operator", context: {cluster: "cluster", user: "shell-operator"}}]
    }' >"$dir/kubeconfig"

# In the background with TERM and INT passed on, so the operator stops cleanly and the token goes.
KUBECONFIG=$dir/kubeconfig NAMESPACE=$NAMESPACE TEMPLATE=$dir/children-template.json KUBECTL=$KUBECTL \
  bash "$dir/website-shell-operator.sh" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
status=0
wait "$pid" || status=$?
# A trapped signal ends `wait` early: wait again for the operator to finish stopping.
if kill -0 "$pid" 2>/dev/null; then
  status=0
  wait "$pid" || status=$?
fi
exit "$status"
