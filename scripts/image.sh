#!/usr/bin/env bash
# The operator image, built without a Docker engine from the same Dockerfile Docker users build:
# buildah (Debian's) runs the Dockerfile with only its base image swapped by build-arg, the base being
# an OCI layout assembled here from Debian bookworm packages and the Node 22 binary npm installs.
#
#   scripts/image.sh deps    install buildah, skopeo, umoci, runc and debootstrap from Debian when missing
#                            (runc, umoci, iptables: the image test runs the image as an OCI bundle
#                            in a network namespace of its own)
#   scripts/image.sh debian  assemble Debian bookworm (debootstrap --variant=minbase, slimmed like
#                            debian:bookworm-slim) as a one-layer OCI layout, once; prints its reference
#                            (oci:<dir>:<tag>). The base and scripts/node-images.sh's Debian images build
#                            on it, so a node stores that layer once for all of them.
#   scripts/image.sh base    assemble the base (that Debian layer + a layer of Node and npm) as an OCI
#                            layout, once per version and Debian layer; prints its reference
#   scripts/image.sh build   build the Dockerfile on that base into an OCI layout; prints
#                            "image=oci:<dir>:<tag>" and its size
#   scripts/image.sh ref     print the operator image's reference (without building)
#   scripts/image.sh inputs  print the key of what the image is built from (see inputs_key)
#   scripts/image.sh prune   free buildah's storage (images and containers left by an interrupted
#                            build; `build` removes its own)
#
# Cached outside the repo, keyed by version: $CACHE/image/debian-<suite> (the Debian layer),
# $CACHE/image/base-<node>-<npm>-<suite> (the base; base-....from holds the Debian layer's manifest
# digest it was built on),
# $CACHE/image/website-operator (the operator image's layout, rebuilt by `build` when what it is
# built from has changed: $CACHE/image/website-operator.inputs holds the key it was built from),
# CACHE=~/.cache/website-stack.
# buildah uses its own vfs storage there and chroot isolation, so it needs neither a daemon, nor
# overlayfs, nor user namespaces. The build stage's `npm ci` needs the npm registry: the build uses
# the host network, the host's registry setting (npm config get registry), and the host's npm cache.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# The Node in the base is the devDependency `node` (its platform package holds the binary), so
# the image and the tests run the same Node. npm: the 10.x line Node 22 ships with.
NODE_VERSION=$(node -p "require(process.argv[1]).devDependencies.node" "$ROOT/package.json")
NPM_VERSION=10.9.9
SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
VERSION=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json")

CACHE_DIR="${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}"
DEBIAN_DIR=$CACHE_DIR/image/debian-$SUITE
DEBIAN_TAG=$SUITE-minbase
DEBIAN_REF=oci:$DEBIAN_DIR:$DEBIAN_TAG
BASE_DIR=$CACHE_DIR/image/base-node$NODE_VERSION-npm$NPM_VERSION-$SUITE
BASE_TAG=$NODE_VERSION-$SUITE-slim
BASE_REF=oci:$BASE_DIR:$BASE_TAG
IMAGE_DIR=$CACHE_DIR/image/website-operator
IMAGE_TAG=$VERSION
IMAGE_REF=oci:$IMAGE_DIR:$IMAGE_TAG
IMAGE_INPUTS=$IMAGE_DIR.inputs
# buildah's own storage (vfs: works on any filesystem, also inside a CI container).
STORAGE=(--root "$CACHE_DIR/containers/storage" --runroot "$CACHE_DIR/containers/run" --storage-driver vfs)
BUILDAH=(buildah "${STORAGE[@]}")
# The name the base has in that storage: buildah 1.28 cannot build FROM an oci: reference whose path
# is no valid image name (~/.cache has a dot), so `build` copies the layout there first (skopeo).
BASE_NAME=localhost/website-stack/node:$BASE_TAG
DEBIAN_NAME=localhost/website-stack/debian:$DEBIAN_TAG

