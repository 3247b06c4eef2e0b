#!/usr/bin/env bash
# website-shell-operator: the shell-style Website operator (spec §4, operator rule 1).
#
# Forever: list every Website in $NAMESPACE, server-side apply its Deployment and Service (and, when
# the template has a route, its HTTPRoute on the platform's Gateway), sleep
# $INTERVAL seconds. Each cycle applies the whole desired state, so a restart, a missed change or a
# failed cycle is repaired by the next one. Deletion is the garbage collector's job: every child
# carries a controller owner reference to its Website.
#
# The children are the WebsiteWorkload construct's own output, rendered at synth time for a
# placeholder Website into $TEMPLATE; jq fills in what depends on each Website (names, labels,
# owner, replicas, page). Website fields reach jq only as JSON input and kubectl only on stdin:
# never as shell or jq code, so a title such as $(touch /tmp/pwned) is text on the page.
#
# Environment (the Deployment sets these; run locally, KUBECONFIG chooses the cluster):
#   NAMESPACE      namespace whose Websites are reconciled (required)
#   TEMPLATE       the children template JSON the ShellOperator construct writes (required)
#   INTERVAL       seconds to sleep between cycles (default 10, spec §8)
#   FIELD_MANAGER  server-side apply field manager (default website-shell-operator)
#   KUBECTL        kubectl to run (default kubectl)
#   ONCE           1: one cycle, then exit non-zero if any Website failed (default: loop forever)
#   HEARTBEAT      a file the loop writes the time (epoch seconds) into as each cycle starts and
#                  after each Website: the pod's liveness probe checks its age (default: none)
#
# Logs go to stderr, one line each: startup, one summary per cycle, one line per failure.

# No `set -e`: a failed command is logged and the loop goes on; it must never end the operator.
set -uo pipefail

log() { printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
die() { log "error: $*"; exit 2; }

: "${NAMESPACE:?set NAMESPACE to the namespace whose Websites this operator reconciles}"
: "${TEMPLATE:?set TEMPLATE to the children template JSON written by the ShellOperator construct}"
INTERVAL=${INTERVAL:-10}
FIELD_MANAGER=${FIELD_MANAGER:-website-shell-operator}
KUBECTL=${KUBECTL:-kubectl}
ONCE=${ONCE:-}
HEARTBEAT=${HEARTBEAT:-}

[[ $INTERVAL =~ ^[0-9]+$ && $INTERVAL -ge 1 ]] || die "INTERVAL must be a whole number of seconds >= 1, got '$INTERVAL'"
command -v jq >/dev/null || die "jq is not installed: the operator renders every object with it"
command -v "$KUBECTL" >/dev/null || die "kubectl not found (KUBECTL=$KUBECTL)"
GROUP=$(jq -er '.group' "$TEMPLATE") || die "cannot read the API group from TEMPLATE=$TEMPLATE"

# Proof of progress for the liveness probe: a builtin write, no fork. A failed cycle beats too:
# the loop is alive, and a restart would not bring back the API server.
beat() { [[ -z $HEARTBEAT ]] || printf '%s\n' "$EPOCHSECONDS" >"$HEARTBEAT"; }
beat || die "cannot write the heartbeat file HEARTBEAT=$HEARTBEAT"

work=$(mktemp -d) || die "cannot create a temporary directory (is /tmp writable?)"
# kubectl caches API discovery here, so a cycle does not repeat it for every Website.
export KUBECACHEDIR=${KUBECACHEDIR:-$work/kube-cache}
# In a pod, the in-cluster settings as a kubeconfig: kubectl uses them on its own only while no flag
# changes the client's settings, and --request-timeout does (client-go's DeferredLoadingClientConfig
# then takes the flags alone for a whole configuration and dials localhost:8080). The token stays a
# file, which client-go reads again as the kubelet renews it.
SERVICE_ACCOUNT=/var/run/secrets/kubernetes.io/serviceaccount
if [[ -z ${KUBECONFIG:-} && -n ${KUBERNETES_SERVICE_HOST:-} && -r $SERVICE_ACCOUNT/token ]]; then
  host=$KUBERNETES_SERVICE_HOST
  [[ $host != *:* ]] || host="[$host]"
  export KUBECONFIG=$work/kubeconfig
  cat >"$KUBECONFIG" <<KUBECONFIG || die "cannot write $KUBECONFIG"
apiVersion: v1
kind: Config
clusters: [{name: in-cluster, cluster: {server: "https://$host:${KUBERNETES_SERVICE_PORT:-443}", certificate-authority: $SERVICE_ACCOUNT/ca.crt}}]
users: [{name: service-account, user: {tokenFile: $SERVICE_ACCOUNT/token}}]
contexts: [{name: in-cluster, context: {cluster: in-cluster, user: service-account, namespace: "$NAMESPACE"}}]
current-context: in-cluster
KUBECONFIG
fi
sleeper=
stop() {
  log "stopping on signal"
  [[ -n $sleeper ]] && kill "$sleeper" 2>/dev/null
  exit 0
}
trap stop TERM INT
trap 'rm -rf "$work"' EXIT

# Every API call has a deadline, so the loop cannot hang on a lost connection.
kube() { "$KUBECTL" --request-timeout=30s "$@"; }

# Input: the WebsiteList. $template[0]: the construct's children and page template. Output, one
# line per Website, tab-separated (names are DNS labels; compact JSON has no raw tab or newline):
#   <name> apply <a List of the Deployment and Service (and HTTPRoute), as JSON>
#   <name> invalid <why it was skipped, as a JSON string>
read -r -d '' RENDER <<'JQ'
# escapeHtml in page.ts; & first, so no entity is escaped twice.
def escape_html:
  split("&") | join("&amp;") | split("<") | join("&lt;") | split(">") | join("&gt;")
  | split("\"") | join("&quot;") | split("'") | join("&#39;");

# COLOR_PATTERN: #RGB or #RRGGBB. \A and \z, because jq's $ also matches before a final newline.
def is_hex_color: type == "string" and test("\\A#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\\z");

# textColorOn in page.ts: WCAG relative luminance from the channels' precomputed linear values,
# then whichever of white and black contrasts more.
def text_color_on($linear):
  ascii_downcase | ltrimstr("#")
  | if length == 3 then split("") | map(. + .) | join("") else . end
  | [range(0; 6; 2) as $i | .[$i:$i + 2] | explode | map(if . >= 97 then . - 87 else . - 48 end)
     | $linear[.[0] * 16 + .[1]]]
  | (0.2126 * .[0] + 0.7152 * .[1] + 0.0722 * .[2]) as $l
  | if 1.05 / ($l + 0.05) >= ($l + 0.05) / 0.05 then "#ffffff" else "#000000" end;

# renderPage in page.ts: the construct's page, split at its holes (odd positions name a field).
def render_page($t; $title; $color):
  { text: ($title | escape_html), background: $color, foreground: ($color | text_color_on($t.linearChannel)) } as $fields
  | [$t.page | to_entries[] | if .key % 2 == 0 then .value else $fields[.value] end] | join("");

# What every child of Website $w carries: its name, namespace, instance label and owner.
def owned_by($w; $t):
  .metadata.name = $t.namePrefix + $w.metadata.name
  | .metadata.namespace = $w.metadata.namespace
  | .metadata.labels["app.kubernetes.io/instance"] = $w.metadata.name
  | .metadata.ownerReferences[0].name = $w.metadata.name
  | .metadata.ownerReferences[0].uid = $w.metadata.uid;

def deployment($w; $t; $page):
  $t.deployment | owned_by($w; $t)
  | .spec.replicas = $w.spec.replicas
  | .spec.selector.matchLabels["app.kubernetes.io/instance"] = $w.metadata.name
  | .spec.template.metadata.labels["app.kubernetes.io/instance"] = $w.metadata.name
  | (.spec.template.spec.containers[].env[] | select(.name == "WEBSITE_HTML") | .value) = $page;

def service($w; $t):
  $t.service | owned_by($w; $t)
  | .spec.selector["app.kubernetes.io/instance"] = $w.metadata.name;

# websiteHost and websiteHostProblem in website-route.ts: spec.host under an allowed suffix, or
# <name>-<namespace>.<domain> when that is a host name (no part between dots past 63 characters).
def host($w; $r):
  if $w.spec.host == null then
    "\($w.metadata.name)-\($w.metadata.namespace).\($r.domain)" as $default
    | if any($default | split(".")[]; length > 63)
      then error("the default host \($default) is not a host name (a part between dots is longer than 63 characters): set spec.host to a host under \($r.hostSuffixes | join(" or ")), or give the Website a shorter name")
      else $default
      end
  elif ($w.spec.host | type) == "string" and any($r.hostSuffixes[]; . as $s | $w.spec.host == $s or ($w.spec.host | endswith("." + $s)))
  then $w.spec.host
  else error("spec.host \($w.spec.host | tojson) is not allowed: it must be under \($r.hostSuffixes | join(" or ")) (the hosts this operator allows), or removed for the default host")
  end;

def http_route($w; $t):
  $t.route.httpRoute | owned_by($w; $t)
  | .spec.hostnames = [host($w; $t.route)]
  | .spec.rules[0].backendRefs[0].name = $t.namePrefix + $w.metadata.name;

$template[0] as $t
| .items[]
# Being deleted: its children are the garbage collector's now; applying them would resurrect them.
| select(.metadata.deletionTimestamp == null)
| . as $w
| try (
    (.spec.color // $t.defaultColor) as $color
    | if (.spec.title | type) != "string" then error("spec.title must be a string") else . end
    | if ($color | is_hex_color | not) then error("spec.color must be a CSS hex colour such as #2196F3, got \($color | tojson)") else . end
    | render_page($t; .spec.title; $color) as $page
    | {apiVersion: "v1", kind: "List",
       items: ([deployment($w; $t; $page), service($w; $t)] + if $t.route == null then [] else [http_route($w; $t)] end)}
    | "\($w.metadata.name)\tapply\t\(tojson)"
  ) catch "\($w.metadata.name)\tinvalid\t\(tojson)"
JQ

# Flattens kubectl's multi-line messages into one log line.
oneline() { local text; text=$(cat); printf '%s' "${text//$'\n'/ }"; }

# One cycle. Returns 0 when every Website's children were applied; the loop goes on either way.
reconcile_all() {
  local started=${EPOCHREALTIME//[!0-9]/} total=0 failed=0 name kind payload out
  beat
  if ! kube get "websites.v1.$GROUP" --namespace "$NAMESPACE" --output json >"$work/websites.json" 2>"$work/error"; then
    log "cannot list Websites in namespace $NAMESPACE, retrying in ${INTERVAL}s: $(oneline <"$work/error")"
    return 1
  fi
  if ! jq -r --slurpfile template "$TEMPLATE" "$RENDER" <"$work/websites.json" >"$work/children" 2>"$work/error"; then
    log "cannot render children from the Website list, retrying in ${INTERVAL}s: $(oneline <"$work/error")"
    return 1
  fi
  while IFS=$'\t' read -r name kind payload; do
    beat
    total=$((total + 1))
    if [[ $kind != apply ]]; then
      log "website $name: skipped: $payload"
      failed=$((failed + 1))
      continue
    fi
    # --validate=false: the objects are the construct's (tested under strict validation); strict
    # would make kubectl download the whole OpenAPI document on every call to check for support.
    if ! out=$(kube apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" --validate=false \
      --filename=- <<<"$payload" 2>&1 >/dev/null); then
      log "website $name: apply failed: $(oneline <<<"$out")"
      failed=$((failed + 1))
    fi
  done <"$work/children"
  local ms=$(((${EPOCHREALTIME//[!0-9]/} - started) / 1000))
  log "cycle done: $total Websites, $((total - failed)) applied, $failed failed, ${ms} ms"
  ((failed == 0))
}

log "reconciling Websites ($GROUP) in namespace $NAMESPACE every ${INTERVAL}s as field manager $FIELD_MANAGER"
while true; do
  reconcile_all
  status=$?
  [[ $ONCE == 1 ]] && exit "$status"
  # Sleep in the background: bash runs the TERM trap as soon as `wait` is interrupted, whereas a
  # foreground sleep would hold the signal until it ends.
  sleep "$INTERVAL" &
  sleeper=$!
  wait "$sleeper"
  sleeper=
done
