#!/usr/bin/env bash
# Makes the Python, Java and Go packages of a compiled jsii package (a folder with package.json
# and the .jsii assembly that `jsii` wrote) with jsii-pacmak, and makes the jsii libraries it
# builds on usable from Java and Go where the registries lack them: Maven Central, as our machines
# reach it, serves org.cdk8s:cdk8s only up to 2.70.47 and no cdk8s-plus-34 at all, and the Go
# module proxy refuses cdk8s-team's Go modules (403). So those are generated here too, by the
# same jsii-pacmak, from the .jsii assemblies that their npm packages ship (the versions the
# package was compiled against), once per version, and cached outside the repo. constructs is
# not generated: Maven Central (software.constructs:constructs) and the Go module proxy
# (github.com/aws/constructs-go/constructs/v10) serve the versions npm has. Python needs nothing
# generated: PyPI has cdk8s, cdk8s-plus-34 and constructs at npm's versions.
#
#   scripts/jsii-packages.sh <jsii-package-dir> <out-dir> [python|java|go ...]   (default: all)
#
# Writes, for each language asked for (its folder emptied first):
#   <out-dir>/python/   the wheel (and sdist); it depends on cdk8s, cdk8s-plus-34, constructs and
#                       jsii from PyPI.
#   <out-dir>/java/     a Maven repository folder: our artifact (jar, sources, javadoc, pom) and
#                       the generated cdk8s and cdk8s-plus-34; constructs and jsii-runtime come
#                       from Maven Central. Plus settings.xml, which adds this folder as a
#                       repository: `mvn -s <out-dir>/java/settings.xml ...`, or add
#                       <repository><url>file://<out-dir>/java</url></repository> to the pom.
#   <out-dir>/go/<pkg>/ our Go module's source. Its module path is not published, and the cdk8s
#                       ones it needs cannot be downloaded: a Go app adds the printed GO_REPLACE
#                       lines (`go mod edit -replace=<module>=<path>`, then `go mod tidy`).
# and prints, on stdout, lines an app's build takes:
#   PYTHON_WHEEL=<path>
#   JAVA_REPO=<path>  JAVA_SETTINGS=<path>  JAVA_ARTIFACT=<groupId>:<artifactId>:<version>
#   JAVA_DEPS_REPO=<cached Maven repository folder of the generated cdk8s artifacts>
#   JAVA_M2=<the Maven local repository its builds download into, in the cache; an app may share it>
#   GO_MODULE=<module path>  GO_REPLACE=<module>=<path>  (one per generated module, ours included)
# Progress and timings go to stderr.
#
# jsii-pacmak comes from the repo's node_modules/.bin when installed there (a devDependency),
# else from PATH. Needs python3 (with venv) for python, a JDK and mvn for java, go for go.
# Cache: ${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}/jsii, keyed by the
# jsii-pacmak version and the versions of the jsii dependencies (their closure):
#   m2/                        Maven's local repository (plugins, jsii-runtime, constructs, ...)
#   java/pacmak-<v>/<deps>/    Maven repository folder of the generated dependencies
#   go/pacmak-<v>/<deps>/<pkg> Go modules of the generated dependencies
# Our own package is rebuilt every run (it is small); a run with the dependencies cached takes
# seconds for them.
set -euo pipefail
# Command substitutions stop on errors too (bash does not inherit set -e into them otherwise).
shopt -s inherit_errexit

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}"
JSII_CACHE="$CACHE_DIR/jsii"
M2="$JSII_CACHE/m2"
# jsii libraries that the registries serve at npm's versions, for Java and Go: never generated.
SERVED=(constructs)
# What jsii-pacmak's own Maven runs use: delaying JIT compilation cuts short Maven runs by a third.
export MAVEN_OPTS="${MAVEN_OPTS:-} -XX:+TieredCompilation -XX:TieredStopAtLevel=1"
# jsii-pacmak packs each package with `npm pack <dir>`: never run a package's own lifecycle
# scripts there (ours has `prepack: npm run build`; a dependency's are projen's).
export npm_config_ignore_scripts=true

