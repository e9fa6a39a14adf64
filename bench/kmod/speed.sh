#!/usr/bin/env bash
# The speed of multicall.ko (issue 13, Must 6): boots Debian 12's stock
# kernel -- the guest of kmod/guest/run.sh, fetched by kmod/guest/kernel.sh,
# nothing installed on the host -- under KVM, loads the module and runs
# bench/kmod/speed.c: each operation (one getpid; 16 writes; the copy loop
# of 16 blocks; select + gettimeofday) as calls made one by one (direct)
# and as one multi-call through the module (kmod), interleaved in rounds,
# the fastest round of each.  Prints the markdown table for
# docs/BENCHMARKS.md and writes it to bench/results/kmod-speed.md.
#
#   bench/kmod/speed.sh [--rounds N] [--iterations N]   on a machine with KVM
#   bench/kmod/speed.sh --check                          the script's own test:
#       the same guest under TCG, a few iterations; checks that every
#       operation ran on both backends and prints no time (an emulated CPU's
#       times say nothing about speed)
#
# NOT RUN where this was written: those machines have no KVM that runs a
# stock kernel (docs/KMOD.md, "Speed").
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
b=build/kmod
out=$b/speed
check=0
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --check) check=1; args=(--rounds 1 --iterations 20); shift ;;
    --rounds|--iterations) args+=("$1" "${2:?$1 needs a number}"); shift 2 ;;
    *) echo "usage: bench/kmod/speed.sh [--rounds N] [--iterations N] | --check" >&2; exit 2 ;;
  esac
done
if [ $check = 0 ]; then
  [ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo "speed.sh: no usable /dev/kvm: the speed is measured under KVM only (--check tests the script under TCG)" >&2; exit 1; }
  accel=(-enable-kvm -cpu host)
else
  accel=(-accel tcg,thread=multi -cpu max)
fi
for tool in qemu-system-x86_64 busybox cpio gcc; do
  command -v $tool >/dev/null || { echo "speed.sh: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done

kmod/guest/kernel.sh "$b/kernel"
make -s -C kmod
make -s -C libmulticall
rm -rf "$out" && mkdir -p "$out/root"/{bin,dev,proc,sys,tmp}
gcc -O2 -Wall -Wextra -Werror -static -Ilibmulticall/include -o "$out/root/kmod-speed" bench/kmod/speed.c \
  libmulticall/build/libmulticall.a -luring -lpthread
cp /bin/busybox "$out/root/bin/"
for app in sh mount insmod poweroff echo; do ln -s busybox "$out/root/bin/$app"; done
cp "$b/module/multicall.ko" "$out/root/"
cat > "$out/root/init" <<INIT
#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
insmod /multicall.ko && echo KMOD-LOADED
/kmod-speed ${args[*]} || echo "KMOD-SPEED-FAILED \$?"
echo KMOD-DONE
poweroff -f
INIT
chmod +x "$out/root/init"
(cd "$out/root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out/initramfs.cpio.gz"

echo "speed.sh: booting Debian's $(cat "$b/kernel/abi") under ${accel[0]} ${accel[1]}" >&2
timeout 900 qemu-system-x86_64 "${accel[@]}" -smp 2 -m 1024 -nographic -no-reboot \
  -kernel "$b/kernel/vmlinux" -initrd "$out/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 oops=panic loglevel=4 quiet" > "$out/console.log" 2>&1 || true
tr -d '\r' < "$out/console.log" | sed 's/^.*\(KMOD-\)/\1/' > "$out/console.txt"
grep -q '^KMOD-LOADED' "$out/console.txt" || { echo "speed.sh: the module did not load (console: $out/console.txt)" >&2; exit 1; }
grep -q '^KMOD-SPEED-FAILED' "$out/console.txt" && { echo "speed.sh: kmod-speed failed (console: $out/console.txt)" >&2; exit 1; }
lines=$(grep -c '^KMOD-SPEED ' "$out/console.txt" || true)
[ "$lines" = 4 ] || { echo "speed.sh: $lines of 4 operations measured (console: $out/console.txt)" >&2; exit 1; }
if [ $check = 1 ]; then
  echo "speed.sh --check: the guest ran all 4 operations on direct and kmod (TCG: times not reported)"
  exit 0
fi
mkdir -p bench/results
{
  echo "Measured by \`bench/kmod/speed.sh ${args[*]}\` on $(date -u '+%Y-%m-%d'), host $(uname -sr),"
  echo "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), guest Debian $(cat "$b/kernel/abi") under KVM (\`-cpu host\`, 2 vCPUs)."
  echo
  echo "| operation | calls | direct, ns | kmod, ns | kmod / direct |"
  echo "|---|---|---|---|---|"
  sed -n 's/^KMOD-SPEED //p' "$out/console.txt" |
    awk -F'|' '{ printf "| %s | %s | %.0f | %.0f | %.2f |\n", $1, $2, $3, $4, $4 / $3 }'
} | tee bench/results/kmod-speed.md
