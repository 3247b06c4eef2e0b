#!/usr/bin/env bash
# The container images a real node (kubelet and containerd) needs to run every pod in dist/, and the
# node's own pause and CoreDNS, built here without a Docker engine and without pulling anything: each
# tagged with the reference dist/ and the code name, each exported as a docker-archive tar that
# `ctr -n k8s.io images import <tar>` loads under that name (a short name such as
# jaegertracing/jaeger:2.13.0 is listed as docker.io/jaegertracing/jaeger:2.13.0, the name the CRI
# asks for).
#
#   scripts/node-images.sh build [name ...]   build what is missing or out of date (all images, or
#                                             those named); prints "<reference> <tar>" per image
#   scripts/node-images.sh list               print the references, building nothing
#   scripts/node-images.sh names              print the names (images/<name>.Containerfile)
#
# Each image is the Containerfile images/<name>.Containerfile, built by buildah as scripts/image.sh
# builds the operator image (buildah's own vfs storage, chroot isolation, the host network, no
# pulls): the Debian images FROM the Debian layer `scripts/image.sh debian` assembles, which the
# operator image's base starts with too, so a node stores that layer once. The static images are
# the upstream Dockerfiles on scratch, with the binaries scripts/binaries.sh builds from source and
# Debian's CA bundle, from an image of images/certs.Containerfile built once per Debian layer.
#
#   name              reference (as dist/ and the code name it)        built from
#   pause             registry.k8s.io/pause:3.10.2                     pause.c of the Kubernetes release (gcc -static)
#   coredns           registry.k8s.io/coredns/coredns:v1.15.0          binaries.sh coredns
#   jaeger            jaegertracing/jaeger:2.13.0                      binaries.sh jaeger
#   hotrod            jaegertracing/example-hotrod:1.76.0              binaries.sh hotrod
#   es-index-cleaner  jaegertracing/jaeger-es-index-cleaner:1.76.0     binaries.sh es-index-cleaner
#   otelcol-contrib   otel/opentelemetry-collector-contrib:0.159.0     binaries.sh otelcol
#   oauth2-proxy      quay.io/oauth2-proxy/oauth2-proxy:v7.15.6        binaries.sh oauth2-proxy
#   nginx             nginxinc/nginx-unprivileged:1.28.0-alpine        Debian's nginx (1.22)
#   shell-operator    alpine/k8s:1.36.2                                Debian's bash and jq, binaries.sh kubectl (v1.36.4)
#   website-operator  ghcr.io/website-stack/website-operator:0.1.0     scripts/image.sh build
# The versions of the binaries come from scripts/binaries.sh; the last three tags are the code's
# (lib/workload/website-workload.ts, lib/shell-operator/shell-operator.ts, package.json), whatever
# the image holds: a Debian nginx 1.22 answers to nginx-unprivileged:1.28.0-alpine.
#
# Cached outside the repo in $CACHE/node-images (CACHE=~/.cache/website-stack, as scripts/image.sh):
# <name>.tar and <name>.inputs, the key it was built from: a SHA-256 of the reference, this script,
# the Containerfile (and images/certs.Containerfile for a static image), every file of the build
# context by content and the Debian layer's index (for website-operator: the reference, this script
# and its layout's index). An image whose key is unchanged is not built again. bin/ holds what is
# compiled or copied here: pause and Jaeger's sampling strategies.
# Packages come from the Debian mirror at build time: delete a tar to build it again with today's.
set -euo pipefail
# Command substitutions stop on errors too (bash does not inherit set -e into them otherwise).
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF=scripts/node-images.sh

CACHE_DIR="${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}"
OUT_DIR=$CACHE_DIR/node-images
# The storage scripts/image.sh builds in, where the Debian layer already is.
STORAGE=(--root "$CACHE_DIR/containers/storage" --runroot "$CACHE_DIR/containers/run" --storage-driver vfs)
BUILDAH=(buildah "${STORAGE[@]}")
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

# The pinned releases, read as scripts/cluster.sh reads them.
eval "$(grep -E '^(KUBERNETES|JAEGER|JAEGER_MODULE|OTELCOL|COREDNS|OAUTH2_PROXY)_VERSION=' "$ROOT/scripts/binaries.sh")"
# The pause release of Kubernetes $KUBERNETES_VERSION (TAG in its build/pause/Makefile, checked when
# compiled), and the sandbox image containerd 2.4 asks for by default.
PAUSE_VERSION=3.10.2
VERSION=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json")

