#!/usr/bin/env bash
# install-deps.sh — installs the Debian packages servprof needs to build, test
# and run its demo. Idempotent: installs only what is missing. Needs root (or
# sudo) only when something is missing.
set -euo pipefail
PKGS=(build-essential cmake pkg-config git libsqlite3-dev sqlite3 libjansson-dev
      libmicrohttpd-dev python3 python3-setuptools python3-pip)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
