#!/usr/bin/env bash
# A real Keycloak as a plain local process (no containers): the OIDC provider of the trace stack's
# tests, which put oauth2-proxy in front of Jaeger's UI and query API as the production query pod
# does.
#
#   scripts/keycloak.sh install             fetch and build Keycloak (once); print its folder
#   scripts/keycloak.sh start DIR [PORT] [ADDRESS]
#                                           start a server with all its state under DIR, HTTP on
#                                           ADDRESS:PORT (default 127.0.0.1:8080); wait until it is
#                                           ready; print one line of JSON (below)
#   scripts/keycloak.sh stop DIR            stop the server started in DIR (SIGTERM, then SIGKILL)
#
# `install` fetches the distribution zip (org.keycloak:keycloak-quarkus-dist) from Maven Central
# with Maven, unzips it into the cache outside the repo, and runs `kc.sh build` there once with
# scripts/keycloak/keycloak.conf: the Quarkus augmentation (over a minute) that `start-dev` would
# otherwise do on a first start, writing into the distribution's lib/. The cache is keyed by the
# version and a hash of that file, and nothing writes to it after `install`.
# `start` runs `kc.sh start --optimized` with the same file, and with Keycloak's home pointed at
# DIR/home (-Dkc.home.dir): links to the cached lib/, providers/ and themes/, and a data/ of its
# own (the H2 database, the realms to import), so that two DIRs never share state. The management
# port (/health/ready, which `start` waits for) is a free one, so servers in different DIRs never
# clash. A first start in a DIR creates the database and imports the realms; later ones skip both.
#
# The realms are scripts/keycloak/realm-*.json, rendered into DIR/home/data/import:
#   website-stack  client "jaeger" (confidential, standard flow, PKCE S256, an audience mapper so
#                  that tokens carry aud "jaeger", which oauth2-proxy checks), client "jaeger-cli"
#                  (test-only: public, password grant, aud "jaeger": bearer tokens for the query
#                  API), users alice@example.com and mallory@example.org (emails verified)
#   other          a second issuer: client "jaeger-cli" and user eve@example.com, for tokens that
#                  are right in every way but their issuer (and so their signing key)
# The client secret and the passwords (and the admin's) are random, made at the first start and
# kept in DIR/credentials.json (mode 0600), never in the repository. `start` prints
#   {"url":…,"issuerUrl":"http://127.0.0.1:PORT/realms/website-stack","otherIssuerUrl":…,
#    "clientId":"jaeger","tokenClientId":"jaeger-cli","credentialsFile":"DIR/credentials.json",
#    "adminConsoleUrl":…,"caFile":null}
# With KEYCLOAK_HTTPS_PORT set, it also serves HTTPS on ADDRESS:KEYCLOAK_HTTPS_PORT, as a provider
# does in production, with a certificate for ADDRESS signed by a CA of its own (made with openssl
# under DIR/pki once; caFile is that CA's PEM), and the issuer is https://ADDRESS[:KEYCLOAK_HTTPS_PORT]
# (port 443, which needs root or CAP_NET_BIND_SERVICE, is left out of the URL).
# A bearer token for alice (the access token of the password grant):
#   curl -s -d grant_type=password -d client_id=jaeger-cli -d username=alice \
#     --data-urlencode "password=$(jq -r .users.allowed.password DIR/credentials.json)" \
#     http://127.0.0.1:PORT/realms/website-stack/protocol/openid-connect/token | jq -r .access_token
#
# Needs a JDK (Keycloak supports 17, 21 and 25; here the Temurin 25 JDK at
# /usr/lib/jvm/temurin-25-jdk-amd64, or KEYCLOAK_JAVA_HOME; JAVA_HOME is left to Cassandra's Java
# 17), jq, curl, and for `install` Maven (mvn) and unzip. Environment: KEYCLOAK_REDIRECT_URIS
# (the client "jaeger"'s allowed redirect URIs, space-separated; default
# http://127.0.0.1/oauth2/callback, which Keycloak matches on any port of the loopback address, as
# RFC 8252 asks; a later start with other URIs updates them), KEYCLOAK_START_TIMEOUT (seconds,
# default 300: a first start creates the database schema), JAVA_OPTS_KC_HEAP (kc.sh's heap flags;
# default -Xms64m -Xmx512m), JAVA_OPTS_APPEND (more JVM flags; default -XX:TieredStopAtLevel=1,
# the client compiler only). On a shared machine, `nice -n 19 scripts/keycloak.sh ...`.
set -euo pipefail
# Command substitutions stop on errors too (bash does not inherit set -e into them otherwise).
shopt -s inherit_errexit

