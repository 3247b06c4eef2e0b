#!/usr/bin/env bash
# A real, single-node Elasticsearch with security on, as a plain local process (no containers), for
# the trace stack's tests and for trying the production trace stack (Jaeger on Elasticsearch) locally.
#
#   scripts/elasticsearch.sh install               fetch Elasticsearch from Maven Central (once); print its folder
#   scripts/elasticsearch.sh start DIR [PORT] [ADDRESS]
#                                                  start a node with all its state under DIR, HTTPS on
#                                                  ADDRESS:PORT (default 127.0.0.1:9200); wait until it
#                                                  answers; print {"url":"https://ADDRESS:PORT","caFile":"..."}
#   scripts/elasticsearch.sh stop DIR              stop the node started in DIR
#
# Security is on, as ECK sets it up in production:
# - HTTPS only, with a certificate for ADDRESS, 127.0.0.1 and elasticsearch-es-http.tracing.svc
#   (the name of ECK's Service that dist/ uses: give pods that name for ADDRESS) signed by a CA
#   whose PEM is DIR/config/certs/ca.crt (ECK's `ca.crt`). Give your own with ES_TLS_CERT, ES_TLS_KEY
#   and ES_TLS_CA (PEM files, all three); otherwise `start` makes a P-256 CA and certificate with
#   openssl under DIR/pki the first time, and reuses them.
# - Basic auth against the file realm, with two users whose passwords the caller gives, in
#   ES_ELASTIC_PASSWORD and ES_JAEGER_PASSWORD, or in a file named by ES_PASSWORDS_FILE with
#   "elastic:PASSWORD" and "jaeger:PASSWORD" lines; given none, `start` makes random ones into
#   DIR/passwords (that form, mode 0600) once. The node stores only their bcrypt hashes, and they
#   are never printed or put on a command line.
#     elastic  the superuser (role `superuser`)
#     jaeger   role `jaeger_writer_reader`: cluster privileges monitor and manage_index_templates,
#              and on indices jaeger-*: auto_configure, index, read, view_index_metadata,
#              delete_index; what Jaeger's collector and query service and jaeger-es-index-cleaner
#              need, and no more (scripts/elasticsearch/roles.yml says which needs what)
#
# Elastic publishes no tarball on Maven Central, but the server and the modules this node needs
# (transport-netty4, x-pack-core, x-pack-security): `install` resolves them with Maven into a layout
# like the tarball's, cached outside the repo keyed by version, and compiles small pieces of glue
# (scripts/elasticsearch/glue) that stand in for the tarball's launcher, entitlement agent and
# console loader, and for its rest-root module (`GET /` and `HEAD /`, which Jaeger's client probes
# to reconnect after a lost connection), none of which is published. The node lacks the tarball's
# other modules. See scripts/elasticsearch/README.md.
#
# Elasticsearch refuses to run as root: as root, `start` runs the JVM as nobody (65534) with no
# capabilities. nobody owns the node's folders in DIR, reads a hard-linked copy of the runtime in
# DIR/home (root's cache is private), and must be able to reach DIR: a private temporary folder above
# DIR (mode 700, as mkdtemp makes them) gets search permission for others (o+x, not listing); any
# other unreachable folder is an error.
#
# Needs Java 17 or newer with javac (JAVA_HOME, or java on PATH), openssl, curl, and, for `install`,
# Maven. Environment: ES_HEAP (default 512m), ES_START_TIMEOUT (seconds, default 180), ES_JVM_OPTS
# (extra JVM flags), ES_FAKETIME (the node's clocks offset by libfaketime, e.g. -10d: every index it
# creates is that old, for seeing Jaeger's index cleaner delete; needs libfaketime). On a shared
# machine, `nice -n 19 scripts/elasticsearch.sh ...`.
set -euo pipefail
# Command substitutions stop on errors too (bash does not inherit set -e into them otherwise).
shopt -s inherit_errexit

ES_VERSION=8.19.21
# The plugin that resolves the jars, pinned so that Maven never looks up "the newest" one.
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
# Who runs the JVM when this script runs as root.
UNPRIVILEGED_UID=65534
UNPRIVILEGED_GID=65534

