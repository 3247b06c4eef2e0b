#!/usr/bin/env bash
# System packages the tests use from Debian: nginx (the web server the Website pods run, to check
# the page locally), Chromium (to look at that page as a person would), fonts for emoji and CJK
# titles, so the screenshots show them as a person's browser would, jq (the shell operator
# renders every object with it), and shellcheck (actionlint runs it on the workflows' run: scripts
# when it is on PATH). Installs what is missing.
set -euo pipefail
shopt -s inherit_errexit

missing=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[[ -d /usr/share/fonts/truetype/noto ]] || missing+=(fonts-noto-color-emoji)
[[ -d /usr/share/fonts/truetype/droid ]] || missing+=(fonts-droid-fallback)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]] && ! command -v sudo >/dev/null 2>&1; then
  echo "[system-deps] error: the tests need ${missing[*]}; install them (Debian: apt-get install ${missing[*]}) and rerun" >&2
  exit 1
fi
sudo=$([[ $(id -u) -eq 0 ]] || echo sudo)
echo "[system-deps] installing ${missing[*]} from Debian" >&2
$sudo apt-get update -qq
# The nginx package would start a system nginx on port 80; the tests start their own.
echo 'exit 101' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
$sudo chmod +x /usr/sbin/policy-rc.d
trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
