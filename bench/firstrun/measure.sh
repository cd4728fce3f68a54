#!/usr/bin/env bash
# Time from `git clone` to the first line of `make demo`'s demo output, in a fresh clone, without
# the shared compiler cache (a new user's first run). Packages are assumed installed (the
# measurement is the build; `scripts/install-deps.sh` only checks them).
#   bench/firstrun/measure.sh REPO COMMIT WORKDIR
set -euo pipefail
repo=$1 commit=$2 work=$3
unset CCACHE_DIR CMAKE_CXX_COMPILER_LAUNCHER CMAKE_C_COMPILER_LAUNCHER
rm -rf "$work"
start=$(date +%s.%N)
git clone -q --no-checkout "$repo" "$work"
git -C "$work" checkout -q "$commit"
cd "$work"
first=""
while IFS= read -r line; do
  if [[ $line == "gpudoctor demo: "* ]]; then first=$(date +%s.%N); break; fi
done < <(make demo 2>&1)
[ -n "$first" ] || { echo "measure: the demo never started" >&2; exit 1; }
echo "measure: $commit: $(echo "$first - $start" | bc) s from git clone to the demo's first line" \
     "($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
