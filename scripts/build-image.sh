#!/usr/bin/env bash
# Builds the container image gpudoctor:<version> from a built binary, without pulling any base
# image: stages a root with the binary, its kubelet client module, the libraries ldd lists of
# both (and the dynamic loader), and passwd/group entries for the non-root user 65534, then
# `buildah bud` (vfs storage, which works without overlay or fuse) with
# deploy/container/Containerfile.
#   scripts/build-image.sh [BINARY] [TAG]    (default build/release/src/gpudoctor, gpudoctor:VERSION)
# Push it with: buildah push --storage-driver vfs gpudoctor:VERSION docker://REGISTRY/gpudoctor:VERSION
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/src/gpudoctor}
[ -x "$bin" ] || { echo "build-image: $bin missing: build first (cmake --build --preset release --target gpudoctor)" >&2; exit 1; }
version=$("$bin" --version | awk '{print $2}')
tag=${2:-gpudoctor:$version}
stage=build/image
root=$stage/rootfs
rm -rf "$stage"
mkdir -p "$root/usr/bin" "$root/etc" "$root/tmp" "$root/usr/share/doc/gpudoctor"
# The kubelet client module beside it, as installed (../lib/gpudoctor from the binary's directory):
# the daemonset asks the kubelet through it.
module=$(dirname "$bin")/../lib/gpudoctor/gpudoctor-kubelet.so
[ -f "$module" ] || { echo "build-image: $module missing: build it (cmake --build --preset release --target gpudoctor_kubelet)" >&2; exit 1; }
install -m 0755 "$bin" "$root/usr/bin/gpudoctor"
strip "$root/usr/bin/gpudoctor"
mkdir -p "$root/usr/lib/gpudoctor"
install -m 0644 "$module" "$root/usr/lib/gpudoctor/gpudoctor-kubelet.so"
strip --strip-unneeded "$root/usr/lib/gpudoctor/gpudoctor-kubelet.so"
# Every library the binary and the module load, at the path the loader looks for it (ld-linux
# included).
for lib in $( (ldd "$bin"; ldd "$module") | awk '/=> \//{print $3} /^\t\/[^ ]*ld-linux/{print $1}' | sort -u); do
  real=$(readlink -f "$lib")
  mkdir -p "$root$(dirname "$lib")"
  cp "$real" "$root$lib"
done
# dlopen("libnvidia-ml.so.1") needs libdl/libc only; the toolkit mounts the library itself.
printf 'root:x:0:0:root:/:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nvideo:x:44:nobody\nnogroup:x:65534:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"
cp README.md "$root/usr/share/doc/gpudoctor/"
buildah bud --storage-driver vfs --quiet -f deploy/container/Containerfile -t "$tag" "$stage" >/dev/null
echo "build-image: $tag ($(du -sh "$root" | cut -f1) root) from $bin"
