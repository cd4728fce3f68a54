#!/usr/bin/env bash
# Installs the Debian 12 packages gpudoctor needs to build and test (`install-deps.sh build`: only
# those the release build needs). Idempotent: when every package is present it only checks and
# returns (well under a second).
set -euo pipefail

# What configuring and building the release preset needs (`make demo` installs only these).
build_packages=(
  build-essential cmake ninja-build pkg-config
  libcli11-dev libfmt-dev nlohmann-json3-dev libsqlite3-dev libcpp-httplib-dev libncurses-dev
  libgtest-dev libgmock-dev libbenchmark-dev libssl-dev libcrypt-dev python3 help2man
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  zlib1g-dev liblzma-dev libzstd-dev
)
# Everything else CI and `make test` use: clang, the test tools, packaging and the image.
packages=(
  "${build_packages[@]}"
  clang clang-format libclang-rt-14-dev python3-jsonschema chromium
  openssl python3-yaml prometheus wrk tmux
  man-db buildah podman dpkg-dev file systemd
)
if [ "${1:-}" = build ]; then packages=("${build_packages[@]}"); fi

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

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when an install from the current ones fails.
if ! $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
