#!/usr/bin/env bash
# Builds the pinned Kubernetes, etcd and kwok binaries from their Go modules, once,
# and caches them outside the repo keyed by version (DESIGN.md §4).
#
#   scripts/binaries.sh [name ...]   build (if missing) and print "name=path" lines
#
# Names: kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl.
# No name means all of them. Existing binaries are reused from KUBEBUILDER_ASSETS or
# TEST_ASSET_KUBE_APISERVER / TEST_ASSET_ETCD / TEST_ASSET_KUBECTL (envtest's convention).
# Builds keep the caller's GOFLAGS; on a shared machine, `GOFLAGS=-p=1 nice -n 19 scripts/binaries.sh`.
set -euo pipefail
# Command substitutions stop on errors too (bash does not inherit set -e into them otherwise).
shopt -s inherit_errexit

KUBERNETES_VERSION=v1.36.4
ETCD_VERSION=v3.6.14
KWOK_VERSION=v0.8.0

CACHE_DIR="${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}"
BIN_DIR="$CACHE_DIR/bin"
ALL=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl)
STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
  kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming)

log() { printf '[binaries] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

version_of() {
  case "$1" in
    kube-*|kubectl) echo "$KUBERNETES_VERSION" ;;
    etcd) echo "$ETCD_VERSION" ;;
    kwok|kwokctl) echo "$KWOK_VERSION" ;;
    *) die "unknown binary '$1' (known: ${ALL[*]})" ;;
  esac
}

# A binary the user already has, following envtest's variables.
preset_of() {
  local name=$1 var=""
  case "$name" in
    kube-apiserver) var=${TEST_ASSET_KUBE_APISERVER:-} ;;
    etcd) var=${TEST_ASSET_ETCD:-} ;;
    kubectl) var=${TEST_ASSET_KUBECTL:-} ;;
  esac
  if [[ -z "$var" && -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/$name" ]]; then
    var="$KUBEBUILDER_ASSETS/$name"
  fi
  [[ -n "$var" ]] && { [[ -x "$var" ]] || die "$name from the environment is not an executable file: $var"; echo "$var"; }
  return 0
}

require_go() {
  command -v go >/dev/null 2>&1 || die "Go is not installed. Install Go >= 1.25 (https://go.dev/doc/install) or point KUBEBUILDER_ASSETS / TEST_ASSET_* at existing binaries."
}

# One wrapper module per upstream project and version, inside the cache: `go build -mod=mod`
# resolves its graph (and writes go.sum) on the first build, GOMODCACHE/GOCACHE serve later ones.
#   wrapper_module NAME MODULE VERSION [REPLACE_LINE ...]
wrapper_module() {
  local name=$1 module=$2 version=$3 dir="$CACHE_DIR/src/$1-$3"
  shift 3
  if [[ ! -f "$dir/go.mod" ]]; then
    mkdir -p "$dir"
    {
      printf 'module website-stack.local/%s-build\n\ngo 1.25\n\nrequire %s %s\n' "$name" "$module" "$version"
      if [[ $# -gt 0 ]]; then
        printf '\nreplace (\n'
        printf '\t%s\n' "$@"
        printf ')\n'
      fi
    } >"$dir/go.mod"
  fi
  echo "$dir"
}

# k8s.io/kubernetes replaces its staging modules with local paths; point them at their releases.
kubernetes_module() {
  local minor=${KUBERNETES_VERSION#v1.} replaces=() m
  for m in "${STAGING[@]}"; do replaces+=("k8s.io/$m => k8s.io/$m v0.$minor"); done
  wrapper_module kubernetes k8s.io/kubernetes "$KUBERNETES_VERSION" "${replaces[@]}"
}

build() {
  local name=$1 version out tmp start
  version=$(version_of "$name")
  out="$BIN_DIR/$name-$version"
  [[ -x "$out" ]] && { echo "$out"; return; }
  require_go
  mkdir -p "$BIN_DIR"
  tmp="$out.tmp.$$"
  start=$SECONDS
  log "building $name $version (cold builds take minutes; cached at $out)"
  (
    # A heartbeat so a long, silent `go build` is visibly alive. Its sleep outlives the kill below,
    # so it must not hold the caller's stdout/stderr open (a `$(…)` would wait up to 30 s for it).
    while sleep 30 </dev/null >/dev/null 2>&1; do log "  … $name still building ($((SECONDS - start)) s)"; done
  ) &
  local beat=$! ok=0
  case "$name" in
    kube-*|kubectl)
      local dir minor; dir=$(kubernetes_module); minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
      local ld="-s -w"
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ld+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
      done
      (cd "$dir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" go build -trimpath -ldflags "$ld" -o "$tmp" "k8s.io/kubernetes/cmd/$name") || ok=$?
      ;;
    etcd)
      local dir; dir=$(wrapper_module etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION")
      (cd "$dir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" go build -trimpath -ldflags "-s -w" -o "$tmp" go.etcd.io/etcd/server/v3) || ok=$?
      ;;
    kwok|kwokctl)
      local gobin="$CACHE_DIR/src/kwok-$version"
      mkdir -p "$gobin"
      CGO_ENABLED=0 GOBIN="$gobin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/$name@$version" || ok=$?
      [[ $ok == 0 ]] && mv "$gobin/$name" "$tmp"
      ;;
  esac
  kill "$beat" 2>/dev/null || true
  if [[ $ok != 0 ]]; then
    rm -f "$tmp"
    die "building $name $version failed (exit $ok). Check network access to the Go module proxy (GOPROXY=$(go env GOPROXY)) and free memory (kube-apiserver wants ~4 GB), then rerun: scripts/binaries.sh $name"
  fi
  mv "$tmp" "$out"
  log "built $name in $((SECONDS - start)) s"
  echo "$out"
}

resolve() {
  local name=$1 preset
  preset=$(preset_of "$name")
  if [[ -n "$preset" ]]; then echo "$preset"; else build "$name"; fi
}

main() {
  local names=("$@")
  # One build at a time per cache: concurrent callers (tests, cluster:up) wait, then reuse the result.
  mkdir -p "$BIN_DIR"
  exec 9>"$BIN_DIR/.lock"
  flock 9
  [[ ${#names[@]} -eq 0 ]] && names=("${ALL[@]}")
  local n path
  for n in "${names[@]}"; do
    version_of "$n" >/dev/null
    # A plain assignment, so that a failure inside resolve stops the script (set -e).
    path=$(resolve "$n")
    echo "$n=$path"
  done
}

main "$@"