log() { printf '[image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The image's tools from Debian (scripts/system-deps.txt, group image), when missing.
deps() { bash "$ROOT/scripts/system-deps.sh" image; }

# Root is needed for debootstrap, for chroot isolation and for unpacking files of other owners.
need_root() { [[ $(id -u) -eq 0 ]] || die "'$1' needs root (debootstrap and buildah's chroot isolation); run it with sudo"; }

node_binary() {
  local arch
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) die "no Node package for $(uname -m)" ;;
  esac
  local bin=$ROOT/node_modules/node/node_modules/node-linux-$arch/bin/node
  [[ -x $bin ]] || bash "$ROOT/scripts/install.sh"
  [[ -x $bin ]] || die "no Node binary at $bin (the devDependency node's platform package)"
  [[ "$("$bin" --version)" == "v$NODE_VERSION" ]] || die "$bin is not Node $NODE_VERSION"
  echo "$bin"
}

# Debian alone, one layer: what debian:bookworm-slim holds, from the Debian mirror.
debian() {
  # The operator image's build and scripts/node-images.sh's may both ask for it (scripts/test.sh
  # runs them side by side): one assembles it, the other waits and takes it.
  mkdir -p "$CACHE_DIR/image"
  exec 8>"$CACHE_DIR/image/.debian.lock"
  flock 8
  if [[ -f $DEBIAN_DIR/index.json ]]; then
    echo "$DEBIAN_REF"
    return
  fi
  deps
  need_root debian
  local work ctr mnt
  work=$(mktemp -d "$CACHE_DIR/image/debian.XXXXXX")
  trap 'rm -rf "$work"' RETURN
  log "debootstrap --variant=minbase $SUITE from $DEBIAN_MIRROR"
  nice debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    "$SUITE" "$work/rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  # What debian:bookworm-slim leaves out: package lists, caches, docs and man pages, logs.
  rm -rf "$work/rootfs"/var/lib/apt/lists/* "$work/rootfs"/var/cache/apt/*.bin "$work/rootfs"/var/cache/apt/archives/*.deb \
    "$work/rootfs"/var/log/* "$work/rootfs"/usr/share/doc/* "$work/rootfs"/usr/share/man/* "$work/rootfs"/usr/share/info/*
  printf 'deb %s %s main\n' "$DEBIAN_MIRROR" "$SUITE" >"$work/rootfs/etc/apt/sources.list"
  log "committing Debian $SUITE as an OCI layout"
  ctr=$("${BUILDAH[@]}" from --quiet scratch)
  mnt=$("${BUILDAH[@]}" mount "$ctr")
  cp -a "$work/rootfs/." "$mnt/"
  "${BUILDAH[@]}" umount "$ctr" >/dev/null
  "${BUILDAH[@]}" config --os linux --arch "$(dpkg --print-architecture)" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash \
    --label org.opencontainers.image.description="Debian $SUITE (minbase)" "$ctr"
  "${BUILDAH[@]}" commit --quiet --rm --format oci "$ctr" "oci:$work/layout:$DEBIAN_TAG" >/dev/null
  rm -rf "$DEBIAN_DIR"
  mv "$work/layout" "$DEBIAN_DIR"
  log "debian: $DEBIAN_REF ($(du -sh "$DEBIAN_DIR" | cut -f1))"
  echo "$DEBIAN_REF"
}

# Copies an OCI layout into buildah's storage under a name (buildah 1.28 cannot build FROM an oci:
# reference whose path is no valid image name), unless the name already holds that image: an
# image's ID there is its config's digest.
to_storage() {
  local ref=$1 name=$2 id
  id=$(skopeo inspect --raw --config "$ref" | sha256sum | cut -d' ' -f1)
  [[ "$("${BUILDAH[@]}" images --no-trunc --format '{{.ID}}' "$name" 2>/dev/null)" == "sha256:$id" ]] && return
  skopeo copy --quiet "$ref" "containers-storage:[vfs@$CACHE_DIR/containers/storage+$CACHE_DIR/containers/run]$name" >&2
}

# The Debian layout's manifest digest: the base is built again when the Debian layer changes.
debian_digest() { skopeo inspect --format '{{.Digest}}' "$DEBIAN_REF"; }

base() {
  if [[ -f $BASE_DIR/index.json && -f $DEBIAN_DIR/index.json && "$(cat "$BASE_DIR.from" 2>/dev/null)" == "$(debian_digest)" ]]; then
    echo "$BASE_REF"
    return
  fi
  deps
  need_root base
  local node work ctr mnt debian_ref
  node=$(node_binary)
  debian_ref=$(debian)
  to_storage "$debian_ref" "$DEBIAN_NAME"
  work=$(mktemp -d "$CACHE_DIR/image/base.XXXXXX")
  trap 'rm -rf "$work"' RETURN
  ctr=$("${BUILDAH[@]}" from --quiet --pull-never "$DEBIAN_NAME")
  mnt=$("${BUILDAH[@]}" mount "$ctr")
  # Node and npm where the official node image puts them.
  log "Node $NODE_VERSION from $node; npm $NPM_VERSION from the npm registry"
  install -m 0755 "$node" "$mnt/usr/local/bin/node"
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  mkdir -p "$mnt/usr/local/lib/node_modules/npm"
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$mnt/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  chroot "$mnt" /usr/local/bin/node --version >/dev/null || die "Node does not start in the base"
  chroot "$mnt" /usr/local/bin/npm --version >/dev/null || die "npm does not start in the base"
  "${BUILDAH[@]}" umount "$ctr" >/dev/null

  log "committing the base as an OCI layout"
  "${BUILDAH[@]}" config --env NODE_VERSION="$NODE_VERSION" --cmd node \
    --label org.opencontainers.image.description="Debian $SUITE (minbase) with Node $NODE_VERSION and npm $NPM_VERSION" "$ctr"
  "${BUILDAH[@]}" commit --quiet --rm --format oci "$ctr" "oci:$work/layout:$BASE_TAG" >/dev/null
  rm -rf "$BASE_DIR" "$BASE_DIR.from"
  mv "$work/layout" "$BASE_DIR"
  debian_digest >"$BASE_DIR.from"
  log "base: $BASE_REF ($(du -sh "$BASE_DIR" | cut -f1) compressed)"
  echo "$BASE_REF"
}

# Bytes of the layers (compressed, as stored and pushed) and of the manifest's config, from the layout.
layout_size() {
  node -e '
    const fs = require("fs"), dir = process.argv[1], tag = process.argv[2];
    const blob = (d) => JSON.parse(fs.readFileSync(`${dir}/blobs/${d.replace(":", "/")}`, "utf8"));
    const index = JSON.parse(fs.readFileSync(`${dir}/index.json`, "utf8"));
    const m = index.manifests.find((x) => x.annotations?.["org.opencontainers.image.ref.name"] === tag);
    const manifest = blob(m.digest);
    const compressed = manifest.layers.reduce((s, l) => s + l.size, 0) + manifest.config.size;
    console.log(`${compressed} ${manifest.layers.length}`);
  ' "$1" "$2"
}

# What the image is built from, as one SHA-256: this script, the Dockerfile, every file its COPY
# lines take from the build context, the base (its layout's index) and the tag. A layout built from
# the same inputs is the image a build would make: buildah's layer cache would say so too, but its
# vfs storage copies whole trees for every cached step and the commit (over a minute; several
# under load).
inputs_key() {
  local line word
  local -a words sources=()
  while read -r line; do
    read -ra words <<<"$line"
    # COPY [--flags] <source>... <destination>; a COPY --from=<stage> takes nothing from the context.
    [[ " ${words[*]} " == *" --from="* ]] && continue
    for word in "${words[@]:1:${#words[@]}-2}"; do
      [[ $word == --* ]] || sources+=("$word")
    done
  done < <(grep -E '^COPY[[:space:]]' "$ROOT/Dockerfile")
  {
    echo "tag $IMAGE_TAG base $BASE_REF"
    cat "$BASE_DIR/index.json" 2>/dev/null || echo "base not built"
    (cd "$ROOT" && sha256sum scripts/image.sh Dockerfile \
      && find "${sources[@]}" -type f -not -path '*/node_modules/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -d' ' -f1
}

