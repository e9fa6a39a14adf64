#!/usr/bin/env bash
# Fetches Debian 12's stock kernel into a build folder -- nothing is
# installed on the host: `apt-get download` and `dpkg -x`, no maintainer
# scripts, nothing in /boot or /lib/modules.  Leaves in $OUT (default
# build/kmod/kernel):
#   headers/   the kbuild tree to build modules against (M=...)
#   vmlinux    the uncompressed kernel (boots with -kernel under PVH: no
#              BIOS, no decompressor)
#   abi        the ABI it is (e.g. 6.1.0-56)
# Idempotent: a second run with the same ABI does nothing.
#
#   kmod/guest/kernel.sh [OUT]
set -euo pipefail
out=${1:-build/kmod/kernel}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The ABI of Debian's current kernel: linux-image-amd64 depends on it.
abi=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(.*\)-amd64$/\1/p' | head -1)
if [ -z "$abi" ]; then
  apt-get update -qq >/dev/null 2>&1 || true
  abi=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(.*\)-amd64$/\1/p' | head -1)
fi
[ -n "$abi" ] || { echo "kernel.sh: cannot find Debian's kernel ABI (apt-cache depends linux-image-amd64)" >&2; exit 1; }
if [ -f "$out/abi" ] && [ "$(cat "$out/abi")" = "$abi" ] && [ -f "$out/vmlinux" ] && [ -d "$out/headers" ]; then
  exit 0
fi
kbuild=linux-kbuild-${abi%%.0-*}   # 6.1.0-56 -> linux-kbuild-6.1
debs="$out/debs"
rm -rf "$debs" "$out/root" "$out/headers" "$out/vmlinux"
mkdir -p "$debs" "$out/root"
echo "kernel.sh: fetching Debian's kernel $abi" >&2
(cd "$debs" && apt-get download -qq "linux-image-$abi-amd64" "linux-headers-$abi-amd64" \
  "linux-headers-$abi-common" "$kbuild" 2>/dev/null) ||
  { echo "kernel.sh: apt-get download of the $abi kernel packages failed" >&2; exit 1; }
for d in "$debs"/linux-headers-*.deb "$debs"/"$kbuild"_*.deb; do dpkg -x "$d" "$out/root"; done
# From the 70 MB image only the kernel itself is needed.
dpkg-deb --fsys-tarfile "$debs"/linux-image-*.deb | tar -x -C "$out/root" ./boot/

# The headers name their common half by an absolute path: point it here.
hdr="$out/root/usr/src/linux-headers-$abi-amd64"
sed -i "s#^include /usr/src/#include $out/root/usr/src/#" "$hdr/Makefile"
ln -sfn "$hdr" "$out/headers"

# vmlinuz is a bzImage whose payload is xz: find the stream and unpack it.
vmlinuz="$out/root/boot/vmlinuz-$abi-amd64"
off=$(grep -abo $'\xfd7zXZ\x00' "$vmlinuz" | head -1 | cut -d: -f1)
[ -n "$off" ] || { echo "kernel.sh: no xz payload in $vmlinuz" >&2; exit 1; }
tail -c +$((off + 1)) "$vmlinuz" | xz -dc 2>/dev/null > "$out/vmlinux.tmp" || true
head -c 4 "$out/vmlinux.tmp" | grep -q $'\x7fELF' || { echo "kernel.sh: the payload of $vmlinuz is not an ELF kernel" >&2; exit 1; }
mv "$out/vmlinux.tmp" "$out/vmlinux"
rm -rf "$debs"
echo "$abi" > "$out/abi"
