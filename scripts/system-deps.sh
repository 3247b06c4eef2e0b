#!/usr/bin/env bash
# System packages the tests use from Debian: nginx (the web server the Website pods run, to check
# the page locally), Chromium (to look at that page as a person would), fonts for emoji and CJK
# titles, so the screenshots show them as a person's browser would, jq (the shell operator
# renders every object with it), shellcheck (actionlint runs it on the workflows' run: scripts
# when it is on PATH), and Redis (Argo CD's cache, harness/argocd/argocd.ts). Installs what is missing.
#
#   scripts/system-deps.sh [package ...]   only these (Debian names), e.g. redis-server; default all
set -euo pipefail
shopt -s inherit_errexit

# Whether a package's program (or files) is here already.
present() {
  case "$1" in
    nginx-light) command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] ;;
    chromium) command -v chromium >/dev/null 2>&1 ;;
    fonts-noto-color-emoji) [[ -d /usr/share/fonts/truetype/noto ]] ;;
    fonts-droid-fallback) [[ -d /usr/share/fonts/truetype/droid ]] ;;
    jq) command -v jq >/dev/null 2>&1 ;;
    shellcheck) command -v shellcheck >/dev/null 2>&1 ;;
    redis-server) command -v redis-server >/dev/null 2>&1 ;;
    libfaketime) [[ -f /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ]] ;;
    *) echo "[system-deps] error: unknown package '$1'" >&2; exit 2 ;;
  esac
}

wanted=("$@")
[[ ${#wanted[@]} -eq 0 ]] && wanted=(nginx-light chromium fonts-noto-color-emoji fonts-droid-fallback jq shellcheck redis-server libfaketime)
missing=()
for package in "${wanted[@]}"; do present "$package" || missing+=("$package"); done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]] && ! command -v sudo >/dev/null 2>&1; then
  echo "[system-deps] error: the tests need ${missing[*]}; install them (Debian: apt-get install ${missing[*]}) and rerun" >&2
  exit 1
fi
sudo=$([[ $(id -u) -eq 0 ]] || echo sudo)
echo "[system-deps] installing ${missing[*]} from Debian" >&2
$sudo apt-get update -qq
# The nginx and redis packages would start system services; the tests start their own.
echo 'exit 101' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
$sudo chmod +x /usr/sbin/policy-rc.d
trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
