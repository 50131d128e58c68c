#!/usr/bin/env bash
# Installs every system package ravlt needs, from Debian. Idempotent.
# This is the only place in the project where packages are named.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  libopenblas-openmp-dev liblapacke-dev
  libopencv-dev
  libcmocka-dev
  libcjson-dev
  libzip-dev
  libcurl4-openssl-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
  opencv-doc
  xvfb xauth
  help2man
  python3 python3-numpy python3-pytest
  libmicrohttpd-dev
  chromium chromium-driver python3-selenium
  python3-pip python3-venv python3-setuptools python3-wheel
  wrk
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