log() { printf '[node-images] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Root is needed for buildah's chroot isolation and for the files of other owners in the images.
need_root() { [[ $(id -u) -eq 0 ]] || die "'$1' needs root (buildah's chroot isolation, as scripts/image.sh build); run it with sudo"; }

# One line per image: its name (images/<name>.Containerfile) and its reference.
images() {
  cat <<EOF
pause registry.k8s.io/pause:$PAUSE_VERSION
coredns registry.k8s.io/coredns/coredns:$COREDNS_VERSION
jaeger jaegertracing/jaeger:${JAEGER_VERSION#v}
hotrod jaegertracing/example-hotrod:${JAEGER_MODULE_VERSION#v}
es-index-cleaner jaegertracing/jaeger-es-index-cleaner:${JAEGER_MODULE_VERSION#v}
otelcol-contrib otel/opentelemetry-collector-contrib:${OTELCOL_VERSION#v}
oauth2-proxy quay.io/oauth2-proxy/oauth2-proxy:$OAUTH2_PROXY_VERSION
nginx nginxinc/nginx-unprivileged:1.28.0-alpine
shell-operator alpine/k8s:1.36.2
website-operator ghcr.io/website-stack/website-operator:$VERSION
EOF
}

# What this script needs from Debian (scripts/system-deps.txt, group node-images): scripts/image.sh's
# tools, and gcc with a static libc for pause.
deps() { bash "$ROOT/scripts/system-deps.sh" node-images; }

require_go() {
  command -v go >/dev/null 2>&1 || die "Go is not installed: it fetches the Kubernetes source pause is built from and the Jaeger module the sampling strategies come from. Install Go >= 1.25 (https://go.dev/doc/install)"
}

# A module's directory in the Go module cache, downloaded when missing. From /, so that a go.mod or
# go.work around the caller's directory plays no part.
module_dir() { (cd / && go mod download "$1@$2" && go list -m -f '{{.Dir}}' "$1@$2"); }

# The pause binary: Kubernetes' build/pause, compiled as its Makefile does (static, -Os, stripped).
pause_binary() {
  local out=$OUT_DIR/bin/pause-$PAUSE_VERSION-k8s$KUBERNETES_VERSION dir tag
  [[ -x $out ]] && { echo "$out"; return; }
  require_go
  dir=$(module_dir k8s.io/kubernetes "$KUBERNETES_VERSION")
  tag=$(sed -n 's/^TAG ?= //p' "$dir/build/pause/Makefile")
  [[ $tag == "$PAUSE_VERSION" ]] \
    || die "Kubernetes $KUBERNETES_VERSION builds pause $tag, not $PAUSE_VERSION: set PAUSE_VERSION in $SELF (and the node's sandbox image)"
  log "compiling pause $PAUSE_VERSION from Kubernetes $KUBERNETES_VERSION"
  mkdir -p "$OUT_DIR/bin"
  nice gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION" -o "$out.tmp" "$dir/build/pause/linux/pause.c"
  strip "$out.tmp"
  mv "$out.tmp" "$out"
  echo "$out"
}

# The sampling strategies file Jaeger's image carries, from the Jaeger module scripts/binaries.sh
# builds jaeger from. Prints its path.
sampling_strategies() {
  local json=$OUT_DIR/bin/jaeger-sampling-strategies-$JAEGER_MODULE_VERSION.json dir
  if [[ ! -f $json ]]; then
    require_go
    dir=$(module_dir github.com/jaegertracing/jaeger "$JAEGER_MODULE_VERSION")
    mkdir -p "$OUT_DIR/bin"
    cp "$dir/cmd/jaeger/sampling-strategies.json" "$json.tmp"
    mv -f "$json.tmp" "$json"
  fi
  echo "$json"
}

# The path of binary $1, built by scripts/binaries.sh when missing: each image waits for its own
# binary only (on a cold machine CoreDNS's compiles last, while the others are long built).
binary() {
  local path
  path=$(bash "$ROOT/scripts/binaries.sh" "$1" | sed -n "s|^$1=||p")
  [[ -n $path ]] || die "scripts/binaries.sh $1 printed no path for $1"
  echo "$path"
}

# The build context of image $1, as "<file name> <source path>" lines: what its Containerfile COPYs.
# (Each path is assigned before it is printed, so that a failed build stops the script.)
context_of() {
  local name=$1 dir=$ROOT/images path
  case "$name" in
    pause)
      path=$(pause_binary)
      echo "pause $path"
      ;;
    coredns | hotrod | es-index-cleaner | oauth2-proxy)
      path=$(binary "$name")
      echo "$name $path"
      ;;
    jaeger)
      path=$(binary jaeger)
      echo "jaeger $path"
      path=$(sampling_strategies)
      echo "sampling-strategies.json $path"
      ;;
    otelcol-contrib)
      path=$(binary otelcol)
      echo "otelcol $path"
      echo "otelcol-contrib.yaml $dir/otelcol-contrib.yaml"
      ;;
    nginx) echo "nginx.conf $dir/nginx.conf" ;;
    shell-operator)
      path=$(binary kubectl)
      echo "kubectl $path"
      ;;
    *) die "no build context for image '$name'" ;;
  esac
}

