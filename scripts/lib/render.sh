# Configuration templates for the scripts that run the tests' servers as local processes
# (scripts/cassandra.sh, elasticsearch.sh), which source this file.

# Prints file $1 with each ${NAME} of the given NAME=VALUE pairs replaced (and nothing else).
render() {
  local text pair
  text=$(<"$1")
  shift
  for pair in "$@"; do
    text=${text//"\${${pair%%=*}}"/${pair#*=}}
  done
  printf '%s\n' "$text"
}
