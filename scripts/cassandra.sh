#!/usr/bin/env bash
# A real, single-node Apache Cassandra as a plain local process (no containers), for the trace
# stack's tests: Jaeger v2 stores and queries traces through it.
#
#   scripts/cassandra.sh install               fetch Cassandra and its runtime jars (once); print their folder
#   scripts/cassandra.sh start DIR [PORT] [ADDRESS]
#                                              start a node with all its state under DIR, CQL on
#                                              ADDRESS:PORT (default 127.0.0.1:9042); wait until it
#                                              accepts clients; print "ADDRESS:PORT"
#   scripts/cassandra.sh stop DIR              stop the node started in DIR (SIGTERM, then SIGKILL)
#
# Apache publishes no 5.x binary tarball on Maven Central, only the server jar
# (org.apache.cassandra:cassandra-all) and its dependencies: `install` resolves those with Maven and
# caches them outside the repo keyed by version (scripts/cassandra/pom.xml), and `start` runs the
# daemon's main class on them with scripts/cassandra/cassandra.yaml and logback.xml rendered into
# DIR/conf, and the JVM flags of Cassandra's
# conf/jvm-server.options and conf/jvm17-server.options. Authentication is on (PasswordAuthenticator,
# superuser cassandra/cassandra), as in production. The storage (gossip) port is a free one, so nodes
# in different DIRs never clash; JMX is off.
#
# Needs Java 17 (JAVA_HOME, or java on PATH) and, for `install`, Maven (mvn). Environment:
# CASSANDRA_HEAP (default 1g; -Xms is half of it), CASSANDRA_START_TIMEOUT (seconds, default 120),
# CASSANDRA_JVM_OPTS (extra JVM flags). On a shared machine, `nice -n 19 scripts/cassandra.sh ...`.
set -euo pipefail
# Command substitutions stop on errors too (bash does not inherit set -e into them otherwise).
shopt -s inherit_errexit

CASSANDRA_VERSION=5.0.9
# The plugin that copies the jars, pinned so that Maven never looks up "the newest" one.
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

CACHE_DIR="${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}"
HOME_DIR="$CACHE_DIR/cassandra-$CASSANDRA_VERSION"
CONF_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cassandra"
LIB_DIR="$HOME_DIR/lib"