# Whether images/$1.Containerfile declares the build argument $2 (e.g. CERTS_IMAGE: it builds on
# images/certs.Containerfile, as the static images do).
declares_arg() { grep -Eq "^ARG $2(=|\$)" "$ROOT/images/$1.Containerfile"; }

# The key of image $1 (reference $2) with context $3 ("<file name> <source path>" lines).
inputs_key() {
  local name=$1 ref=$2 context=$3 file source
  {
    echo "reference $ref"
    echo "debian $(cat "$DEBIAN_DIR/index.json")"
    (cd "$ROOT" && sha256sum "$SELF" "images/$name.Containerfile")
    ! declares_arg "$name" CERTS_IMAGE || (cd "$ROOT" && sha256sum images/certs.Containerfile)
    while read -r file source; do
      printf '%s %s\n' "$file" "$(sha256sum <"$source" | cut -d' ' -f1)"
    done <<<"$context"
  } | sha256sum | cut -d' ' -f1
}

# Copies an OCI layout into buildah's storage under a name unless it holds that image already (its
# ID there is its config's digest), as scripts/image.sh does with the operator's base.
to_storage() {
  local ref=$1 name=$2 id
  id=$(skopeo inspect --raw --config "$ref" | sha256sum | cut -d' ' -f1)
  [[ "$("${BUILDAH[@]}" images --no-trunc --format '{{.ID}}' "$name" 2>/dev/null)" == "sha256:$id" ]] && return
  skopeo copy --quiet "$ref" "containers-storage:[vfs@$CACHE_DIR/containers/storage+$CACHE_DIR/containers/run]$name" >&2
}

# Writes the docker-archive of OCI layout reference $1 as image $2's tar, tagged $3, and its key $4.
export_archive() {
  local src=$1 name=$2 ref=$3 key=$4 tar=$OUT_DIR/$2.tar
  rm -f "$tar.tmp" "$OUT_DIR/$name.inputs"
  skopeo copy --quiet "$src" "docker-archive:$tar.tmp:$ref" >&2
  mv "$tar.tmp" "$tar"
  echo "$key" >"$OUT_DIR/$name.inputs"
}

up_to_date() { [[ -f $OUT_DIR/$1.tar && "$(cat "$OUT_DIR/$1.inputs" 2>/dev/null)" == "$2" ]]; }

# The name of images/certs.Containerfile's image on the current Debian layer, built when buildah's
# storage lacks it (once per Debian layer and version of that file; older ones are removed). Its
# Debian packages are the mirror's of the day it is built, as every image's here.
certs_image() {
  local tag name old
  tag=$({ cat "$DEBIAN_DIR/index.json"; sha256sum <"$ROOT/images/certs.Containerfile"; } | sha256sum | cut -c1-16)
  name=localhost/node-images/certs:$tag
  if ! "${BUILDAH[@]}" inspect --type image "$name" >/dev/null 2>&1; then
    for old in $("${BUILDAH[@]}" images --format '{{.Name}}:{{.Tag}}' localhost/node-images/certs 2>/dev/null); do
      "${BUILDAH[@]}" rmi "$old" >/dev/null
    done
    log "building Debian's CA bundle for the static images (images/certs.Containerfile)"
    mkdir -p "$WORK/certs"
    nice "${BUILDAH[@]}" build --isolation chroot --network host --pull-never -t "$name" \
      -f "$ROOT/images/certs.Containerfile" --build-arg "DEBIAN_IMAGE=$DEBIAN_NAME" "$WORK/certs" >"$WORK/certs.log" 2>&1 \
      || { tail -30 "$WORK/certs.log" >&2; die "building images/certs.Containerfile failed (buildah's output above)"; }
  fi
  echo "$name"
}