# libfaketime's multi-threaded library (ES_FAKETIME).
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
CONF_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/elasticsearch"
CACHE_DIR="${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}"
# Keyed by version and by the files that shape the runtime, so that changing the glue or the pom
# installs afresh instead of reusing a stale build.
INPUTS_DIGEST=$(cat "$CONF_DIR/pom.xml" "$CONF_DIR"/glue/* | sha256sum | cut -c1-8)
HOME_DIR="$CACHE_DIR/elasticsearch-$ES_VERSION-$INPUTS_DIGEST"
MAIN_CLASS=org.elasticsearch.bootstrap.Elasticsearch

log() { printf '[elasticsearch] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# listening, free_port; server_pki
# shellcheck source=scripts/lib/local-ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-ports.sh"
# shellcheck source=scripts/lib/local-pki.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-pki.sh"
# render
# shellcheck source=scripts/lib/render.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/render.sh"

usage() {
  sed -n '5,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

need() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is not installed; $2"
}

# --- install ---------------------------------------------------------------------------------

java_bin() {
  if [[ -n "${JAVA_HOME:-}" ]]; then
    [[ -x "$JAVA_HOME/bin/java" ]] || die "JAVA_HOME=$JAVA_HOME has no bin/java; point it at a Java 17 installation"
    echo "$JAVA_HOME/bin/java"
  else
    command -v java >/dev/null 2>&1 || die "Java is not installed; Elasticsearch $ES_VERSION needs Java 17 or newer (Debian: apt-get install openjdk-17-jdk-headless, or set JAVA_HOME)"
    command -v java
  fi
}

# The major version of java_bin, which must be 17 or newer.
java_major() {
  local java version major
  java=$(java_bin)
  version=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
  major=${version#1.}
  [[ $major =~ ^[0-9]+$ && $major -ge 17 ]] || die "$java is Java ${version:-of unknown version}; Elasticsearch $ES_VERSION needs Java 17 or newer (Debian: apt-get install openjdk-17-jdk-headless, then set JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64)"
  echo "$major"
}

# A JDK tool next to java_bin (javac, jar), which `install` needs to build the glue.
jdk_tool() {
  local tool
  tool="$(dirname "$(readlink -f "$(java_bin)")")/$1"
  [[ -x $tool ]] || die "$(java_bin) has no $1 next to it; \`install\` needs a JDK, not only a JRE (Debian: apt-get install openjdk-17-jdk-headless)"
  echo "$tool"
}

# "group:artifact path" for each jar in the given `dependency:list` output files.
artifacts() {
  sed -nE 's/^ +([^: ]+):([^: ]+):jar:.*:(compile|runtime):(\/[^ ]+\.jar)( --.*)?$/\1:\2 \4/p' "$@"
}

# Copies the jars of list $2 into folder $1, except the artifacts that lists $3... already hold:
# a plugin's folder must not repeat classes of the server or of the plugins it extends, or
# Elasticsearch stops on "jar hell" (and the module layer on split packages).
place() {
  local dest=$1 list=$2 ga path parents=''
  shift 2
  (($# == 0)) || parents=$(artifacts "$@" | cut -d' ' -f1)
  mkdir -p "$dest"
  while read -r ga path; do
    grep -qxF -- "$ga" <<<"$parents" || cp "$path" "$dest/"
  done < <(artifacts "$list")
}

install() {
  bash "$(dirname "${BASH_SOURCE[0]}")/system-deps.sh" elasticsearch # its programs from Debian, when missing
  # One build at a time per cache: concurrent callers wait, then reuse the result.
  mkdir -p "$CACHE_DIR"
  exec 8>"$CACHE_DIR/.elasticsearch.lock"
  flock 8
  if [[ -f "$HOME_DIR/.complete" ]]; then
    echo "$HOME_DIR"
    return
  fi
  java_major >/dev/null
  local javac jar
  javac=$(jdk_tool javac)
  jar=$(jdk_tool jar)
  local tmp="$HOME_DIR.tmp.$$" start=$SECONDS part ok
  rm -rf "$tmp"
  mkdir -p "$tmp/build"
  cp "$CONF_DIR/pom.xml" "$tmp/build/pom.xml"
  log "fetching Elasticsearch $ES_VERSION from Maven Central (once; cached at $HOME_DIR)"
  # One resolution per part, so that each part's runtime closure is known on its own.
  for part in server entitlement-bridge transport-netty4 x-pack-core x-pack-security; do
    ok=0
    (cd "$tmp/build" && mvn -B -q -Dstyle.color=never -P "$part" -Delasticsearch.version="$ES_VERSION" \
      "$DEPENDENCY_PLUGIN:list" -DincludeScope=runtime -DoutputAbsoluteArtifactFilename=true \
      -DoutputFile="$tmp/build/$part.list" >>"$tmp/build/mvn.log" 2>&1) || ok=$?
    if [[ $ok != 0 || -z $(artifacts "$tmp/build/$part.list" 2>/dev/null) ]]; then
      tail -n 30 "$tmp/build/mvn.log" >&2 || true
      rm -rf "$tmp"
      die "fetching Elasticsearch's $part with Maven failed (exit $ok; its output is above). Check access to Maven Central (https://repo1.maven.org/maven2, or the mirror in ~/.m2/settings.xml), then rerun: scripts/elasticsearch.sh install"
    fi
  done

  # The tarball's layout: lib/ is the module path, modules/NAME/ one folder per module.
  local b="$tmp/build"
  place "$tmp/lib" "$b/server.list"
  place "$tmp/lib/entitlement-bridge" "$b/entitlement-bridge.list"
  place "$tmp/modules/transport-netty4" "$b/transport-netty4.list" "$b/server.list"
  place "$tmp/modules/x-pack-core" "$b/x-pack-core.list" "$b/server.list"
  place "$tmp/modules/x-pack-security" "$b/x-pack-security.list" "$b/server.list" "$b/x-pack-core.list"
  mkdir -p "$tmp/plugins"
  # Each module's descriptor and entitlement policy sit inside its jar (META-INF/es-plugins/NAME/);
  # the tarball has them next to the jars.
  local module
  for module in transport-netty4 x-pack-core x-pack-security; do
    (cd "$b" && "$jar" xf "$tmp/modules/$module/$module-$ES_VERSION.jar" "META-INF/es-plugins/$module/")
    cp "$b/META-INF/es-plugins/$module/"* "$tmp/modules/$module/"
    [[ -f "$tmp/modules/$module/plugin-descriptor.properties" ]] ||
      { rm -rf "$tmp"; die "$module-$ES_VERSION.jar has no META-INF/es-plugins/$module/plugin-descriptor.properties; this script needs updating for Elasticsearch $ES_VERSION"; }
  done

  # The glue, compiled against the jars it serves.
  ok=0
  "$javac" -nowarn -d "$b/classes" -cp "$tmp/lib/*:$tmp/modules/x-pack-core/*" "$CONF_DIR"/glue/*.java >"$b/javac.log" 2>&1 || ok=$?
  if [[ $ok != 0 ]]; then
    cat "$b/javac.log" >&2
    rm -rf "$tmp"
    die "compiling scripts/elasticsearch/glue against Elasticsearch $ES_VERSION failed (output above)"
  fi
  mkdir -p "$tmp/lib/entitlement-agent" "$tmp/lib/tools/ansi-console" "$tmp/glue"
  "$jar" --create --file "$tmp/lib/entitlement-agent/entitlement-agent.jar" --manifest "$CONF_DIR/glue/entitlement-agent.mf" \
    -C "$b/classes" localnode/EntitlementAgent.class
  "$jar" --create --file "$tmp/lib/tools/ansi-console/ansi-console.jar" \
    -C "$b/classes" org/elasticsearch/io/ansi/AnsiConsoleLoader.class
  # The root endpoint as a module, beside the published ones (glue/RestRootPlugin.java says why).
  mkdir -p "$tmp/modules/rest-root"
  "$jar" --create --file "$tmp/modules/rest-root/rest-root.jar" -C "$b/classes" localnode/restroot
  printf '%s\n' 'name=rest-root' "description=GET / and HEAD /, as the tarball's rest-root module" \
    "version=$ES_VERSION" 'java.version=17' "elasticsearch.version=$ES_VERSION" \
    'classname=localnode.restroot.RestRootPlugin' >"$tmp/modules/rest-root/plugin-descriptor.properties"
  rm -rf "$b/classes/localnode/restroot"
  cp -r "$b/classes/localnode" "$tmp/glue/"
  rm -rf "$b"
  # Readable by the unprivileged user that runs the node when this script runs as root.
  chmod -R a+rX "$tmp"
  rm -rf "$HOME_DIR"
  mv "$tmp" "$HOME_DIR"
  touch "$HOME_DIR/.complete"
  log "fetched $(find "$HOME_DIR" -name '*.jar' | wc -l) jars ($(du -sh "$HOME_DIR" | cut -f1)) in $((SECONDS - start)) s"
  echo "$HOME_DIR"
}

# --- start -----------------------------------------------------------------------------------

# The pid in DIR/run/elasticsearch.pid when that process is alive and is the node of DIR.
running_pid() {
  local dir=$1 pid cmdline
  [[ -f "$dir/run/elasticsearch.pid" ]] || return 0
  pid=$(cat "$dir/run/elasticsearch.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  cmdline=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline") || return 0
  if grep -qxF -- "-Des.path.conf=$dir/config" <<<"$cmdline"; then
    echo "$pid"
  fi
}

# Makes sure that the command "$2..." (setpriv as nobody) can reach folder $1: each folder from / down
# to $1 must grant it search permission. A private temporary folder of ours (under /tmp or $TMPDIR,
# owned by root) gets o+x; anything else is the caller's to fix.
open_path_for() {
  local dir=$1 path='' part parts
  shift
  IFS=/ read -ra parts <<<"${dir#/}"
  for part in "" "${parts[@]}"; do
    path="$path/$part"
    path=${path//\/\//\/}
    "$@" test -x "$path" && continue
    if [[ ($path == /tmp/?* || ($path == "${TMPDIR:-/tmp}"/?*)) && -O $path ]]; then
      log "letting the node's user reach $dir: chmod o+x $path"
      chmod o+x "$path"
    else
      die "as root, the node runs as user nobody, which cannot reach $dir: $path is mode $(stat -c %a "$path"). Choose a DIR that every user can reach, or allow it: chmod o+x $path"
    fi
  done
}

# The password of user $1, from ES_<USER>_PASSWORD or the "user:password" lines of ES_PASSWORDS_FILE.
# 32 random hex digits: a password with nothing to escape anywhere.
random_password() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

password() {
  local user=$1 var value=
  var="ES_${user^^}_PASSWORD"
  if [[ -n "${!var:-}" ]]; then
    value=${!var}
  elif [[ -n "${ES_PASSWORDS_FILE:-}" ]]; then
    [[ -r $ES_PASSWORDS_FILE ]] || die "ES_PASSWORDS_FILE=$ES_PASSWORDS_FILE is not a readable file"
    value=$(sed -n "s/^$user://p" "$ES_PASSWORDS_FILE" | head -n 1)
  fi
  [[ -n $value ]] || die "no password for the user $user: set $var (or ES_PASSWORDS_FILE, a file with a \"$user:PASSWORD\" line)"
  [[ $value != *$'\n'* && $value != *$'\r'* ]] || die "the password of $user must be one line"
  # bcrypt reads 72 bytes at most; a longer password would be cut silently.
  ((${#value} <= 72)) || die "the password of $user is longer than bcrypt's 72 bytes"
  printf '%s' "$value"
}

# The CA, certificate and key of the HTTP layer, into DIR/config/certs (where Elasticsearch's
# entitlements let it read them): the caller's, or a CA and certificate made once under DIR/pki.
tls_files() {
  local dir=$1 certs="$1/config/certs" pki="$1/pki"
  mkdir -p "$certs"
  if [[ -n "${ES_TLS_CERT:-}${ES_TLS_KEY:-}${ES_TLS_CA:-}" ]]; then
    local f
    for f in ES_TLS_CERT ES_TLS_KEY ES_TLS_CA; do
      [[ -n "${!f:-}" && -r "${!f}" ]] || die "$f must name a readable PEM file when any of ES_TLS_CERT, ES_TLS_KEY, ES_TLS_CA is set"
    done
    cp "$ES_TLS_CERT" "$certs/tls.crt"
    cp "$ES_TLS_KEY" "$certs/tls.key"
    cp "$ES_TLS_CA" "$certs/ca.crt"
    return
  fi
  server_pki "$pki" "website-stack local Elasticsearch CA" elasticsearch-es-http.tracing.svc \
    "DNS:elasticsearch-es-http.tracing.svc,DNS:localhost,IP:127.0.0.1,IP:$LISTEN_ADDRESS"
  cp "$pki/ca.crt" "$certs/ca.crt"
  cp "$pki/tls.crt" "$certs/tls.crt"
  cp "$pki/tls.key" "$certs/tls.key"
}

# curl as user $1 (password $2) to path $3 of the node on port $4, with the CA of DIR $5: prints the
# HTTP status. The credentials go to curl on stdin, never on its command line.
curl_as() {
  local user=$1 pw=$2 path=$3 port=$4 dir=$5
  pw=${pw//\\/\\\\}
  pw=${pw//\"/\\\"}
  printf 'user = "%s:%s"\n' "$user" "$pw" |
    curl -sS -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$dir/config/certs/ca.crt" -K - \
      "https://$LISTEN_ADDRESS:$port$path" 2>/dev/null || true
}

json_string() {
  local s=${1//\\/\\\\}
  printf '"%s"' "${s//\"/\\\"}"
}

start() {
  [[ $# -ge 1 && $# -le 3 ]] || usage
  LISTEN_ADDRESS=${3:-127.0.0.1}
  require_local_address
  bash "$(dirname "${BASH_SOURCE[0]}")/system-deps.sh" elasticsearch # its programs from Debian, when missing
  local dir=$1 port=${2:-9200} timeout=${ES_START_TIMEOUT:-180} heap=${ES_HEAP:-512m}
  [[ $port =~ ^[0-9]+$ ]] || die "PORT must be a number, not '$port'"
  [[ $heap =~ ^[0-9]+[mMgG]$ ]] || die "ES_HEAP must look like 512m or 1g, not '$heap'"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # No passwords given: random ones, made once and kept in DIR/passwords (mode 0600).
  if [[ -z "${ES_ELASTIC_PASSWORD:-}${ES_JAEGER_PASSWORD:-}${ES_PASSWORDS_FILE:-}" ]]; then
    ES_PASSWORDS_FILE="$dir/passwords"
    if [[ ! -f $ES_PASSWORDS_FILE ]]; then
      (umask 077 && printf 'elastic:%s\njaeger:%s\n' "$(random_password)" "$(random_password)" >"$ES_PASSWORDS_FILE")
    fi
    log "the users' passwords are in $ES_PASSWORDS_FILE (\"user:password\" lines)"
  fi
  local elastic_pw jaeger_pw
  elastic_pw=$(password elastic)
  jaeger_pw=$(password jaeger)
  local pid
  pid=$(running_pid "$dir")
  [[ -z $pid ]] || die "an Elasticsearch node already runs from $dir (pid $pid); stop it first: scripts/elasticsearch.sh stop $dir"
  listening "$port" && die "something already listens on $LISTEN_ADDRESS:$port; choose another PORT"
  local java major home transport_port
  java=$(java_bin)
  major=$(java_major)
  home=$(install)
  transport_port=$(free_port)
  local as_nobody=() node_home=$home
  if [[ $(id -u) == 0 ]]; then
    need setpriv "\`start\` needs it to run Elasticsearch, which refuses root, as an unprivileged user (Debian: apt-get install util-linux)"
    as_nobody=(setpriv "--reuid=$UNPRIVILEGED_UID" "--regid=$UNPRIVILEGED_GID" --clear-groups --inh-caps=-all)
    open_path_for "$dir" "${as_nobody[@]}"
    # Hard links cost nothing and follow the cache's a+rX modes; a copy where they cannot be made.
    node_home="$dir/home"
    rm -rf "$node_home"
    cp -al "$home" "$node_home" 2>/dev/null || { rm -rf "$node_home" && cp -a "$home" "$node_home"; }
  fi

  mkdir -p "$dir/config" "$dir/data" "$dir/logs" "$dir/tmp" "$dir/run"
  # The previous run's logs stay next to this one's; failures are read from this one's.
  local f
  for f in website-stack stdout; do
    [[ -f "$dir/logs/$f.log" ]] && mv "$dir/logs/$f.log" "$dir/logs/$f.previous.log"
  done
  local vars=("ES_DIR=$dir" "ES_HOME=$node_home" "ES_ADDRESS=$LISTEN_ADDRESS" "ES_PORT=$port" "ES_TRANSPORT_PORT=$transport_port"
    "ES_HEAP=$heap" "ES_VERSION=$ES_VERSION")
  render "$CONF_DIR/elasticsearch.yml" "${vars[@]}" >"$dir/config/elasticsearch.yml"
  render "$CONF_DIR/jvm.options" "${vars[@]}" >"$dir/config/jvm.options"
  cp "$CONF_DIR/roles.yml" "$CONF_DIR/log4j2.properties" "$dir/config/"
  tls_files "$dir"

  local glue=("$java" -cp "$home/lib/*:$home/modules/x-pack-core/*:$home/glue" localnode.LocalNode)
  # The file realm: bcrypt hashes of the callers' passwords, and who has which role.
  (umask 077 && printf 'elastic:%s\njaeger:%s\n' "$elastic_pw" "$jaeger_pw" |
    "${glue[@]}" hash >"$dir/config/users" 2>"$dir/logs/glue.log") ||
    { cat "$dir/logs/glue.log" >&2; die "hashing the passwords failed (output above)"; }
  printf 'superuser:elastic\njaeger_writer_reader:jaeger\n' >"$dir/config/users_roles"
  # What the launcher would write to the node's stdin (it holds the keystore's seed: private).
  (umask 077 && "${glue[@]}" server-args "$node_home" "$dir/config" >"$dir/run/server-args" 2>"$dir/logs/glue.log") ||
    { cat "$dir/logs/glue.log" >&2; die "preparing the node's arguments failed (output above)"; }

  local opts=()
  mapfile -t opts < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$dir/config/jvm.options")
  ((major >= 21)) && opts+=("--enable-native-access=org.elasticsearch.nativeaccess,org.apache.lucene.core")
  # shellcheck disable=SC2206 # ES_JVM_OPTS is a list of flags
  opts+=(${ES_JVM_OPTS:-})

  # The node reads its arguments from stdin, runs while stdin stays open, and shuts down cleanly
  # when it reads ESC (0x1B) there; EOF makes it exit at once. So its stdin is a fifo whose write end a
  # keeper holds: the keeper writes the arguments, then waits for as long as the node lives.
  local fifo="$dir/run/stdin"
  rm -f "$fifo"
  mkfifo -m 600 "$fifo"
  # What the node writes (and its private files: keystore, users, certificate key) is its own.
  [[ ${#as_nobody[@]} == 0 ]] ||
    chown -R "$UNPRIVILEGED_UID:$UNPRIVILEGED_GID" "$dir/config" "$dir/data" "$dir/logs" "$dir/tmp" "$dir/run"
  local start=$SECONDS
  log "starting Elasticsearch $ES_VERSION in $dir (HTTPS $LISTEN_ADDRESS:$port, transport port $transport_port)"
  # Its own session, and no inherited stdout/stderr, so it outlives this script and its caller's pipes.
  # A clean environment, so that the passwords in this one never reach the node's; LIBFFI_TMPDIR is
  # the launcher's, which the node checks.
  local clock=()
  if [[ -n ${ES_FAKETIME:-} ]]; then
    [[ -r $FAKETIME_LIB ]] || die "ES_FAKETIME needs libfaketime ($FAKETIME_LIB; Debian: apt-get install libfaketime)"
    # Both clocks offset alike: with the monotonic clock left alone, libfaketime mis-converts the
    # JVM's timed waits and its internal threads spin. No shared memory, which the node, as nobody,
    # could not open.
    clock=("LD_PRELOAD=$FAKETIME_LIB" "FAKETIME=$ES_FAKETIME" FAKETIME_DISABLE_SHM=1)
    log "the node's wall clock is offset by $ES_FAKETIME (libfaketime)"
  fi
  (cd "$dir" && exec setsid env -i PATH="$PATH" LIBFFI_TMPDIR="$dir/tmp" "${as_nobody[@]}" \
    env "${clock[@]}" "$java" "${opts[@]}" -m "org.elasticsearch.server/$MAIN_CLASS" <"$fifo" >"$dir/logs/stdout.log" 2>&1) &
  pid=$!
  echo "$pid" >"$dir/run/elasticsearch.pid"
  # The keeper opens the fifo read-write, which never blocks: it cannot hang on a node that is gone.
  # shellcheck disable=SC2016 # expanded by the keeper's shell
  setsid env -i PATH="$PATH" bash -c 'cat -- "$1" && rm -f -- "$1"; while kill -0 "$2" 2>/dev/null; do sleep 1; done' \
    keeper "$dir/run/server-args" "$pid" 1<>"$fifo" 2>/dev/null </dev/null &
  echo "$!" >"$dir/run/keeper.pid"

  # Ready when the superuser gets an answer from the cluster over HTTPS: TLS, the file realm and
  # the cluster state are all up then.
  local status
  while true; do
    if ! kill -0 "$pid" 2>/dev/null; then
      show_logs "$dir"
      stop "$dir"
      die "Elasticsearch exited during startup (logs above; all of them in $dir/logs)"
    fi
    status=$(curl_as elastic "$elastic_pw" /_cluster/health "$port" "$dir")
    [[ $status == 200 ]] && break
    if ((SECONDS - start >= timeout)); then
      show_logs "$dir"
      stop "$dir"
      die "Elasticsearch did not answer on https://$LISTEN_ADDRESS:$port within $timeout s (last HTTP status: ${status:-none}; logs above, all of them in $dir/logs). On a busy machine, raise ES_START_TIMEOUT"
    fi
    sleep 0.5
  done
  log "ready in $((SECONDS - start)) s (pid $pid)"
  printf '{"url":%s,"caFile":%s}\n' "$(json_string "https://$LISTEN_ADDRESS:$port")" "$(json_string "$dir/config/certs/ca.crt")"
}

show_logs() {
  local dir=$1 file
  for file in "$dir/logs/stdout.log" "$dir/logs/website-stack.log"; do
    [[ -s $file ]] || continue
    log "last lines of $file:"
    tail -n 40 "$file" >&2
  done
}

# --- stop ------------------------------------------------------------------------------------

# Waits up to $2 seconds for pid $1 to exit; true once it has.
exited_within() {
  local pid=$1 i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  ! kill -0 "$pid" 2>/dev/null
}

stop() {
  [[ $# -eq 1 ]] || usage
  local dir=$1 pid keeper cmdline
  [[ -d $dir ]] || { log "no $dir; nothing to stop"; return 0; }
  dir=$(cd "$dir" && pwd)
  pid=$(running_pid "$dir")
  if [[ -n $pid ]]; then
    # ESC on its stdin: the launcher's way of asking for a clean shutdown. Written without
    # blocking, so that a node that no longer reads cannot hang this script.
    printf '\033' | dd of="$dir/run/stdin" oflag=nonblock status=none 2>/dev/null || true
    if ! exited_within "$pid" 30; then
      log "pid $pid did not stop within 30 s of ESC; sending SIGTERM"
      kill -TERM "$pid" 2>/dev/null || true
      if ! exited_within "$pid" 30; then
        log "pid $pid did not stop within 30 s of SIGTERM; killing it"
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
      fi
    fi
  fi
  # The keeper leaves by itself within a second of the node; this is for a node that never started.
  keeper=$(cat "$dir/run/keeper.pid" 2>/dev/null || true)
  if [[ $keeper =~ ^[0-9]+$ ]] && cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$keeper/cmdline") &&
    [[ $cmdline == *"$dir/run/server-args"* ]]; then
    kill -TERM "$keeper" 2>/dev/null || true
  fi
  rm -f "$dir/run/elasticsearch.pid" "$dir/run/keeper.pid" "$dir/run/stdin" "$dir/run/server-args"
}

main() {
  [[ $# -ge 1 ]] || usage
  local command=$1
  shift
  case "$command" in
    install) [[ $# -eq 0 ]] || usage; install ;;
    start) start "$@" ;;
    stop) stop "$@" ;;
    *) usage ;;
  esac
}

main "$@"
