#!/usr/bin/env bash
# Runs the container image's own binary as the image's own user and checks that
# `gpudoctor serve --source sim:healthy` answers /metrics and /healthz, and that its gRPC client
# (the kubelet's pod-resources API) runs: `status` against a socket nobody listens on must say
# in a note that it cannot be reached, and exit 0. With `podman run` where
# the sandbox allows it; else (no cgroups, as on the CI machine) from the image's root, mounted
# by buildah, under chroot with the image's USER. Needs root for the fallback.
#   scripts/test-image.sh [TAG]      (default gpudoctor:<version of build/release>)
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-gpudoctor:$(build/release/src/gpudoctor --version | awk '{print $2}')}
b=(buildah --storage-driver vfs)
port=$((20000 + RANDOM % 20000))
user=$("${b[@]}" inspect --format '{{.OCIv1.Config.User}}' "$tag")
entry=$("${b[@]}" inspect --format '{{range .OCIv1.Config.Entrypoint}}{{.}} {{end}}' "$tag")
case "$user" in ""|0|0:*|root|root:*) echo "test-image: $tag runs as root ($user)" >&2; exit 1 ;; esac
args=(serve --source sim:healthy --listen "127.0.0.1:$port" --interval 200ms)

# A unix socket file that refuses connections (bound, then closed), writable by the image's user.
# Bound by its name in its directory: a unix socket's path is at most 107 bytes.
dead_socket() {
  (cd "$(dirname "$1")" && python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()" "$(basename "$1")") &&
    chmod 0777 "$1"
}
kubelet_args=(status --source sim:healthy --kubelet-socket /kubelet/kubelet.sock)

cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  [ -n "${kdir:-}" ] && rm -rf "$kdir"
  if [ -n "${ctr:-}" ]; then
    [ -n "${root:-}" ] && rm -rf "$root/kubelet"
    "${b[@]}" umount "$ctr" >/dev/null || true; "${b[@]}" rm "$ctr" >/dev/null || true
  fi
}
trap cleanup EXIT
if podman --storage-driver vfs run --rm --network host "$tag" --version >/dev/null 2>&1; then
  how="podman run"
  kdir=$(mktemp -d); chmod 0755 "$kdir"; dead_socket "$kdir/kubelet.sock"
  kubelet_err=$(podman --storage-driver vfs run --rm --network host -v "$kdir:/kubelet:ro" "$tag" \
                  "${kubelet_args[@]}" 2>&1 >/dev/null) || { echo "test-image: status with the kubelet socket failed: $kubelet_err" >&2; exit 1; }
  podman --storage-driver vfs run --rm --network host "$tag" "${args[@]}" &
else
  how="chroot into the image root as $user"
  ctr=$("${b[@]}" from "$tag")
  root=$("${b[@]}" mount "$ctr")
  mkdir -p "$root/kubelet"; dead_socket "$root/kubelet/kubelet.sock"
  kubelet_err=$(chroot --userspec="$user" "$root" $entry "${kubelet_args[@]}" 2>&1 >/dev/null) ||
    { echo "test-image: status with the kubelet socket failed: $kubelet_err" >&2; exit 1; }
  chroot --userspec="$user" "$root" $entry "${args[@]}" &
fi
pid=$!
grep -q "note: the kubelet's pod-resources socket /kubelet/kubelet.sock: cannot be reached" <<<"$kubelet_err" ||
  { echo "test-image: the image's gRPC client did not run: $kubelet_err" >&2; exit 1; }
for _ in $(seq 50); do
  metrics=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=2).read().decode())" 2>/dev/null) && break
  sleep 0.2
done
health=$(python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=2).status)")
for want in 'DCGM_FI_DEV_GPU_UTIL{gpu="0"' 'DCGM_FI_DEV_FB_FREE{gpu="3"' 'gpudoctor_build_info{'; do
  grep -qF "$want" <<<"${metrics:-}" || { echo "test-image: /metrics lacks $want" >&2; exit 1; }
done
[ "$health" = 200 ] || { echo "test-image: /healthz answered $health" >&2; exit 1; }
echo "test-image: $tag ($how): /metrics $(grep -c '^[A-Za-z]' <<<"$metrics") samples, /healthz 200," \
     "gRPC to the kubelet socket: refused, said in a note"