# Builds image $1 (reference $2) from images/$1.Containerfile with the context $3, keyed $4.
build_image() {
  local name=$1 ref=$2 context=$3 key=$4 containerfile=$ROOT/images/$1.Containerfile
  local ctx=$WORK/$name file source start=$SECONDS
  mkdir -p "$ctx"
  while read -r file source; do
    cp "$source" "$ctx/$file"
  done <<<"$context"
  # No layer cache (vfs copies the whole tree per cached step); the inputs key skips unchanged images.
  local -a args=(--isolation chroot --network host --pull-never -t "localhost/node-images/$name" -f "$containerfile")
  ! declares_arg "$name" DEBIAN_IMAGE || args+=(--build-arg "DEBIAN_IMAGE=$DEBIAN_NAME")
  ! declares_arg "$name" DEBIAN_SECURITY_MIRROR || args+=(--build-arg "DEBIAN_SECURITY_MIRROR=$DEBIAN_SECURITY_MIRROR")
  ! declares_arg "$name" CERTS_IMAGE || args+=(--build-arg "CERTS_IMAGE=$(certs_image)")
  log "building $ref (images/$name.Containerfile)"
  nice "${BUILDAH[@]}" build "${args[@]}" "$ctx" >"$ctx.log" 2>&1 \
    || { tail -30 "$ctx.log" >&2; die "building $ref failed (images/$name.Containerfile; buildah's output above)"; }
  "${BUILDAH[@]}" push --quiet "localhost/node-images/$name" "oci:$ctx.layout:$name" >&2
  export_archive "oci:$ctx.layout:$name" "$name" "$ref" "$key"
  "${BUILDAH[@]}" rmi "localhost/node-images/$name" >/dev/null
  rm -rf "$ctx" "$ctx.layout" "$ctx.log"
  log "built $ref in $((SECONDS - start)) s ($(du -h "$OUT_DIR/$name.tar" | cut -f1))"
}

# The operator image: scripts/image.sh builds it (or finds it up to date); exported under its reference.
operator_image() {
  local name=$1 ref=$2 layout key
  layout=$(bash "$ROOT/scripts/image.sh" build | sed -n 's/^image=//p')
  [[ -n $layout ]] || die "scripts/image.sh build printed no image= line"
  local dir=${layout#oci:}
  dir=${dir%:*}
  key=$({ echo "reference $ref"; (cd "$ROOT" && sha256sum "$SELF"); cat "$dir/index.json"; } | sha256sum | cut -d' ' -f1)
  if up_to_date "$name" "$key"; then
    log "up to date: $ref"
    return
  fi
  export_archive "$layout" "$name" "$ref" "$key"
  log "exported $ref ($(du -h "$OUT_DIR/$name.tar" | cut -f1))"
}

build() {
  local -a wanted=("$@")
  local name ref known
  known=$(images | cut -d' ' -f1)
  for name in "${wanted[@]}"; do
    grep -qx -- "$name" <<<"$known" || die "no image named '$name' (images: ${known//$'\n'/ })"
  done
  need_root build
  deps
  mkdir -p "$OUT_DIR"
  # One build at a time per cache (a test lane and the node's setup may both ask).
  exec 9>"$OUT_DIR/.lock"
  flock 9
  WORK=$(mktemp -d "$OUT_DIR/work.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT

  local debian_ref
  debian_ref=$(bash "$ROOT/scripts/image.sh" debian)
  DEBIAN_DIR=${debian_ref#oci:}
  DEBIAN_DIR=${DEBIAN_DIR%:*}
  DEBIAN_NAME=localhost/website-stack/debian:${debian_ref##*:}

  local start=$SECONDS context key
  while read -r name ref; do
    [[ ${#wanted[@]} -eq 0 || " ${wanted[*]} " == *" $name "* ]] || continue
    if [[ $name == website-operator ]]; then
      operator_image "$name" "$ref"
    else
      context=$(context_of "$name")
      key=$(inputs_key "$name" "$ref" "$context")
      if up_to_date "$name" "$key"; then
        log "up to date: $ref"
      else
        to_storage "$debian_ref" "$DEBIAN_NAME"
        build_image "$name" "$ref" "$context" "$key"
      fi
    fi
    echo "$ref $OUT_DIR/$name.tar"
  done < <(images)
  log "done in $((SECONDS - start)) s; load one with: ctr -n k8s.io images import <tar>"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  list) images | cut -d' ' -f2 ;;
  names) images | cut -d' ' -f1 ;;
  *) die "usage: $SELF build [name ...] | list | names" ;;
esac
