# Ports for the scripts that run the tests' servers as local processes (scripts/cassandra.sh,
# elasticsearch.sh, keycloak.sh), which source this file. Needs their die(). The address is
# $LISTEN_ADDRESS, which a script sets to the ADDRESS its `start` was given (default 127.0.0.1).

# Dies unless $LISTEN_ADDRESS is one of this machine's addresses: no server listens on an address
# the machine does not have, and a connection test there would be answered, or not, by another
# host. The real node's host address appears only once that node runs. One route lookup, which the
# kernel answers with "local" for the machine's own addresses (127.0.0.0/8 among them): a dump of
# every address (`ip addr`) can be interrupted by addresses that other processes add meanwhile.
require_local_address() {
  local address=${LISTEN_ADDRESS:-127.0.0.1} route
  route=$(ip route get "$address" 2>/dev/null) || route=
  [[ $route == local\ * ]] && return 0
  die "address $address is not on this machine: start the real node first (sudo npm run cluster:up -- --real-node), which adds its host address 172.31.254.1, or give an address that \`ip addr\` lists"
}

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
