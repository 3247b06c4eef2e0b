# Ports for the scripts that run the tests' servers as local processes (scripts/cassandra.sh,
# elasticsearch.sh, keycloak.sh), which source this file. Needs their die(). The address is
# $LISTEN_ADDRESS, which a script sets to the ADDRESS its `start` was given (default 127.0.0.1).

# Whether something accepts TCP connections on $LISTEN_ADDRESS:$1.
listening() { (exec 3<>"/dev/tcp/${LISTEN_ADDRESS:-127.0.0.1}/$1") 2>/dev/null; }

# A port in 20000–32767 (below Linux's ephemeral range) that nothing listens on, other than $1 when
# given (a port the caller is about to take).
free_port() {
  local port tries
  for ((tries = 0; tries < 100; tries++)); do
    port=$((20000 + RANDOM % 12768))
    [[ $port == "${1:-}" ]] && continue
    listening "$port" || { echo "$port"; return; }
  done
  die "found no free TCP port on ${LISTEN_ADDRESS:-127.0.0.1}"
}
