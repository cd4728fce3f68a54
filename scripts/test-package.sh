#!/usr/bin/env bash
# Builds the Debian package from an existing build (no rebuild), installs it on this machine with
# apt, uses it, and removes it again: gpudoctor --version, demo, the kubelet client module (it
# loads, and gRPC's libraries are among the Depends), the man page, the unit
# (systemd-analyze verify), the system user, the service neither enabled nor started; after
# `apt-get remove` nothing of the package is left but its config (dpkg's own list). Needs root.
#   scripts/test-package.sh [BUILD_DIR]      (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
fail() { echo "test-package: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (apt-get install)"
dpkg-query -W -f='${Status}' gpudoctor 2>/dev/null | grep -q "install ok installed" &&
  fail "gpudoctor is already installed here: remove it first"

(cd "$build" && cpack --config CPackConfig.cmake >/dev/null)
deb=$(ls "$build"/package/gpudoctor_*_amd64.deb)
[ "$(echo "$deb" | wc -l)" -eq 1 ] || fail "expected one .deb in $build/package: $deb"
echo "test-package: $(basename "$deb"), $(du -h "$deb" | cut -f1)"
depends=$(dpkg-deb -f "$deb" Depends)
grep -q "libc6" <<<"$depends" || fail "Depends lacks the shared libraries (shlibdeps): $depends"
grep -q "libgrpc++" <<<"$depends" || fail "Depends lacks the kubelet client module's gRPC: $depends"
grep -q "libnvidia-ml1" <<<"$(dpkg-deb -f "$deb" Recommends)" || fail "no Recommends: libnvidia-ml1"

DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "./$deb" >/dev/null
trap 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q gpudoctor >/dev/null 2>&1 || true' EXIT

version=$(/usr/bin/gpudoctor --version)
grep -Eq "^gpudoctor [0-9.]+ \((git [0-9a-f]+|no git commit)" <<<"$version" || fail "--version: $version"
# Output captured before grep: `... | grep -q` under pipefail fails when grep exits on its match
# while the writer still writes (SIGPIPE), as a long man page does.
demo=$(/usr/bin/gpudoctor demo --seconds 60 --scenarios healthy)
grep -q "1 of 1 jobs diagnosed as expected" <<<"$demo" ||
  fail "gpudoctor demo failed"
# The kubelet client module, where the installed program looks for it, loaded: a socket nobody
# listens on is "cannot be reached" (the module's words), not "cannot be loaded".
[ -f /usr/lib/gpudoctor/gpudoctor-kubelet.so ] || fail "no kubelet client module"
ksock=$(mktemp -d)/kubelet.sock
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()" "$ksock"
kerr=$(/usr/bin/gpudoctor status --source sim:healthy --kubelet-socket "$ksock" 2>&1 >/dev/null) ||
  fail "status with a kubelet socket: $kerr"
rm -rf "$(dirname "$ksock")"
grep -q "cannot be reached" <<<"$kerr" || fail "the kubelet client module did not run: $kerr"
page=$(man gpudoctor-diagnose 2>/dev/null || true)
grep -q "gpudoctor diagnose" <<<"$page" || fail "man gpudoctor-diagnose"
for c in $(/usr/bin/gpudoctor --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1}'); do
  [ -f "/usr/share/man/man1/gpudoctor-$c.1.gz" ] || [ -f "/usr/share/man/man1/gpudoctor-$c.1" ] ||
    fail "no man page for $c"
done
[ -f /usr/share/bash-completion/completions/gpudoctor ] || fail "no bash completion"
bash -c 'source /usr/share/bash-completion/completions/gpudoctor && complete -p gpudoctor' >/dev/null ||
  fail "the bash completion does not load"
unit=/lib/systemd/system/gpudoctor.service
[ -f "$unit" ] || unit=/usr/lib/systemd/system/gpudoctor.service
grep -q "^ExecStart=/usr/bin/gpudoctor serve" "$unit" || fail "the unit does not start /usr/bin/gpudoctor"
systemd-analyze verify --man=no "$unit" || fail "systemd-analyze verify $unit"
getent passwd gpudoctor >/dev/null || fail "no system user gpudoctor"
[ ! -e /etc/systemd/system/multi-user.target.wants/gpudoctor.service ] || fail "the service was enabled"
for f in share/gpudoctor/prometheus/gpudoctor.rules.yml share/gpudoctor/grafana/gpudoctor.json \
         share/gpudoctor/prometheus/gpudoctor-fleet.rules.yml \
         share/gpudoctor/grafana/gpudoctor-fleet.json \
         share/gpudoctor/kubernetes/daemonset.yaml share/gpudoctor/container/Containerfile \
         share/doc/gpudoctor/install.md share/doc/gpudoctor/fleet.md; do
  [ -f "/usr/$f" ] || fail "/usr/$f missing"
done
! ls /usr/share/gpudoctor/prometheus/*.test.yml >/dev/null 2>&1 || fail "rule tests installed"
promtool check rules /usr/share/gpudoctor/prometheus/*.rules.yml >/dev/null 2>&1 ||
  fail "the installed rules do not pass promtool check rules"
files=$(dpkg -L gpudoctor | while read -r p; do [ -f "$p" ] && echo "$p"; done)

DEBIAN_FRONTEND=noninteractive apt-get remove -y -q gpudoctor >/dev/null
left=$(for p in $files; do [ -e "$p" ] && ! dpkg-query -W -f='${Conffiles}' gpudoctor 2>/dev/null | grep -q " $p " && echo "$p"; done || true)
[ -z "$left" ] || fail "left after remove: $left"
! command -v gpudoctor >/dev/null || fail "gpudoctor still on PATH after remove"
echo "test-package: installed, --version ($version), demo, man, completion, unit verified," \
     "user created, service not enabled; removed: $(wc -w <<<"$files") files gone"
