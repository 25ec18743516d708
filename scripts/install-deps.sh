#!/usr/bin/env bash
# Installs every build, test and oracle dependency from Debian 12 packages.
# Idempotent and quiet: a second run installs nothing and prints one line.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libeigen3-dev libboost-dev libspdlog-dev nlohmann-json3-dev libsocketcan-dev
  libgtest-dev libgmock-dev libbenchmark-dev libgeographiclib-dev libcli11-dev
  libsystemd-dev libsuitesparse-dev libsimbody-dev libssl-dev
  python3 python3-can python3-canmatrix python3-jsonschema can-utils
  gnuplot-nox python3-matplotlib
  python3-distributed python3-dask python3-tqdm python3-psutil util-linux
  clang libclang-rt-14-dev clang-format systemd help2man tmux
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