build() {
  deps
  need_root build
  local base_ref key
  base_ref=$(base)
  key=$(inputs_key)
  if [[ -f $IMAGE_DIR/index.json && "$(cat "$IMAGE_INPUTS" 2>/dev/null)" == "$key" ]]; then
    log "up to date: $IMAGE_REF was built from the same Dockerfile, sources and base (inputs $key)"
    print_image
    return
  fi
  to_storage "$base_ref" "$BASE_NAME"
  # No layer cache: vfs storage keeps a full copy of the tree per cached step (tens of GB over a few
  # dozen builds); the inputs key above already skips an unchanged build.
  local -a args=(--isolation chroot --network host --pull-never
    --build-arg "NODE_IMAGE=$BASE_NAME" -t "localhost/website-operator:$IMAGE_TAG" -f "$ROOT/Dockerfile")
  # The build stage's npm uses the host's npm settings for reaching the registry (its registry and
  # the CA file it trusts, e.g. behind a TLS-intercepting proxy), and the host's npm cache (a cache
  # only: npm ci still installs exactly the lockfile).
  local registry cafile npmrc=$CACHE_DIR/image/build.npmrc
  registry=$(npm config get registry 2>/dev/null || true)
  # npm's cafile, wherever it is set (npm run puts it in npm_config_cafile; a global npmrc may set it
  # for the system npm only), else Node's NODE_EXTRA_CA_CERTS.
  cafile=${npm_config_cafile:-$(npm config get cafile 2>/dev/null || true)}
  [[ -n $cafile && $cafile != null && $cafile != undefined ]] || cafile=${NODE_EXTRA_CA_CERTS:-}
  : >"$npmrc"
  [[ -z $registry || $registry == https://registry.npmjs.org/ ]] || printf 'registry=%s\n' "$registry" >>"$npmrc"
  if [[ -n $cafile && -f $cafile ]]; then
    printf 'cafile=/etc/ssl/certs/host-npm-ca.crt\n' >>"$npmrc"
    args+=(--volume "$cafile:/etc/ssl/certs/host-npm-ca.crt:ro")
  fi
  [[ ! -s $npmrc ]] || args+=(--volume "$npmrc:/root/.npmrc:ro")
  mkdir -p "$HOME/.npm/_cacache"
  args+=(--volume "$HOME/.npm/_cacache:/root/.npm/_cacache")
  log "buildah build ${args[*]} $ROOT"
  local start=$SECONDS
  nice "${BUILDAH[@]}" build "${args[@]}" "$ROOT" >&2
  rm -rf "$IMAGE_DIR.tmp" "$IMAGE_INPUTS"
  "${BUILDAH[@]}" push --quiet --format oci "localhost/website-operator:$IMAGE_TAG" "oci:$IMAGE_DIR.tmp:$IMAGE_TAG" >&2
  rm -rf "$IMAGE_DIR"
  mv "$IMAGE_DIR.tmp" "$IMAGE_DIR"
  echo "$key" >"$IMAGE_INPUTS"
  # The layout is the result; buildah's copy of it (and of any stage) would only fill the disk.
  "${BUILDAH[@]}" rmi "localhost/website-operator:$IMAGE_TAG" >/dev/null
  log "built in $((SECONDS - start)) s"
  print_image
}

# The image's reference and size, as `build` prints them.
print_image() {
  local size layers
  read -r size layers < <(layout_size "$IMAGE_DIR" "$IMAGE_TAG")
  echo "image=$IMAGE_REF"
  echo "size=$size bytes compressed ($((size / 1024 / 1024)) MiB, $layers layers)"
}

case "${1:-}" in
  deps) deps ;;
  debian) debian ;;
  base) base ;;
  build) build ;;
  ref) echo "$IMAGE_REF" ;;
  inputs) inputs_key ;;
  prune) "${BUILDAH[@]}" rm --all >/dev/null; "${BUILDAH[@]}" rmi --prune >/dev/null; du -sh "$CACHE_DIR/containers" >&2 ;;
  *) die "usage: scripts/image.sh deps|debian|base|build|ref|inputs|prune" ;;
esac
