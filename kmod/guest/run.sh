#!/usr/bin/env bash
# The kernel module's guest test: Debian 12's stock kernel (fetched into
# build/kmod/kernel, nothing installed on the host), multicall.ko built
# against its headers, an initramfs of busybox and statically linked test
# programs -- libmulticall's whole conformance suite, which compares the
# kmod backend and auto with direct, the module's own tests in kmod/test,
# the recorder (syscluster and the libraries it links; guest/record.sh),
# and a module `syscluster kmod-gen` wrote from a plan (guest/gen.sh) --
# booted in QEMU under TCG (these machines have no usable hardware
# virtualization: right for correctness, meaningless for speed).  Reads
# the results back from the serial console.
#
#   kmod/guest/run.sh [TEST...]      (from anywhere; exit 0 when all passed)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
b=build/kmod
for tool in qemu-system-x86_64 busybox cpio; do
  command -v $tool >/dev/null || { echo "kmod guest: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically' ||
  { echo "kmod guest: /bin/busybox is not busybox-static" >&2; exit 1; }

kmod/guest/kernel.sh "$b/kernel"
make -s -C kmod
make -s -C libmulticall static-tests
mkdir -p "$b/tests"
for src in kmod/test/*.c; do
  out="$b/tests/kmod-$(basename "$src" .c)"
  if [ ! -e "$out" ] || [ "$src" -nt "$out" ] || [ libmulticall/build/libmulticall.a -nt "$out" ]; then
    gcc -O2 -g -D_GNU_SOURCE -Wall -Wextra -Werror -static -Ilibmulticall/include -Ilibmulticall/test \
      -o "$out" "$src" libmulticall/test/harness.c libmulticall/build/libmulticall.a -luring -lpthread
  fi
done

# The recorder (kmod-record): syscluster and syscluster-cli with the
# shared libraries they link, and the copy loop it records, linked statically.
# The recorder of the cargo profile `make` used (PROFILE; release alone).
prof=${PROFILE:-release}
cargo build --profile "$prof" --locked -q
gcc -O2 -Wall -Werror -static -Ilibmulticall/include -o "$b/tests/copy-loop" libmulticall/examples/copy-loop.c \
  libmulticall/build/libmulticall.a -luring -lpthread
gcc -O2 -Wall -Wextra -Werror -static -o "$b/tests/wait-attached" kmod/guest/wait-attached.c

# kmod-gen (kmod-gen): the corpus's copy program recorded here (ptrace: no
# privilege needed), advised, its plan turned into a module by `syscluster
# kmod-gen` and built with Kbuild against the guest's headers (guest/gen.sh
# runs it).
gen="$b/gen"
rm -rf "$gen" && mkdir -p "$gen"
make -s -C tests/corpus bin/copy
head -c 1000000 /dev/urandom > "$gen/in"
"target/$prof/syscluster" record -q --backend ptrace -o "$gen/copy.json" -- tests/corpus/bin/copy "$gen/in" "$gen/out"
"target/$prof/syscluster" advise --no-calibration --plan-out "$gen/plan.json" "$gen/copy.json" > /dev/null
"target/$prof/syscluster" kmod-gen "$gen/plan.json" -o "$gen/src" 2> "$gen/kmod-gen.txt" || { cat "$gen/kmod-gen.txt" >&2; exit 1; }
grep -q ' [1-9][0-9]* cluster(s) specialized' "$gen/kmod-gen.txt" ||
  { echo "kmod guest: kmod-gen specialized no cluster of the copy program's plan: $(cat "$gen/kmod-gen.txt")" >&2; exit 1; }
make -s -C "$b/kernel/headers" M="$(pwd)/$gen/src" modules
rm -f "$gen/in" "$gen/out"

root="$b/initramfs"
rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,tests,progs,plan}
cp /bin/busybox "$root/bin/"
for app in sh mount insmod rmmod dmesg poweroff cat cut diff grep sed sort head timeout ln echo sleep ifconfig awk cmp rm mkdir; do
  ln -s busybox "$root/bin/$app"
done
cp kmod/guest/init "$root/init"
cp "$b/module/multicall.ko" "$root/"
want=("$@")
pick() { [ ${#want[@]} -eq 0 ] && return 0; local w; for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }
# syscluster execs the full command line, syscluster-cli, beside it.
cp "target/$prof/syscluster" "target/$prof/syscluster-cli" "$root/bin/"
for lib in $(ldd "target/$prof/syscluster" "target/$prof/syscluster-cli" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
  mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"
done
cp "$b/tests/copy-loop" "$b/tests/wait-attached" "$root/progs/"
cp kmod/guest/record.sh "$b/tests/kmod-record"
cp "$gen/src/multicall.ko" "$root/plan/"
cp libmulticall/build/static/loop "$root/progs/"
cp kmod/guest/gen.sh "$b/tests/kmod-gen"
for t in libmulticall/build/static/* "$b"/tests/kmod-*; do
  n=$(basename "$t")
  # calibration and copy_blocks check mc-calibrate and its files, which
  # no backend touches (and the guest has no mc-calibrate to run).
  case $n in calibration | copy_blocks) continue ;; esac
  pick "$n" && cp "$t" "$root/tests/"
done
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$b/initramfs.cpio.gz"

log="$b/console.log"
echo "kmod guest: booting Debian's $(cat "$b/kernel/abi") under QEMU (TCG) with $(ls "$root/tests" | wc -l) test programs" >&2
start=$(date +%s)
set +e
# MC_KMOD_ACCEL=kvm: where a stock kernel runs under KVM (not these machines).
accel=(-accel tcg,thread=multi -cpu max)
[ "${MC_KMOD_ACCEL:-tcg}" = kvm ] && accel=(-enable-kvm -cpu host)
timeout 600 qemu-system-x86_64 "${accel[@]}" -smp 2 -m 1024 -nographic -no-reboot \
  -kernel "$b/kernel/vmlinux" -initrd "$b/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 oops=panic loglevel=4 quiet" > "$log" 2>&1
qrc=$?
set -e
# Console lines can follow firmware output on the same line: keep the KMOD- part.
tr -d '\r' < "$log" | sed 's/^.*\(KMOD-\)/\1/' > "$log.txt"
echo "kmod guest: QEMU exited $qrc after $(( $(date +%s) - start )) s; console in $log.txt" >&2

pass=0 fail=0
failed=()
while read -r _ rc name; do
  if [ "$rc" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); failed+=("$name (exit $rc)"); fi
done < <(grep '^KMOD-TEST ' "$log.txt")
# The output of each failed test, then every note (crossing counts, backends not compared).
awk '/^KMOD-TEST /{show = ($2 != 0)} show && !/^    note:/' "$log.txt" | head -80 >&2
grep '^    note:' "$log.txt" | sort -u >&2 || true
problems=()
grep -q '^KMOD-LOADED' "$log.txt" || problems+=("the module did not load")
grep -q '^KMOD-UNLOADED' "$log.txt" || problems+=("rmmod failed (a reference leaked?)")
grep -q '^KMOD-DONE' "$log.txt" || problems+=("the guest did not finish (timeout or panic)")
if grep -q '^KMOD-DMESG' "$log.txt"; then problems+=("the kernel complained:"); grep '^KMOD-DMESG' "$log.txt" >&2; fi
[ $pass -gt 0 ] || problems+=("no test ran")
for p in "${problems[@]}"; do echo "kmod guest: $p" >&2; done
for f in "${failed[@]}"; do echo "kmod guest: FAIL $f" >&2; done
echo "kmod guest: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ ${#problems[@]} -eq 0 ]