log() { printf '[jsii-packages] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '/^#   scripts/p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2
  exit 2
}

# The repo's tools first, as npm scripts have them: jsii-pacmak, and the Node 22 of the `node`
# devDependency (jsii-pacmak warns on older ones). jsii-pacmak runs npm, mvn, go and python3 from
# PATH.
if [[ -d $REPO/node_modules/.bin ]]; then PATH="$REPO/node_modules/.bin:$PATH"; fi
PACMAK=$(command -v jsii-pacmak) || die "jsii-pacmak not found: install the repo's devDependencies (npm ci) or put it on PATH"
PACMAK_VERSION=$("$PACMAK" --version 2>/dev/null | awk '{print $1; exit}')
[[ $PACMAK_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || die "cannot read the version of $PACMAK"

# Our flags on every jsii-pacmak run: leave the package folder as it is (no .npmignore edits), and
# always generate (our caching is by version, not by pacmak's fingerprint files).
pacmak() { "$PACMAK" --no-npmignore --no-fingerprint --force "$@" >&2; }

# Prints the package and its jsii dependency closure, one tab-separated line each:
#   self|dep  name  version  dir  maven-groupId  maven-artifactId  targets (python,java,go,...)
# Each dependency is resolved as Node does from the package folder, so its version is the one the
# package was compiled against. Reads .jsii files that redirect to a gzipped assembly too.
describe() {
  node - "$1" <<'EOF'
const fs = require('fs'), path = require('path'), zlib = require('zlib');
const load = (dir) => {
  const file = path.join(dir, '.jsii');
  let a = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (a.schema === 'jsii/file-redirect') {
    let data = fs.readFileSync(path.join(dir, a.filename));
    if (a.compression === 'gzip') data = zlib.gunzipSync(data);
    a = JSON.parse(data.toString('utf8'));
  }
  return a;
};
const root = path.resolve(process.argv[2]);
const line = (kind, dir) => {
  const a = load(dir);
  const maven = (a.targets && a.targets.java && a.targets.java.maven) || {};
  const targets = Object.keys(a.targets || {}).join(',') || '-';
  console.log([kind, a.name, a.version, dir, maven.groupId || '-', maven.artifactId || '-', targets].join('\t'));
  return a;
};
const self = line('self', root);
for (const name of Object.keys(self.dependencyClosure || {}).sort()) {
  const pj = require.resolve(`${name}/package.json`, { paths: [root] });
  line('dep', path.dirname(pj));
}
EOF
}

# Maven settings for our runs: the shared local repository of the cache, and the given folders as
# repositories (file:// URLs) in an active profile. jsii-pacmak builds the same way (a user.xml
# passed with --settings); the user's ~/.m2/settings.xml is not read then.
#   maven_settings FILE [REPO-DIR...]
maven_settings() {
  local file=$1 dir
  shift
  {
    echo '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">'
    echo "  <localRepository>$M2</localRepository>"
    echo '  <interactiveMode>false</interactiveMode>'
    echo '  <profiles><profile><id>jsii-local</id><repositories>'
    for dir in "$@"; do
      echo "    <repository><id>local-${dir//[^A-Za-z0-9]/-}</id><url>file://$dir</url></repository>"
    done
    echo '  </repositories></profile></profiles>'
    echo '  <activeProfiles><activeProfile>jsii-local</activeProfile></activeProfiles>'
    echo '</settings>'
  } >"$file"
}

# Generates the Java sources of the given jsii packages (code only), pins their dependency
# versions, and builds and deploys them all in one Maven run into the Maven repository folder
# REPO. Why not jsii-pacmak's own build: it writes version ranges ([2.68.11,3.0.0)) into the poms
# and resolves them against Maven Central with the versions plugin, which would pick a cdk8s
# there rather than the one generated here; pinned, the poms name exactly the npm versions. And
# the dependencies' javadoc and sources jars are left out: on 2 cores, jsii-pacmak's build of
# cdk8s and cdk8s-plus-34 took 2 min cold, this one takes about 30 s.
#   build_java REPO WITH-JAVADOC(yes|no) SETTINGS PKG-DIR...
build_java() {
  local repo=$1 javadoc=$2 settings=$3 src i=0 dir pids=() modules="" pom
  shift 3
  src=$(mktemp -d "$WORK/java-src.XXXXXX")
  # One outdir per package: --code-only writes every package to <outdir>/java itself.
  for dir in "$@"; do
    pacmak -t java --code-only --outdir "$src/m$i" "$dir" &
    pids+=($!)
    modules+="<module>m$i/java</module>"
    i=$((i + 1))
  done
  for i in "${pids[@]}"; do wait "$i"; done
  for pom in "$src"/m*/java/pom.xml; do
    # Every jsii dependency at the version resolved from node_modules, and the runtime at
    # jsii-pacmak's own version (what it generated the code for).
    JSII_PINS="${PINS[*]} software.amazon.jsii:jsii-runtime=$PACMAK_VERSION" perl -0pi -e '
      for my $pin (split " ", $ENV{JSII_PINS}) {
        my ($g, $a, $v) = $pin =~ /^([^:]+):([^=]+)=(.+)$/ or next;
        s{(<groupId>\Q$g\E</groupId>\s*<artifactId>\Q$a\E</artifactId>\s*<version>)[^<]*(</version>)}{$1$v$2}g;
      }' "$pom"
  done
  # An aggregator, so one Maven run builds them all in dependency order; itself not deployed.
  cat >"$src/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.jsii-packages</groupId><artifactId>aggregate</artifactId><version>0</version>
  <packaging>pom</packaging>
  <properties><maven.deploy.skip>true</maven.deploy.skip></properties>
  <modules>$modules</modules>
</project>
EOF
  local -a flags=(-B -q -s "$settings" -Dmaven.install.skip=true)
  # Not installed into the shared local repository ($M2): generated artifacts of the same
  # coordinates but another jsii-pacmak version would shadow one another there.
  [[ $javadoc == yes ]] || flags+=(-Dmaven.javadoc.skip=true -Dmaven.source.skip=true)
  # Maven 3.8 prints colour resets even in batch mode; they are stripped from the log.
  (cd "$src" && mvn "${flags[@]}" deploy "-DaltDeploymentRepository=local::default::file://$repo") 2>&1 \
    | sed 's/\x1b\[[0-9;]*m//g' >&2
}

# The cache folder name of the generated dependencies: jsii-pacmak's version and every jsii
# dependency's version, since generated code depends on all of them.
deps_key() {
  local d key=""
  for d in "${DEP_IDS[@]}"; do key+="${key:++}$d"; done
  echo "pacmak-$PACMAK_VERSION/${key:-none}"
}

# Runs "$@" holding the cache's lock of NAME, so two runs never generate the same thing at once
# (the generator checks again, holding it, whether the other run made it meanwhile).
with_lock() {
  local name=$1
  shift
  mkdir -p "$JSII_CACHE"
  (
    flock 9
    "$@"
  ) 9>"$JSII_CACHE/.lock-$name"
}

# Prints the cached folder of the generated dependencies for LANG (java: a Maven repository
# folder; go: their Go modules), generating it first, holding the cache's lock, when missing.
#   cached_deps java|go
cached_deps() {
  local lang=$1 dir
  dir="$JSII_CACHE/$lang/$(deps_key)"
  if [[ -d $dir ]]; then
    log "$lang deps: cached in $dir"
  else
    with_lock "$lang" generate_deps "$lang" "$dir"
  fi
  echo "$dir"
}

# Generates into DIR, unless another run made it meanwhile: LANG's generator writes into a folder
# of this run's and prints it, which then moves into the cache whole.
generate_deps() {
  local lang=$1 dir=$2 start=$SECONDS made
  if [[ -d $dir ]]; then
    log "$lang deps: made meanwhile by another run, in $dir"
    return
  fi
  mkdir -p "$(dirname "$dir")"
  made=$("generate_${lang}_deps" "$WORK/$lang-deps")
  mv -T "$made" "$dir"
  log "$lang deps: built in $((SECONDS - start)) s into $dir"
}

generate_java_deps() {
  local tmp=$1
  mkdir -p "$tmp" "$M2"
  if ((${#GEN_DIRS[@]})); then
    log "java deps: generating ${GEN_NAMES[*]} (once per version)"
    maven_settings "$WORK/deps-settings.xml"
    build_java "$tmp" no "$WORK/deps-settings.xml" "${GEN_DIRS[@]}"
  fi
  echo "$tmp"
}

generate_go_deps() {
  local tmp=$1
  mkdir -p "$tmp/go"
  if ((${#GEN_DIRS[@]})); then
    log "go deps: generating ${GEN_NAMES[*]} (once per version)"
    # One run for all: jsii-pacmak builds them in dependency order and points each at the ones
    # already generated in the same outdir (replace directives in a local.go.mod it then
    # deletes), and `go build`s each, so a module that does not compile never reaches the cache.
    pacmak -t go --outdir "$tmp" "${GEN_DIRS[@]}"
  fi
  echo "$tmp/go"
}

build_python() {
  local start=$SECONDS tmp="$WORK/python"
  # jsii-pacmak makes a venv with setuptools, build and twine from PyPI, then the wheel and sdist.
  pacmak -t python --outdir "$tmp" "$PKG_DIR"
  rm -rf "$OUT/python"
  mkdir -p "$OUT/python"
  cp "$tmp"/python/*.whl "$tmp"/python/*.tar.gz "$OUT/python/"
  log "python: built in $((SECONDS - start)) s"
  local wheel
  for wheel in "$OUT"/python/*.whl; do echo "PYTHON_WHEEL=$wheel"; done
}

build_java_package() {
  JAVA_DEPS=$(cached_deps java)
  local start=$SECONDS
  rm -rf "$OUT/java"
  mkdir -p "$OUT/java"
  # A copy, not a link: the out-dir is one Maven repository an app (or a CI artifact) can take
  # whole. The generated jars are a few MB.
  cp -R "$JAVA_DEPS/." "$OUT/java/"
  maven_settings "$WORK/settings.xml" "$OUT/java"
  build_java "$OUT/java" yes "$WORK/settings.xml" "$PKG_DIR"
  # For apps: the same repository, and the user's default local repository.
  {
    echo '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">'
    echo '  <!-- Generated by scripts/jsii-packages.sh: adds this folder as a Maven repository. -->'
    echo "  <profiles><profile><id>website-stack-jsii</id><repositories>"
    echo "    <repository><id>website-stack-jsii</id><url>file://$OUT/java</url></repository>"
    echo '  </repositories></profile></profiles>'
    echo '  <activeProfiles><activeProfile>website-stack-jsii</activeProfile></activeProfiles>'
    echo '</settings>'
  } >"$OUT/java/settings.xml"
  log "java: built in $((SECONDS - start)) s"
  echo "JAVA_REPO=$OUT/java"
  echo "JAVA_SETTINGS=$OUT/java/settings.xml"
  echo "JAVA_ARTIFACT=$SELF_MAVEN:$SELF_VERSION"
  echo "JAVA_DEPS_REPO=$JAVA_DEPS"
  echo "JAVA_M2=$M2"
}

build_go() {
  GO_DEPS=$(cached_deps go)
  local start=$SECONDS tmp="$WORK/go" mod name
  # jsii-pacmak finds the Go modules of dependencies in the outdir it builds into (<outdir>/go/
  # <package>/go.mod with the expected module line), so the cached ones are linked in there; its
  # `go mod tidy` and `go build` then use them through replace directives.
  mkdir -p "$tmp/go"
  for mod in "$GO_DEPS"/*/; do
    if [[ -d $mod ]]; then ln -s "${mod%/}" "$tmp/go/$(basename "$mod")"; fi
  done
  pacmak -t go --outdir "$tmp" "$PKG_DIR"
  rm -rf "$OUT/go"
  mkdir -p "$OUT/go"
  for mod in "$tmp"/go/*; do [[ -L $mod ]] || cp -R "$mod" "$OUT/go/"; done
  log "go: built in $((SECONDS - start)) s"
  # pacmak names the generated dependencies' modules <go.moduleName>/<package>/v<major>: cdk8s is
  # github.com/cdk8s-team/cdk8s-core-go/cdk8s/v2, cdk8s-plus-34 is
  # github.com/cdk8s-team/cdk8s-plus-go/cdk8splus34/v2; ours likewise (no /vN below 2.0).
  for mod in "$OUT"/go/*/go.mod; do
    name=$(awk '$1 == "module" {print $2; exit}' "$mod")
    echo "GO_MODULE=$name"
    echo "GO_REPLACE=$name=$(dirname "$mod")"
  done
  for mod in "$GO_DEPS"/*/go.mod; do
    [[ -f $mod ]] || continue
    echo "GO_REPLACE=$(awk '$1 == "module" {print $2; exit}' "$mod")=$(dirname "$mod")"
  done
}

main() {
  (($# >= 2)) || usage
  [[ -f $1/package.json && (-f $1/.jsii) ]] || die "$1: not a compiled jsii package (package.json and .jsii expected)"
  PKG_DIR=$(cd "$1" && pwd)
  mkdir -p "$2"
  OUT=$(cd "$2" && pwd)
  shift 2
  local -a langs=("$@")
  ((${#langs[@]})) || langs=(python java go)
  local lang
  for lang in "${langs[@]}"; do
    case $lang in
      python) command -v python3 >/dev/null || die "python3 not found" ;;
      java) { command -v mvn && command -v javac; } >/dev/null || die "java needs a JDK and mvn" ;;
      go) command -v go >/dev/null || die "go not found" ;;
      *) usage ;;
    esac
  done

  # The package and its jsii dependencies: which to generate for Java and Go, and the versions
  # to pin in Maven poms (PINS: groupId:artifactId=version) and to key the cache with (DEP_IDS).
  GEN_DIRS=() GEN_NAMES=() DEP_IDS=() PINS=()
  local kind name version dir group artifact targets served s self_targets="" info
  # Captured first, so that a dependency Node cannot resolve stops the script here.
  info=$(describe "$PKG_DIR")
  while IFS=$'\t' read -r kind name version dir group artifact targets; do
    if [[ $kind == self ]]; then
      SELF_VERSION=$version SELF_MAVEN="$group:$artifact" self_targets=",$targets,"
      continue
    fi
    DEP_IDS+=("$name-$version")
    [[ $group == - ]] || PINS+=("$group:$artifact=$version")
    served=no
    for s in "${SERVED[@]}"; do [[ $name == "$s" ]] && served=yes; done
    if [[ $served == no ]]; then
      GEN_DIRS+=("$dir")
      GEN_NAMES+=("$name@$version")
    fi
  done <<<"$info"
  [[ -n ${SELF_VERSION:-} ]] || die "cannot read $PKG_DIR/.jsii"
  # jsii-pacmak skips a language that the assembly has no target for, silently.
  for lang in "${langs[@]}"; do
    [[ $self_targets == *",$lang,"* ]] \
      || die "$PKG_DIR/.jsii has no $lang target: add jsii.targets.$lang to package.json and compile again"
  done
  log "jsii-pacmak $PACMAK_VERSION ($PACMAK); dependencies: ${DEP_IDS[*]:-none}"

  mkdir -p "$JSII_CACHE/tmp"
  WORK=$(mktemp -d "$JSII_CACHE/tmp/run.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT

  for lang in "${langs[@]}"; do
    case $lang in
      python) build_python ;;
      java) build_java_package ;;
      go) build_go ;;
    esac
  done
}

main "$@"
