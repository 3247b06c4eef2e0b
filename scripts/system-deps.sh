#!/usr/bin/env bash
# Installs from Debian the system programs of the given lanes of `npm test` or scripts, as
# scripts/system-deps.txt lists them, when missing; a no-op in milliseconds when all are there.
#
#   scripts/system-deps.sh GROUP ...   e.g. `trace`, `image`; `all` for every group
#
# Lanes run side by side and each installs its own list, so installs take one lock (apt's would
# refuse a second apt-get instead of waiting for it).
set -euo pipefail
shopt -s inherit_errexit
LIST="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/system-deps.txt"

log() { printf '[system-deps] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $# -gt 0 ]] || die "name the lanes or scripts whose programs to install (groups in $LIST), or 'all'"
groups=" $* "

# Whether a program (a command on PATH, /usr/sbin and /sbin included, or an absolute file) is here.
present() {
  if [[ $1 == /* ]]; then [[ -e $1 ]]; else PATH=$PATH:/usr/sbin:/sbin command -v "$1" >/dev/null 2>&1; fi
}

missing_packages() {
  local program package rest group
  while read -r program package rest; do
    [[ -z $program || $program == \#* ]] && continue
    for group in $rest; do
      if [[ $groups == *" all "* || $groups == *" $group "* ]]; then
        present "$program" || echo "$package"
        break
      fi
    done
  done <"$LIST"
}

mapfile -t missing < <(missing_packages | sort -u)
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]] && ! command -v sudo >/dev/null 2>&1; then
  die "needs ${missing[*]}; install them (Debian: apt-get install ${missing[*]}) and rerun"
fi
sudo=$([[ $(id -u) -eq 0 ]] || echo sudo)
exec 9>"${TMPDIR:-/tmp}/website-stack-system-deps.lock"
flock 9
# Another lane may have installed them while this one waited for the lock.
mapfile -t missing < <(missing_packages | sort -u)
[[ ${#missing[@]} -eq 0 ]] && exit 0
log "installing ${missing[*]} from Debian (for: $*)"
$sudo apt-get update -qq
# The nginx, redis and supervisor packages would start system services; the tests start their own.
echo 'exit 101' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
$sudo chmod +x /usr/sbin/policy-rc.d
trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