KEYCLOAK_VERSION=26.7.3
# The plugin that copies the zip, pinned so that Maven never looks up "the newest" one.
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
DEFAULT_JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
REALM=website-stack
OTHER_REALM=other

CONFIG_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/keycloak"
CONF="$CONFIG_DIR/keycloak.conf"
CACHE_DIR="${WEBSITE_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/website-stack}"

log() { printf '[keycloak] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# listening, free_port; server_pki
# shellcheck source=scripts/lib/local-ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-ports.sh"
# shellcheck source=scripts/lib/local-pki.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-pki.sh"
# curl's options for the server's CA, when it serves HTTPS (start sets them).
CURL_CA=()

usage() {
  sed -n '6,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# The JDK that runs Keycloak (and its build).
java_home() {
  local home=${KEYCLOAK_JAVA_HOME:-$DEFAULT_JAVA_HOME} version major
  [[ -x $home/bin/java ]] ||
    die "no JDK at $home (KEYCLOAK_JAVA_HOME, default $DEFAULT_JAVA_HOME): Keycloak $KEYCLOAK_VERSION runs here on Temurin 25. Install it (Adoptium's Debian repository: apt-get install temurin-25-jdk) or set KEYCLOAK_JAVA_HOME to a JDK 17, 21 or 25"
  version=$("$home/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
  major=${version#1.}
  [[ $major =~ ^[0-9]+$ && $major -ge 17 ]] ||
    die "$home/bin/java is Java ${version:-of unknown version}; Keycloak $KEYCLOAK_VERSION needs 17, 21 or 25 (set KEYCLOAK_JAVA_HOME)"
  echo "$home"
}

# Where `install` puts Keycloak: keyed by its configuration too (less comments and blank lines),
# since build-time options (db, health-enabled) are baked into the image `start --optimized` runs.
home_dir() {
  [[ -f $CONF ]] || die "Keycloak's configuration is missing: $CONF (restore it from git)"
  echo "$CACHE_DIR/keycloak-$KEYCLOAK_VERSION-$(grep -Ev '^[[:space:]]*(#|$)' "$CONF" | sha256sum | cut -c1-12)"
}

# --- install ---------------------------------------------------------------------------------

install() {
  bash "$(dirname "${BASH_SOURCE[0]}")/system-deps.sh" keycloak # its programs from Debian, when missing
  local home
  home=$(home_dir)
  # One install at a time per cache: concurrent callers wait, then reuse the result.
  mkdir -p "$CACHE_DIR"
  exec 8>"$CACHE_DIR/.keycloak.lock"
  flock 8
  if [[ -f "$home/.complete" ]]; then
    echo "$home"
    return
  fi
  local java tmp="$home.tmp.$$" start=$SECONDS ok=0
  java=$(java_home)
  rm -rf "$tmp" "$home"
  mkdir -p "$tmp"
  log "fetching Keycloak $KEYCLOAK_VERSION from Maven Central (once; cached at $home)"
  (cd "$tmp" && mvn -B -q -Dstyle.color=never "$DEPENDENCY_PLUGIN:copy" \
    "-Dartifact=org.keycloak:keycloak-quarkus-dist:$KEYCLOAK_VERSION:zip" -DoutputDirectory="$tmp" >"$tmp/mvn.log" 2>&1) || ok=$?
  local zip="$tmp/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip"
  if [[ $ok != 0 || ! -f $zip ]]; then
    tail -n 30 "$tmp/mvn.log" >&2 || true
    rm -rf "$tmp"
    die "fetching Keycloak $KEYCLOAK_VERSION with Maven failed (exit $ok; its output is above). Check access to Maven Central (https://repo1.maven.org/maven2, or the mirror in ~/.m2/settings.xml), then rerun: scripts/keycloak.sh install"
  fi
  unzip -q "$zip" -d "$tmp" || { rm -rf "$tmp"; die "could not unpack $zip (disk full?); rerun: scripts/keycloak.sh install"; }
  # The zip holds keycloak-VERSION/; that folder becomes the cached home, built where it stays.
  mv "$tmp/keycloak-$KEYCLOAK_VERSION" "$home"
  rm -rf "$tmp"
  log "building Keycloak's optimized server image (once; over a minute)"
  ok=0
  JAVA_HOME=$java "$home/bin/kc.sh" "--config-file=$CONF" build >"$home/build.log" 2>&1 || ok=$?
  if [[ $ok != 0 ]]; then
    tail -n 30 "$home/build.log" >&2 || true
    rm -rf "$home"
    die "\`kc.sh build\` failed (exit $ok; its output is above). Check $CONF, then rerun: scripts/keycloak.sh install"
  fi
  touch "$home/.complete"
  log "installed Keycloak $KEYCLOAK_VERSION ($(du -sh "$home" | cut -f1)) in $((SECONDS - start)) s"
  echo "$home"
}

# --- start -----------------------------------------------------------------------------------

# The pid in DIR/keycloak.pid when that process is alive and is this DIR's Keycloak (kc.sh).
running_pid() {
  local dir=$1 pid
  [[ -f "$dir/keycloak.pid" ]] || return 0
  pid=$(cat "$dir/keycloak.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  if grep -qaF -- "-Dkc.home.dir=$dir/home" "/proc/$pid/cmdline" 2>/dev/null; then
    echo "$pid"
  fi
}

# 48 random hex digits: a secret or password with nothing to escape anywhere.
random_secret() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }

# DIR/credentials.json, made once per DIR. The user names and emails are the realm files'; the
# roles (allowed, outside, otherIssuer) are what the tests ask for.
write_credentials() {
  local file=$1
  (
    umask 077
    jq -n --arg admin "$(random_secret)" --arg secret "$(random_secret)" --arg alice "$(random_secret)" \
      --arg mallory "$(random_secret)" --arg eve "$(random_secret)" --arg realm "$REALM" --arg other "$OTHER_REALM" '{
        admin: {username: "admin", password: $admin},
        clientSecret: $secret,
        users: {
          allowed: {realm: $realm, username: "alice", email: "alice@example.com", password: $alice},
          outside: {realm: $realm, username: "mallory", email: "mallory@example.org", password: $mallory},
          otherIssuer: {realm: $other, username: "eve", email: "eve@example.com", password: $eve}
        }
      }' >"$file.tmp"
  )
  mv "$file.tmp" "$file"
}

# The allowed redirect URIs, as a JSON array.
redirect_uris() {
  local uris
  read -r -a uris <<<"${KEYCLOAK_REDIRECT_URIS:-http://127.0.0.1/oauth2/callback}"
  [[ ${#uris[@]} -gt 0 ]] || die "KEYCLOAK_REDIRECT_URIS is empty; give at least one URI (e.g. http://127.0.0.1/oauth2/callback)"
  jq -cn '$ARGS.positional' --args "${uris[@]}"
}

# Renders scripts/keycloak/realm-NAME.json into DIR/home/data/import/NAME-realm.json: each
# "@KEY@" in a string becomes a secret from the credentials (@jaeger_client_secret@,
# @<username>_password@), and the array element "@redirect_uris@" the allowed redirect URIs.
render_realms() {
  local dir=$1 redirects=$2 values realm
  values=$(jq -c '{jaeger_client_secret: .clientSecret} + ([.users[] | {key: "\(.username)_password", value: .password}] | from_entries)' "$dir/credentials.json")
  mkdir -p "$dir/home/data/import"
  for realm in "$REALM" "$OTHER_REALM"; do
    (
      umask 077
      jq --argjson redirects "$redirects" --argjson values "$values" '
        walk(if type == "array" then map(if . == "@redirect_uris@" then $redirects[] else . end) else . end)
        | walk(if type == "string" then gsub("@(?<key>[a-z_]+)@"; $values[.key] // error("no value for @\(.key)@")) else . end)
      ' "$CONFIG_DIR/realm-$realm.json" >"$dir/home/data/import/$realm-realm.json"
    ) || die "could not render $CONFIG_DIR/realm-$realm.json (jq's message is above)"
  done
}

# curl with the admin's bearer token (from a file descriptor, so that it is in no argv).
admin_curl() {
  local token=$1
  shift
  curl -fsS --max-time 30 "${CURL_CA[@]}" -H @<(printf 'Authorization: Bearer %s\n' "$token") "$@"
}

# Sets the client "jaeger"'s redirect URIs in the running server (a realm is imported only once,
# so a later start with other URIs changes them through the admin API).
update_redirect_uris() {
  local dir=$1 url=$2 redirects=$3 token id
  token=$(jq -r '"grant_type=password&client_id=admin-cli&username=\(.admin.username|@uri)&password=\(.admin.password|@uri)"' "$dir/credentials.json" |
    curl -fsS --max-time 30 "${CURL_CA[@]}" -d @- "$url/realms/master/protocol/openid-connect/token" | jq -r .access_token) ||
    die "could not log in to Keycloak's admin API as the admin of $dir/credentials.json"
  id=$(admin_curl "$token" "$url/admin/realms/$REALM/clients?clientId=jaeger" | jq -er '.[0].id') ||
    die "found no client jaeger in the realm $REALM of $url"
  jq -cn --argjson uris "$redirects" '{redirectUris: $uris}' |
    admin_curl "$token" -X PUT -H 'Content-Type: application/json' --data-binary @- "$url/admin/realms/$REALM/clients/$id" ||
    die "could not update the redirect URIs of the client jaeger"
  # The update's result, read back: what the realm now allows.
  [[ $(admin_curl "$token" "$url/admin/realms/$REALM/clients/$id" | jq -c .redirectUris) == "$redirects" ]] ||
    die "the client jaeger's redirect URIs are not $redirects after the update"
}

start() {
  [[ $# -ge 1 && $# -le 3 ]] || usage
  LISTEN_ADDRESS=${3:-127.0.0.1}
  require_local_address
  bash "$(dirname "${BASH_SOURCE[0]}")/system-deps.sh" keycloak # its programs from Debian, when missing
  local dir=$1 port=${2:-8080} timeout=${KEYCLOAK_START_TIMEOUT:-300} https_port=${KEYCLOAK_HTTPS_PORT:-}
  [[ $port =~ ^[0-9]+$ ]] || die "PORT must be a number, not '$port'"
  [[ $https_port =~ ^[0-9]*$ ]] || die "KEYCLOAK_HTTPS_PORT must be a port number, not '$https_port'"
  [[ $timeout =~ ^[0-9]+$ ]] || die "KEYCLOAK_START_TIMEOUT must be a number of seconds, not '$timeout'"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local pid
  pid=$(running_pid "$dir")
  [[ -z $pid ]] || die "a Keycloak already runs from $dir (pid $pid); stop it first: scripts/keycloak.sh stop $dir"
  listening "$port" && die "something already listens on $LISTEN_ADDRESS:$port; choose another PORT"
  [[ -n $https_port ]] && listening "$https_port" &&
    die "something already listens on $LISTEN_ADDRESS:$https_port; choose another KEYCLOAK_HTTPS_PORT"
  local java home redirects management_port
  java=$(java_home)
  redirects=$(redirect_uris)
  home=$(install)
  management_port=$(free_port "$port")

  # DIR/home is Keycloak's home for this DIR: the cached, read-only parts linked in, data/ its own.
  mkdir -p "$dir/home/data" "$dir/logs"
  local part
  for part in lib providers themes; do ln -sfn "$home/$part" "$dir/home/$part"; done
  [[ -f "$dir/credentials.json" ]] || write_credentials "$dir/credentials.json"
  # Imported while the database lacks the realms: at the first start, or after its data/h2 went.
  local import=()
  if [[ ! -f "$dir/home/data/h2/keycloakdb.mv.db" || ! -f "$dir/home/data/.realms-imported" ]]; then
    render_realms "$dir" "$redirects"
    rm -f "$dir/home/data/.realms-imported" "$dir/redirect-uris.json"
    import=(--import-realm)
  fi
  # The previous run's log stays next to this one's.
  [[ -f "$dir/logs/keycloak.log" ]] && mv "$dir/logs/keycloak.log" "$dir/logs/keycloak.previous.log"

  local url="http://$LISTEN_ADDRESS:$port" scheme=http tls=() ca_file=
  if [[ -n $https_port ]]; then
    server_pki "$dir/pki" "website-stack local Keycloak CA" "$LISTEN_ADDRESS" "IP:$LISTEN_ADDRESS,IP:127.0.0.1,DNS:localhost"
    ca_file=$dir/pki/ca.crt
    CURL_CA=(--cacert "$ca_file")
    tls=("--https-port=$https_port" "--https-certificate-file=$dir/pki/tls.crt" "--https-certificate-key-file=$dir/pki/tls.key")
    scheme=https
    url="https://$LISTEN_ADDRESS"
    [[ $https_port == 443 ]] || url+=":$https_port"
  fi
  local start=$SECONDS
  log "starting Keycloak $KEYCLOAK_VERSION in $dir ($url, management 127.0.0.1:$management_port)"
  # Its own session, and no inherited stdout/stderr, so it outlives this script and its caller's
  # pipes; kc.sh stays the session's leader and forwards SIGTERM to its java. The bootstrap admin
  # is created only while the master realm has none (the first start). The hostname fixes the
  # issuer, whatever Host header a client sends.
  # JAVA_OPTS_APPEND: the client compiler only, unless the caller says otherwise; a test's server
  # answers a few logins, and C2's compiles of hot code it never runs for long cost more than they
  # save (to ready: 34 CPU-seconds against 49, in the same 27 s).
  JAVA_HOME=$java JAVA_OPTS_APPEND=${JAVA_OPTS_APPEND:--XX:TieredStopAtLevel=1} \
    KC_BOOTSTRAP_ADMIN_USERNAME=$(jq -r .admin.username "$dir/credentials.json") \
    KC_BOOTSTRAP_ADMIN_PASSWORD=$(jq -r .admin.password "$dir/credentials.json") \
    setsid "$home/bin/kc.sh" "--config-file=$CONF" start --optimized "-Dkc.home.dir=$dir/home" \
    "--http-host=$LISTEN_ADDRESS" "--http-port=$port" "${tls[@]}" "--http-management-port=$management_port" \
    "--hostname=$url" "${import[@]}" \
    </dev/null >"$dir/logs/keycloak.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/keycloak.pid"

  # Ready when the management interface says so (after the realms' import, which runs before) and
  # the realm's OIDC discovery answers. With HTTPS on, the management interface serves HTTPS too.
  while true; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$dir/keycloak.pid"
      show_logs "$dir"
      die "Keycloak exited during startup (its log is above; all of it in $dir/logs/keycloak.log)"
    fi
    if curl -fsS -o /dev/null --max-time 5 "${CURL_CA[@]}" "$scheme://127.0.0.1:$management_port/health/ready" 2>/dev/null &&
      curl -fsS -o /dev/null --max-time 5 "${CURL_CA[@]}" "$url/realms/$REALM/.well-known/openid-configuration" 2>/dev/null; then
      break
    fi
    if ((SECONDS - start >= timeout)); then
      show_logs "$dir"
      stop "$dir"
      die "Keycloak was not ready on $url within $timeout s (its log is above; all of it in $dir/logs/keycloak.log). On a busy machine, raise KEYCLOAK_START_TIMEOUT"
    fi
    sleep 0.5
  done
  touch "$dir/home/data/.realms-imported"
  # The redirect URIs applied last are remembered in DIR; the import applied them at a first start.
  if [[ ! -f "$dir/redirect-uris.json" && ${#import[@]} -gt 0 ]]; then
    echo "$redirects" >"$dir/redirect-uris.json"
  elif [[ $(cat "$dir/redirect-uris.json" 2>/dev/null) != "$redirects" ]]; then
    # A failed start leaves nothing running.
    (update_redirect_uris "$dir" "$url" "$redirects") || { stop "$dir"; die "stopped Keycloak: its redirect URIs could not be set (above)"; }
    echo "$redirects" >"$dir/redirect-uris.json"
    log "set the client jaeger's redirect URIs to $redirects"
  fi
  log "ready in $((SECONDS - start)) s (pid $pid)"
  jq -cn --arg url "$url" --arg realm "$REALM" --arg other "$OTHER_REALM" --arg credentials "$dir/credentials.json" \
    --arg ca "$ca_file" '{
    url: $url,
    issuerUrl: "\($url)/realms/\($realm)",
    otherIssuerUrl: "\($url)/realms/\($other)",
    clientId: "jaeger",
    tokenClientId: "jaeger-cli",
    credentialsFile: $credentials,
    adminConsoleUrl: "\($url)/admin/master/console/",
    caFile: (if $ca == "" then null else $ca end)
  }'
}

show_logs() {
  local file="$1/logs/keycloak.log"
  [[ -s $file ]] || return 0
  log "last lines of $file:"
  tail -n 40 "$file" >&2
}

# --- stop ------------------------------------------------------------------------------------

stop() {
  [[ $# -eq 1 ]] || usage
  local dir=$1 pid i
  [[ -d $dir ]] || { log "no $dir; nothing to stop"; return 0; }
  dir=$(cd "$dir" && pwd)
  pid=$(running_pid "$dir")
  if [[ -z $pid ]]; then
    rm -f "$dir/keycloak.pid"
    return 0
  fi
  # kc.sh passes SIGTERM to its java, whose shutdown closes the database cleanly. The session
  # started by `start` (kc.sh's process group) is gone once both have exited.
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 -- "-$pid" 2>/dev/null; then
    log "Keycloak (pid $pid) did not stop within 30 s of SIGTERM; killing it"
    kill -KILL -- "-$pid" 2>/dev/null || true
    while kill -0 -- "-$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$dir/keycloak.pid"
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
