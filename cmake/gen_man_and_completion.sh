#!/usr/bin/env bash
# Build step: man pages and bash completion from the program's own CLI definitions, so they cannot
# drift (`gpudoctor --dump-cli`, src/cli/commands.hpp).
#   gen_man_and_completion.sh GPUDOCTOR OUT_DIR VERSION
# Writes OUT_DIR/man/gpudoctor.1 and gpudoctor-<command>.1 for every command (help2man, from
# --help), and OUT_DIR/completion/gpudoctor (bash).
set -euo pipefail
bin=$1 out=$2 version=$3
command -v help2man >/dev/null || { echo "gen_man_and_completion: help2man missing (scripts/install-deps.sh)" >&2; exit 1; }
rm -rf "$out/man" "$out/completion" "$out/wrap"
mkdir -p "$out/man" "$out/completion" "$out/wrap"

# The commands and their one-line summaries, from the command table.
mapfile -t lines < <("$bin" --dump-cli commands)
[ ${#lines[@]} -gt 0 ] || { echo "gen_man_and_completion: no commands from $bin --dump-cli commands" >&2; exit 1; }
commands=()
for l in "${lines[@]}"; do commands+=("${l%%$'\t'*}"); done

h2m=(help2man --no-info --no-discard-stderr --version-string="$version" --source=gpudoctor
     --manual="gpudoctor manual")
"${h2m[@]}" --name="tell whether NVIDIA GPUs really work, and why not" \
  --include=/dev/stdin "$bin" -o "$out/man/gpudoctor.1" <<SEE
[SEE ALSO]
$(for c in "${commands[@]}"; do printf '.BR gpudoctor-%s (1),\n' "$c"; done)
and /usr/share/doc/gpudoctor for the guides.
SEE
for l in "${lines[@]}"; do
  c=${l%%$'\t'*} desc=${l#*$'\t'}
  # help2man runs a program; the command is one through a two-line wrapper.
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$bin" "$c" >"$out/wrap/gpudoctor-$c"
  chmod +x "$out/wrap/gpudoctor-$c"
  "${h2m[@]}" --name="${desc:-gpudoctor $c}" "$out/wrap/gpudoctor-$c" -o "$out/man/gpudoctor-$c.1"
  sed -i "s|$out/wrap/||g" "$out/man/gpudoctor-$c.1"
done
rm -rf "$out/wrap"

"$bin" --dump-cli bash >"$out/completion/gpudoctor"
echo "gen_man_and_completion: ${#commands[@]} commands: man pages and bash completion in $out"
