#!/usr/bin/env bash
# The decoder (test/decoder.c, the runtime's x86 length decoder) walks
# code exactly as objdump does: the same instruction starts and the same
# syscall instructions in the .text of the libc this machine's programs
# load, of the python3 interpreter the other tests run (its largest
# mapped code: the program, or libpython where it is a shared library),
# and of the preload library itself -- each found at run time, none a path
# of one host.
. "$(dirname "$0")/common.sh"
command -v objdump >/dev/null || t_need objdump "objdump not installed (binutils; scripts/install-deps.sh)"
libc=$(grep -m1 -o '/[^ ]*/libc\.so\.6$' /proc/$$/maps)
py=$(python3 -c '
import collections
size = collections.Counter()
for line in open("/proc/self/maps"):
    f = line.split()
    if len(f) > 5 and "x" in f[1] and f[5].startswith("/"):
        a, b = (int(x, 16) for x in f[0].split("-"))
        size[f[5]] += b - a
print(max(size, key=size.get))' 2>/dev/null)
[ -n "$libc" ] || bad "decoder: no libc.so.6 in this shell's own maps"
[ -n "$py" ] || bad "decoder: python3 not found (scripts/install-deps.sh installs it)"
for f in $libc $py "$LIB"; do
  "$T/decoder" "$f" > "$W/ours" 2>/dev/null
  objdump -d -j .text --insn-width=16 "$f" | grep -oP '^\s+\K[0-9a-f]+(?=:\t)' > "$W/theirs"
  n=$(wc -l < "$W/ours")
  if [ "$n" -gt 1000 ] && cmp -s "$W/ours" "$W/theirs" &&
     [ "$("$T/decoder" "$f" count 2>/dev/null)" = "$(objdump -d -j .text "$f" | grep -cP '\tsyscall\s*$')" ]; then
    ok "decoder: $n instruction starts and the syscalls of $f"
  else
    bad "decoder disagrees with objdump on $f ($n instruction starts)"
  fi
done
t_finish
