#!/usr/bin/env bash
# Installs every build and test dependency of trainprof from Debian 12's archive. Idempotent:
# packages already installed are left alone, and apt-get update runs only when something is
# missing. Run as root, or as a user with sudo.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libfmt-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libisal-dev libpng-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libgloo-dev
  libopenmpi-dev openmpi-bin
  python3-dev pybind11-dev python3-torch python3-numpy python3-pandas python3-pytest
  python3-pip python3-setuptools python3-wheel python3-venv patchelf
  clang clang-format
  chromium tmux
  dataset-fashion-mnist
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