log() { printf '[cassandra] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# listening, free_port
# shellcheck source=scripts/lib/local-ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-ports.sh"
# render
# shellcheck source=scripts/lib/render.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/render.sh"

usage() {
  sed -n '5,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- install ---------------------------------------------------------------------------------

install() {
  bash "$(dirname "${BASH_SOURCE[0]}")/system-deps.sh" cassandra # its programs from Debian, when missing
  # One download at a time per cache: concurrent callers wait, then reuse the result.
  mkdir -p "$CACHE_DIR"
  exec 8>"$CACHE_DIR/.cassandra.lock"
  flock 8
  if [[ -f "$HOME_DIR/.complete" ]]; then
    echo "$HOME_DIR"
    return
  fi
  java_bin >/dev/null
  local tmp="$HOME_DIR.tmp.$$" start=$SECONDS ok=0
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cp "$CONF_DIR/pom.xml" "$tmp/pom.xml"
  log "fetching Cassandra $CASSANDRA_VERSION and its dependencies from Maven Central (once; cached at $HOME_DIR)"
  (cd "$tmp" && mvn -B -q -Dstyle.color=never "-Dcassandra.version=$CASSANDRA_VERSION" "$DEPENDENCY_PLUGIN:copy-dependencies" -DincludeScope=runtime -DoutputDirectory="$tmp/lib" >"$tmp/mvn.log" 2>&1) || ok=$?
  if [[ $ok != 0 || ! -f "$tmp/lib/cassandra-all-$CASSANDRA_VERSION.jar" ]]; then
    tail -n 30 "$tmp/mvn.log" >&2 || true
    rm -rf "$tmp"
    die "fetching Cassandra $CASSANDRA_VERSION with Maven failed (exit $ok; its output is above). Check access to Maven Central (https://repo1.maven.org/maven2, or the mirror in ~/.m2/settings.xml), then rerun: scripts/cassandra.sh install"
  fi
  rm -f "$tmp/mvn.log"
  rm -rf "$HOME_DIR"
  mv "$tmp" "$HOME_DIR"
  touch "$HOME_DIR/.complete"
  log "fetched $(ls "$LIB_DIR" | wc -l) jars ($(du -sh "$LIB_DIR" | cut -f1)) in $((SECONDS - start)) s"
  echo "$HOME_DIR"
}

# --- start -----------------------------------------------------------------------------------

java_bin() {
  if [[ -n "${JAVA_HOME:-}" ]]; then
    [[ -x "$JAVA_HOME/bin/java" ]] || die "JAVA_HOME=$JAVA_HOME has no bin/java; point it at a Java 17 installation"
    echo "$JAVA_HOME/bin/java"
  else
    command -v java >/dev/null 2>&1 || die "Java is not installed; Cassandra $CASSANDRA_VERSION needs Java 17 (Debian: apt-get install openjdk-17-jre-headless, or set JAVA_HOME)"
    command -v java
  fi
}

# The major version of java_bin, which must be 17: the flags below are Cassandra's for Java 17.
java_major() {
  local java version major
  java=$(java_bin)
  version=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
  major=${version#1.}
  [[ $major == 17 ]] || die "$java is Java ${version:-of unknown version}; Cassandra $CASSANDRA_VERSION runs here on Java 17 (Debian: apt-get install openjdk-17-jre-headless, then set JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64)"
  echo "$major"
}

# The pid in DIR/cassandra.pid when that process is alive and is a Cassandra daemon.
running_pid() {
  local dir=$1 pid
  [[ -f "$dir/cassandra.pid" ]] || return 0
  pid=$(cat "$dir/cassandra.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  if grep -qaF 'org.apache.cassandra.service.CassandraDaemon' "/proc/$pid/cmdline" 2>/dev/null; then
    echo "$pid"
  fi
}

start() {
  [[ $# -ge 1 && $# -le 3 ]] || usage
  LISTEN_ADDRESS=${3:-127.0.0.1}
  require_local_address
  bash "$(dirname "${BASH_SOURCE[0]}")/system-deps.sh" cassandra # its programs from Debian, when missing
  local dir=$1 port=${2:-9042} timeout=${CASSANDRA_START_TIMEOUT:-120} heap=${CASSANDRA_HEAP:-1g}
  [[ $port =~ ^[0-9]+$ ]] || die "PORT must be a number, not '$port'"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local pid
  pid=$(running_pid "$dir")
  [[ -z $pid ]] || die "a Cassandra node already runs from $dir (pid $pid); stop it first: scripts/cassandra.sh stop $dir"
  listening "$port" && die "something already listens on $LISTEN_ADDRESS:$port; choose another PORT"
  local java home storage_port
  java=$(java_bin)
  java_major >/dev/null
  home=$(install)
  storage_port=$(free_port)
  mkdir -p "$dir/conf/triggers" "$dir/logs" "$dir/data"
  local vars=("CASSANDRA_DIR=$dir" "CASSANDRA_ADDRESS=$LISTEN_ADDRESS" "CASSANDRA_PORT=$port"
    "CASSANDRA_STORAGE_PORT=$storage_port")
  render "$CONF_DIR/cassandra.yaml" "${vars[@]}" >"$dir/conf/cassandra.yaml"
  render "$CONF_DIR/logback.xml" "${vars[@]}" >"$dir/conf/logback.xml"
  # The previous run's log stays next to this one's; readiness is read from this one's.
  [[ -f "$dir/logs/system.log" ]] && mv "$dir/logs/system.log" "$dir/logs/system.previous.log"
  [[ -f "$dir/logs/stdout.log" ]] && mv "$dir/logs/stdout.log" "$dir/logs/stdout.previous.log"

  local heap_mb
  case "$heap" in
    *g|*G) heap_mb=$((${heap%?} * 1024)) ;;
    *m|*M) heap_mb=${heap%?} ;;
    *) die "CASSANDRA_HEAP must look like 1g or 768m, not '$heap'" ;;
  esac
  local opts=(
    -Xms$((heap_mb / 2))m -Xmx${heap_mb}m -Xss256k
    # The client compiler only: a test's node serves a few hundred queries, and C2's compiles of
    # hot code it never runs for long cost more than they save (to ready: 7 CPU-seconds against 13).
    -XX:TieredStopAtLevel=1
    # conf/jvm-server.options
    -ea -XX:+UseThreadPriorities -XX:+HeapDumpOnOutOfMemoryError "-XX:HeapDumpPath=$dir/logs"
    -XX:+ExitOnOutOfMemoryError
    -XX:+UseTLAB -XX:+ResizeTLAB -XX:+PerfDisableSharedMem -Djava.net.preferIPv4Stack=true
    -XX:StringTableSize=1000003
    # conf/jvm17-server.options: G1, and the JDK internals Cassandra and Netty reach into
    -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1 -XX:G1HeapRegionSize=16m
    -XX:G1RSetUpdatingPauseTimePercent=5 -XX:MaxGCPauseMillis=300 -XX:InitiatingHeapOccupancyPercent=70
    -Djdk.attach.allowAttachSelf=true
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED
    --add-exports java.base/java.lang.ref=ALL-UNNAMED
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
    --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
    --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/java.util=ALL-UNNAMED
    -Dio.netty.tryReflectionSetAccessible=true
    -Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11
    # conf/cassandra-env.sh: jamm measures object sizes for memtable accounting
    "-javaagent:$(ls "$home"/lib/jamm-*.jar | head -n 1)"
    # This node
    "-Dcassandra.config=file://$dir/conf/cassandra.yaml"
    "-Dlogback.configurationFile=$dir/conf/logback.xml"
    "-Dcassandra.logdir=$dir/logs" "-Dcassandra.storagedir=$dir/data" "-Dcassandra.triggers_dir=$dir/conf/triggers"
    -Dcassandra-foreground=yes
    # A lone node: no ring to settle into, and the default superuser at once instead of after 10 s.
    -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.superuser_setup_delay_ms=0
  )
  # shellcheck disable=SC2206 # CASSANDRA_JVM_OPTS is a list of flags
  opts+=(${CASSANDRA_JVM_OPTS:-})

  local start=$SECONDS
  log "starting Cassandra $CASSANDRA_VERSION in $dir (CQL $LISTEN_ADDRESS:$port, storage port $storage_port)"
  # Its own session, and no inherited stdout/stderr, so it outlives this script and its caller's pipes.
  setsid "$java" "${opts[@]}" -cp "$home/lib/*" org.apache.cassandra.service.CassandraDaemon \
    </dev/null >"$dir/logs/stdout.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/cassandra.pid"

  # Ready when it listens for CQL and has created the default superuser (clients that log in
  # before that are refused); DIR remembers the latter, which later starts do not log again.
  local log="$dir/logs/system.log" superuser="$dir/data/.superuser-created"
  while true; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$dir/cassandra.pid"
      show_logs "$dir"
      die "Cassandra exited during startup (logs above; all of them in $dir/logs)"
    fi
    if grep -qs 'Starting listening for CQL clients' "$log" && listening "$port" &&
      { [[ -f $superuser ]] || grep -qs "Created default superuser role" "$log"; }; then
      touch "$superuser"
      break
    fi
    if ((SECONDS - start >= timeout)); then
      show_logs "$dir"
      stop "$dir"
      die "Cassandra did not accept CQL clients on $LISTEN_ADDRESS:$port within $timeout s (logs above; all of them in $dir/logs). On a busy machine, raise CASSANDRA_START_TIMEOUT"
    fi
    sleep 0.5
  done
  log "ready in $((SECONDS - start)) s (pid $pid)"
  echo "$LISTEN_ADDRESS:$port"
}

show_logs() {
  local dir=$1 file
  for file in "$dir/logs/stdout.log" "$dir/logs/system.log"; do
    [[ -s $file ]] || continue
    log "last lines of $file:"
    tail -n 40 "$file" >&2
  done
}

# --- stop ------------------------------------------------------------------------------------

stop() {
  [[ $# -eq 1 ]] || usage
  local dir=$1 pid i
  [[ -d $dir ]] || { log "no $dir; nothing to stop"; return 0; }
  dir=$(cd "$dir" && pwd)
  pid=$(running_pid "$dir")
  if [[ -z $pid ]]; then
    rm -f "$dir/cassandra.pid"
    return 0
  fi
  # SIGTERM runs Cassandra's shutdown hook (flushes and closes the commit log).
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid did not stop within 30 s of SIGTERM; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$dir/cassandra.pid"
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
