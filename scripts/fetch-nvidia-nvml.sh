#!/usr/bin/env bash
# Fetches NVIDIA's own NVML from Debian 12's non-free section (libnvidia-ml1: the driver's
# libnvidia-ml.so.1; libnvidia-ml-dev: NVIDIA's nvml.h) WITHOUT touching the machine's apt
# sources: apt runs with a source list, package lists and cache of its own under DEST, and the
# .debs are unpacked with dpkg -x. The tests in tests/nvml_real/ use the result.
#   scripts/fetch-nvidia-nvml.sh [DEST]      (default: build/nvidia-nvml)
# DEST/debs keeps the downloaded .debs, so a re-run fetches nothing; DEST/root is the unpacked
# tree (usr/include/nvml.h, usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-build/nvidia-nvml}
mirror=${GPUDOCTOR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=(libnvidia-ml1 libnvidia-ml-dev)
mkdir -p "$dest/debs"
dest=$(cd "$dest" && pwd)

have_all() {
  for p in "${packages[@]}"; do compgen -G "$dest/debs/${p}_*.deb" >/dev/null || return 1; done
}

if ! have_all; then
  apt_dir="$dest/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  cat >"$apt_dir/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm non-free
SRC
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
            -o "Dir::State::status=/var/lib/dpkg/status" -o "APT::Sandbox::User=root"
            -o "Debug::NoLocking=1" -q)
  echo "fetch-nvidia-nvml: apt-get update (bookworm non-free only)"
  apt-get "${apt_opts[@]}" update >/dev/null
  # The 535 series; the library and its header come from the same source package.
  (cd "$dest/debs" && apt-get "${apt_opts[@]}" download "${packages[@]}")
  rm -rf "$apt_dir"
fi

# Unpack again only when the .debs changed (ctest's fixture calls this before each run).
stamp=$(cd "$dest/debs" && ls -l --time-style=+%s -- *.deb | md5sum)
if [ "$(cat "$dest/root/.debs" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$dest/root.new"
  mkdir -p "$dest/root.new"
  for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root.new"; done
  echo "$stamp" >"$dest/root.new/.debs"
  rm -rf "$dest/root"
  mv "$dest/root.new" "$dest/root"
fi
lib=$(find "$dest/root" -name 'libnvidia-ml.so.1' | head -n1)
header=$(find "$dest/root" -name nvml.h | head -n1)
[ -n "$lib" ] && [ -n "$header" ] || { echo "fetch-nvidia-nvml: library or header missing" >&2; exit 1; }
echo "fetch-nvidia-nvml: $(basename "$dest"/debs/libnvidia-ml1_*.deb) -> $lib"
