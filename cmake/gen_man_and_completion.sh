#!/usr/bin/env bash
# Build step: man pages and bash completion from the program's own --help, so they cannot drift.
#   gen_man_and_completion.sh GPUDOCTOR OUT_DIR VERSION
# Writes OUT_DIR/man/gpudoctor.1 and gpudoctor-<command>.1 for every subcommand (help2man), and
# OUT_DIR/completion/gpudoctor (bash: subcommands, then each one's options).
set -euo pipefail
bin=$1 out=$2 version=$3
command -v help2man >/dev/null || { echo "gen_man_and_completion: help2man missing (scripts/install-deps.sh)" >&2; exit 1; }
rm -rf "$out/man" "$out/completion" "$out/wrap"
mkdir -p "$out/man" "$out/completion" "$out/wrap"

# Subcommands and their one-line descriptions: the lines under "Subcommands:" in --help.
mapfile -t lines < <("$bin" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print} on && /^$/{on=0}')
[ ${#lines[@]} -gt 0 ] || { echo "gen_man_and_completion: no subcommands in $bin --help" >&2; exit 1; }
commands=()
for l in "${lines[@]}"; do commands+=("$(awk '{print $1}' <<<"$l")"); done

h2m=(help2man --no-info --no-discard-stderr --version-string="$version" --source=gpudoctor
     --manual="gpudoctor manual")
"${h2m[@]}" --name="tell whether NVIDIA GPUs really work, and why not" \
  --include=/dev/stdin "$bin" -o "$out/man/gpudoctor.1" <<SEE
[SEE ALSO]
$(for c in "${commands[@]}"; do printf '.BR gpudoctor-%s (1),\n' "$c"; done)
and /usr/share/doc/gpudoctor for the guides.
SEE
for l in "${lines[@]}"; do
  c=$(awk '{print $1}' <<<"$l")
  desc=$(sed -E 's/^ +[a-z-]+ +//; s/[.:;] .*$//; s/\.$//' <<<"$l")
  # help2man runs a program; the subcommand is one through a two-line wrapper.
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$bin" "$c" >"$out/wrap/gpudoctor-$c"
  chmod +x "$out/wrap/gpudoctor-$c"
  "${h2m[@]}" --name="${desc:-gpudoctor $c}" "$out/wrap/gpudoctor-$c" -o "$out/man/gpudoctor-$c.1"
  sed -i "s|$out/wrap/||g" "$out/man/gpudoctor-$c.1"
done
rm -rf "$out/wrap"

# Bash completion: the subcommand first, then that subcommand's options.
{
  echo "# bash completion for gpudoctor, generated from its --help at build time."
  echo "_gpudoctor() {"
  echo '  local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i'
  echo '  for ((i = 1; i < COMP_CWORD; i++)); do [[ ${COMP_WORDS[i]} != -* ]] && { cmd=${COMP_WORDS[i]}; break; }; done'
  echo '  local opts'
  echo '  case $cmd in'
  echo "    '') opts='${commands[*]} --help --version' ;;"
  for c in "${commands[@]}"; do
    opts=$("$bin" "$c" --help | grep -E '^ +-' | grep -oE '(^|[ ,])--?[A-Za-z0-9][A-Za-z0-9-]*' \
           | tr -d ' ,' | sort -u | tr '\n' ' ')
    echo "    $c) opts='${opts% }' ;;"
  done
  echo '  esac'
  echo '  if [[ $cur == -* || -z $cmd ]]; then'
  echo '    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")'
  echo '  else'
  echo '    mapfile -t COMPREPLY < <(compgen -f -- "$cur")'
  echo '  fi'
  echo '}'
  echo 'complete -o filenames -F _gpudoctor gpudoctor'
} >"$out/completion/gpudoctor"
echo "gen_man_and_completion: ${#commands[@]} commands: man pages and bash completion in $out"
