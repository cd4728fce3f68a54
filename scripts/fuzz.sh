#!/usr/bin/env bash
# Builds the libFuzzer targets (build preset `fuzz`: the fuzz targets of the clang-asan build, clang
# -O2 with ASan, UBSan and libFuzzer's coverage, build/clang-asan; CI has built them already with
# the tests, so no object is compiled twice) and runs each
# for a bounded time, seeded with the fixtures under tests/data. Fails when any target finds a
# crash, a hang (one input over 10 s), a sanitizer report or a memory blow-up (over 2 GB).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 20, what CI runs: 13 targets, 4.5 min
#                                            of fuzzing after the build
#
# Longer local runs, keeping what was learned between runs:
#   FUZZ_CORPUS=~/gpudoctor-corpus scripts/fuzz.sh 600          # 10 min per target
#   FUZZ_TARGETS="smi_csv generic_csv" scripts/fuzz.sh 3600       # some targets, 1 h each
# A crash leaves its input in the work directory (printed); reproduce it with
#   build/clang-asan/fuzz/fuzz_TARGET CRASH_FILE
# then add the minimized input (fuzz_TARGET -minimize_crash=1 -runs=10000 CRASH_FILE) to a unit
# test. New corpus entries go to a temporary directory (or FUZZ_CORPUS), never into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || {
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2
  exit 2
}
targets="${FUZZ_TARGETS:-smi_csv smi_table dmon dcgmi_dmon dcgm_dump generic_csv capture load prometheus tool_logs wandb json_samples prom_text kineto_trace}"

# The seed corpus of each target: fixture directories, read but never written.
seeds() {
  local logs=tests/data/logs
  case "$1" in
    smi_csv) echo "$logs/smi-csv" ;;
    smi_table) echo "$logs/smi-table" ;;
    dmon) echo "$logs/dmon" ;;
    dcgmi_dmon | dcgm_dump) echo "$logs/dcgm" ;;
    generic_csv) echo "$logs/generic-csv $logs/smi-csv" ;;
    capture) echo "tests/data/captures" ;;
    prometheus) echo "tests/data/prometheus" ;;
    wandb) echo "$logs/wandb" ;;
    json_samples) echo "$logs/json tests/data/prometheus" ;;
    prom_text) echo "$logs/prom-text" ;;
    kineto_trace) echo "tests/data/traces" ;;
    tool_logs) echo "$logs/tools" ;;
    load) echo "$logs/smi-csv $logs/smi-table $logs/dmon $logs/dcgm $logs/generic-csv" ;;
    *)
      echo "fuzz.sh: unknown target $1" >&2
      exit 2
      ;;
  esac
}

for t in $targets; do seeds "$t" >/dev/null; done  # an unknown name stops here

echo "== fuzz: configure and build (preset clang-asan, targets fuzzers)"
cmake --preset clang-asan >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

work="$(mktemp -d "${TMPDIR:-/tmp}/gpudoctor-fuzz.XXXXXX")"
corpus_root="${FUZZ_CORPUS:-$work/corpus}"
failed=()
for t in $targets; do
  corpus="$corpus_root/$t"
  mkdir -p "$corpus" "$work/artifacts"
  echo "== fuzz: $t for ${seconds} s (seeds: $(seeds "$t"))"
  log="$work/$t.log"
  # shellcheck disable=SC2046 # the seed directories are separate words on purpose
  if build/clang-asan/fuzz/"fuzz_$t" "$corpus" $(seeds "$t") -max_total_time="$seconds" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t-" >"$log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" | tr '\n' ' ' || true
    echo
  else
    echo "fuzz: $t FAILED; its log:"
    tail -n 60 "$log"
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}; inputs in $work/artifacts:" >&2
  ls -l "$work/artifacts" >&2 || true
  exit 1
fi
rm -rf "$work"
echo "fuzz: all targets ran ${seconds} s without a finding"
