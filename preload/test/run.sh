#!/usr/bin/env bash
# The runtime's C-level tests.  Each check runs a real program plain and
# under the preload library and compares, or checks a stated property.
# Exit 0 when all pass; a check that cannot run here says why and skips.
set -u
cd "$(dirname "$0")/.."
O=${O:-build}
LIB=$PWD/$O/libsyscluster-preload.so
T=$PWD/$O/test
CORPUS=$PWD/../tests/corpus/bin
W=$(mktemp -d)
trap 'umount "$W/mnt" 2>/dev/null; rm -rf "$W"' EXIT
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# Under CI (CI=true, as root) every capability is there: a skip is a failure.
skipped() { if [ "${CI:-}" = true ]; then bad "$* (CI requires it)"; else skip=$((skip + 1)); echo "skip $*"; fi; }
rt() { env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 "$@"; }
# In the background, so that $! is the program itself (signals reach it).
rtbg() { (exec env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 "$@") & }
# The library built without a guardian (a test build; the shipped one has no switch).
nogrdbg() { (exec env LD_PRELOAD="$T/libsyscluster-preload-noguardian.so" SYSCLUSTER_COALESCE=4096 "$@") & }

# -- the decoder walks code exactly as objdump does -------------------------
if command -v objdump >/dev/null; then
  for f in /lib/x86_64-linux-gnu/libc.so.6 /usr/bin/python3.11 /usr/bin/dd; do
    [ -f "$f" ] || continue
    "$T/decoder" "$f" > "$W/ours" 2>/dev/null
    objdump -d -j .text --insn-width=16 "$f" | grep -oP '^\s+\K[0-9a-f]+(?=:\t)' > "$W/theirs"
    if cmp -s "$W/ours" "$W/theirs" && [ "$("$T/decoder" "$f" count 2>/dev/null)" = "$(objdump -d -j .text "$f" | grep -cP '\tsyscall\s*$')" ]; then
      ok "decoder: $(wc -l < "$W/ours") instruction starts and the syscalls of $f"
    else
      bad "decoder disagrees with objdump on $f"
    fi
  done
else
  skipped "decoder: objdump not installed"
fi

# -- in-process semantics ----------------------------------------------------
mkdir -p "$W/sem"
if out=$(rt timeout 120 "$T/semantics" "$W/sem" 2>&1); then
  ok "semantics: $(echo "$out" | grep -c '^ok') checks"
else
  bad "semantics"; echo "$out" | grep -v '^ok'
fi
# A fork child never writes the parent's bytes again (main failed each 9-10 runs of 10; docs/RUNTIME.md, "Fork children").
for m in "futex 200" "forks 20" "_Forks 20"; do if out=$(rt timeout 120 "$T/semantics" "$W/sem" $m 2>&1); then ok "semantics $m"; else bad "semantics $m"; echo "$out" | head -3 | cut -c1-300; fi; done
# The lock-free fast path of deferred writes and everyone who takes a slot
# from it (test/fastpath.c; docs/RUNTIME.md, "The fast path"): the
# guardian's timed flushes every 0.5 ms (a 1 ms bound) while one thread
# appends; the same with a SIGALRM handler writing every 50 us; four threads
# and the main one on one fd with a thread observing the file.  Every record
# once, whole, in its writer's order -- and the -v report must show that the
# fast path was taken (fast=), or the check proves nothing.  A first version
# whose guardian left a bias cleared after backing off lost and repeated
# records in the signal mode (2 runs of 3).
# (Threads taking buffers from each other leave them unbiased for a while:
# there the fast path is taken less, 53,000-222,000 times in 1,000,000.)
for m in paced:300000:100000 signals:300000:100000 threads:200000:1000; do
  mode=${m%%:*} n=${m#*:}; least=${n#*:}; n=${n%:*}
  r=$(SYSCLUSTER_FLUSH_MS=1 rt env SYSCLUSTER_VERBOSE=1 timeout 120 "$T/fastpath" "$W/fast" "$mode" "$n" 2>"$W/fast.err")
  fast=$(grep -o 'fast=[0-9]*' "$W/fast.err" | tail -1 | cut -d= -f2)
  if [ "${r#ok}" != "$r" ] && [ "${fast:-0}" -ge "$least" ]; then ok "fast path, $mode: $r, $fast writes without the lock"
  else bad "fast path, $mode: $r (fast='$fast', want at least $least)"; fi
done
# The control: takers that clear the bias without the barrier and the wait
# for busy.  It must fail, or the check above could not.  A race: it failed
# 10 runs of 10 in the signal mode (9 of 10 paced); up to 3 tries.
caught=0
for i in 1 2 3; do
  if ! SYSCLUSTER_FLUSH_MS=1 env LD_PRELOAD="$T/libsyscluster-preload-unguarded.so" SYSCLUSTER_COALESCE=4096 \
       timeout 120 "$T/fastpath" "$W/fast" signals 300000 > "$W/fast.out" 2>&1; then caught=$i; break; fi
done
if [ "$caught" = 0 ]; then bad "control: the fast path unguarded kept every record in 3 runs ($(cat "$W/fast.out"))"
else ok "control: the fast path unguarded loses or repeats records (run $caught: $(cut -c1-60 "$W/fast.out"))"; fi
rm -f "$W/fast" "$W/fast.out"
# `prog > log 2>&1`: fds 1 and 2 share one description; their short lines
# are coalesced together (not one write per switch), in order.
"$T/semantics" "$W/sem" interleave 2000 > "$W/il1" 2>&1
rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" interleave 2000 > "$W/il2" 2>&1
st=$(tail -1 "$W/il2"); head -n -1 "$W/il2" > "$W/il3"
d=$(echo "$st" | sed -n 's/.*deferred=\([0-9]*\).*/\1/p'); fl=$(echo "$st" | sed -n 's/.* flushes=\([0-9]*\) fused=\([0-9]*\).*/\1 + \2/p')
if cmp -s "$W/il1" "$W/il3" && [ "${d:-0}" -ge 1900 ] && [ "$((fl))" -le 40 ]; then
  ok "> log 2>&1: 2000 lines on fds 1 and 2 in order, $d deferred, $((fl)) writes of buffers"
else bad "> log 2>&1: $(cmp "$W/il1" "$W/il3" 2>&1) stats: $st"; fi
# Two separate opens of the file: `prog >> log 2>> log` (two O_APPEND
# descriptions) and `prog > log 2> log` (two offsets, overwriting each
# other): the same bytes as plain, the short lines deferred.  (Not yet
# coalesced across the two descriptions: each switch writes the other's
# buffer out first -- docs/RUNTIME.md, "Known limits".)
for m in append trunc; do
  rm -f "$W/il1" "$W/il2" "$W/il3"
  case $m in
    append) "$T/semantics" "$W/sem" interleave 2000 >> "$W/il1" 2>> "$W/il1"
            rt "$T/semantics" "$W/sem" interleave 2000 >> "$W/il2" 2>> "$W/il2"
            rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" interleave 2000 >> "$W/il3" 2>> "$W/il3" ;;
    trunc) "$T/semantics" "$W/sem" interleave 2000 > "$W/il1" 2> "$W/il1"
           rt "$T/semantics" "$W/sem" interleave 2000 > "$W/il2" 2> "$W/il2"
           rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" interleave 2000 > "$W/il3" 2> "$W/il3" ;;
  esac
  # (-v's line goes through fd 2 too: the bytes are compared without it.)
  d=$(grep -ao 'deferred=[0-9]*' "$W/il3" | tail -1 | cut -d= -f2)
  if cmp -s "$W/il1" "$W/il2" && [ "${d:-0}" -ge 1900 ]; then
    ok "two opens of one log ($m): 2000 lines on fds 1 and 2 in order, $d deferred"
  else bad "two opens of one log ($m): $(cmp "$W/il1" "$W/il2" 2>&1) deferred='$d'"; fi
done
# Python's print on both, flushed, with long lines among them: none glued
# inside another.
cat > "$W/pp.py" <<'PY'
import sys
for r in range(3):
    for i in range(6):
        print(f"out {r}.{i}", flush=True)
        print(f"err {r}.{i}", file=sys.stderr, flush=True)
    print(chr(65 + r) * 5000, flush=True)
print("end", file=sys.stderr)
PY
python3 "$W/pp.py" > "$W/pp1" 2>&1; rt python3 "$W/pp.py" > "$W/pp2" 2>&1
if cmp -s "$W/pp1" "$W/pp2"; then ok "> log 2>&1: Python's print on stdout and stderr in order"; else bad "Python print 2>&1: $(cmp "$W/pp1" "$W/pp2" 2>&1)"; fi
# Every short write observed at once: the runtime stops deferring there
# (a flush per saved write would make the program slower than plain).
mkdir -p "$W/sem"; "$T/semantics" "$W/sem" observed 5000 && cp "$W/sem/observed" "$W/obs1"
rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" observed 5000 2> "$W/obs.err"
st=$(grep -o 'deferred=[0-9]* direct=[0-9]* flushes=[0-9]*' "$W/obs.err" | tail -1)
fl=$(echo "$st" | sed -n 's/.*flushes=\([0-9]*\).*/\1/p')
if cmp -s "$W/obs1" "$W/sem/observed" && [ -n "$fl" ] && [ "$fl" -le 50 ]; then ok "a write observed at once: same file, deferring backs off ($st of 5000 writes)"
else bad "write observed at once: '$st' (want at most 50 flushes), $(cmp "$W/obs1" "$W/sem/observed" 2>&1)"; fi
for m in return exit _exit quick_exit pthread abort exec; do
  rt "$T/semantics" "$W/sem" exit "$m" 2>/dev/null
  if [ "$(stat -c %s "$W/sem/exit")" = 8000 ]; then ok "ends by $m: every byte written"; else bad "ends by $m"; fi
done

# -- nothing acknowledged is lost when the program dies abruptly ------------
check_ack() { # the guardian finishes within moments of the death
  for _ in $(seq 50); do "$T/ackwriter" --check "$W/ack.out" "$W/ack" >/dev/null 2>&1 && return 0; sleep 0.02; done
  "$T/ackwriter" --check "$W/ack.out" "$W/ack"
}
for sig in KILL TERM SEGV ABRT; do
  for mode in "" append; do
    n=0
    for i in $(seq 8); do
      rtbg "$T/ackwriter" "$W/ack.out" "$W/ack" $mode; p=$!
      sleep "0.0$((RANDOM % 9 + 1))"
      kill -"$sig" "$p"; wait "$p" 2>/dev/null
      check_ack >/dev/null || n=$((n + 1))
    done
    if [ "$n" = 0 ]; then ok "SIG$sig ${mode:-write}: every acknowledged record on disk (8 runs)"; else bad "SIG$sig ${mode:-write}: $n of 8 runs lost records"; fi
  done
done
# SIGKILL at random points while another process writes the same file,
# through the same description and through its own O_APPEND one
# (test/sharedkill.c; issue 9 items 3 and 4): 150 rounds each, every record
# whole, none of the other writer's overwritten, none acknowledged lost.
# The code before the guardian made these flushes failed 3-6 rounds in 150.
for mode in same append; do
  if out=$("$T/sharedkill" "$LIB" $mode 150 "$W" 2>&1); then ok "SIGKILL with another writer ($mode description): $(echo "$out" | tail -1)"
  else bad "SIGKILL with another writer ($mode description):"; echo "$out" | tail -4; fi
done
# PID namespaces and cgroup.kill (issue 9 item 4).  PID 1 of a namespace
# defers nothing -- its death would take the guardian with it -- so its
# SIGKILL loses nothing (the runtime that deferred there lost records in 27
# runs of 30).  A whole namespace or cgroup killed at once takes program and
# guardian together: what may be lost is bounded -- the records on disk are
# still a prefix, none torn, and at most one buffer (64 KiB: 8192 records)
# short of what was acknowledged.  The bound is what docs/RUNTIME.md and
# `run --help` promise; this checks it holds.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
  n=0; said=0
  for i in $(seq 10); do
    unshare --pid --fork env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 SYSCLUSTER_VERBOSE=1 \
      "$T/ackwriter" "$W/ack.out" "$W/ack" 2> "$W/ns.err" & u=$!
    sleep "0.0$((RANDOM % 9 + 1))"
    kill -KILL "$(pgrep -P "$u")" 2>/dev/null; wait "$u" 2>/dev/null
    "$T/ackwriter" --check "$W/ack.out" "$W/ack" >/dev/null 2>&1 || n=$((n + 1))
    grep -q "PID 1 of a PID namespace" "$W/ns.err" && said=$((said + 1))
  done
  if [ "$n" = 0 ] && [ "$said" = 10 ]; then ok "PID 1 of a PID namespace: nothing deferred, SIGKILL loses nothing (10 runs)"
  else bad "PID 1 of a PID namespace: $n of 10 runs lost records, $said said they defer nothing"; fi
  n=0; worst=0
  for i in $(seq 10); do
    unshare --pid --fork sh -c "LD_PRELOAD='$LIB' SYSCLUSTER_COALESCE=4096 '$T/ackwriter' '$W/ack.out' '$W/ack' & wait" 2>/dev/null & u=$!
    sleep "0.0$((RANDOM % 9 + 1))"
    kill -KILL "$(pgrep -P "$u")" 2>/dev/null; wait "$u" 2>/dev/null
    if r=$("$T/ackwriter" --check "$W/ack.out" "$W/ack" 8192 2>&1); then
      l=$(( $(echo "$r" | cut -d' ' -f2) - $(echo "$r" | cut -d' ' -f1) )); [ "$l" -gt "$worst" ] && worst=$l
    else n=$((n + 1)); echo "$r"; fi
  done
  if [ "$n" = 0 ]; then ok "a PID namespace killed whole: records a prefix, at most $worst acknowledged lost (bound 8192; 10 runs)"
  else bad "a PID namespace killed whole: $n of 10 runs beyond the bound"; fi
elif [ "${CI:-}" = true ]; then bad "PID namespaces: needs root and unshare"
else skipped "PID namespaces: needs root and unshare"; fi
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ "$(id -u)" = 0 ] && [ -n "$cg2" ] && mkdir "$cg2/syscluster-rt-$$" 2>/dev/null && [ -e "$cg2/syscluster-rt-$$/cgroup.kill" ]; then
  cg=$cg2/syscluster-rt-$$; n=0; worst=0
  for i in $(seq 10); do
    sh -c "echo \$\$ > '$cg/cgroup.procs' && LD_PRELOAD='$LIB' SYSCLUSTER_COALESCE=4096 exec '$T/ackwriter' '$W/ack.out' '$W/ack'" & p=$!
    sleep "0.0$((RANDOM % 9 + 1))"
    echo 1 > "$cg/cgroup.kill"; wait "$p" 2>/dev/null
    if r=$("$T/ackwriter" --check "$W/ack.out" "$W/ack" 8192 2>&1); then
      l=$(( $(echo "$r" | cut -d' ' -f2) - $(echo "$r" | cut -d' ' -f1) )); [ "$l" -gt "$worst" ] && worst=$l
    else n=$((n + 1)); echo "$r"; fi
  done
  for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.02; done
  if [ "$n" = 0 ]; then ok "cgroup.kill: records a prefix, at most $worst acknowledged lost (bound 8192; 10 runs)"
  else bad "cgroup.kill: $n of 10 runs beyond the bound"; fi
elif [ "${CI:-}" = true ]; then bad "cgroup.kill: needs root and a cgroup2 mount with cgroup.kill"
else skipped "cgroup.kill: needs root and a cgroup2 mount with cgroup.kill"; fi
# The trampolines alone (no guardian) cover the catchable signals...
n=0
for sig in TERM SEGV ABRT; do
  nogrdbg "$T/ackwriter" "$W/ack.out" "$W/ack"; p=$!
  sleep 0.03; kill -"$sig" "$p"; wait "$p" 2>/dev/null
  "$T/ackwriter" --check "$W/ack.out" "$W/ack" >/dev/null 2>&1 || n=$((n + 1))
done
if [ "$n" = 0 ]; then ok "fatal-signal trampolines flush without the guardian"; else bad "trampolines lost records"; fi
# ...and without the guardian SIGKILL does lose: the control that shows the check can fail.
nogrdbg "$T/ackwriter" "$W/ack.out" "$W/ack"; p=$!
sleep 0.05; kill -KILL "$p"; wait "$p" 2>/dev/null
if "$T/ackwriter" --check "$W/ack.out" "$W/ack" >/dev/null 2>&1; then bad "control: SIGKILL without the guardian lost nothing (the check cannot fail?)"; else ok "control: without the guardian SIGKILL loses records"; fi

# A guardian killed on its own is replaced, and SIGKILL safety comes back.
rtbg "$T/ackwriter" "$W/ack.out" "$W/ack"; p=$!
sleep 0.2
g=$(pgrep -P "$p" | head -1)
kill -KILL "$g" 2>/dev/null
sleep 0.5
g2=$(for c in $(pgrep -P "$p"); do [ "$(cat /proc/$c/comm 2>/dev/null)" = syscluster-grd ] && grep -q '^State:.*[RS]' /proc/$c/status && echo "$c"; done | head -1)
kill -KILL "$p"; wait "$p" 2>/dev/null
if [ -n "$g2" ] && [ "$g2" != "$g" ] && check_ack >/dev/null; then ok "a killed guardian is replaced (pid $g -> $g2); a later SIGKILL still loses nothing"
else bad "guardian replacement: old $g new '$g2'"; fi

# The guardian ends by exit(2) (it used to return into libc's clone, which
# it has unmapped, and die of SIGSEGV: a kernel log line per process).
if command -v strace >/dev/null; then
  st=$(strace -f -e trace=wait4 -o "$W/grd.st" env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 "$CORPUS/write8" "$W/grd" 1000 2>&1; grep __WCLONE "$W/grd.st")
  if echo "$st" | grep -q 'WIFEXITED(s) && WEXITSTATUS(s) == 0'; then ok "the guardian exits with status 0"
  else bad "the guardian's end: $st"; fi
else bad "the guardian's end: strace not installed (scripts/install-deps.sh installs it)"; fi

# A guardian stopped by someone (SIGSTOP): flushes it was asked to make
# are taken back after a second, the program goes on writing, and once
# the guardian runs again a SIGKILL still loses nothing.
rtbg "$T/ackwriter" "$W/ack.out" "$W/ack" append; p=$!
sleep 0.2
g=$(for c in $(pgrep -P "$p"); do [ "$(cat /proc/$c/comm 2>/dev/null)" = syscluster-grd ] && echo "$c"; done | head -1)
kill -STOP "$g" 2>/dev/null
a1=$(od -An -tu8 -N8 "$W/ack" | tr -d ' '); sleep 2; a2=$(od -An -tu8 -N8 "$W/ack" | tr -d ' ')
kill -CONT "$g" 2>/dev/null; sleep 0.1
kill -KILL "$p"; wait "$p" 2>/dev/null
if [ -n "$g" ] && [ "${a2:-0}" -gt "${a1:-0}" ] && check_ack >/dev/null; then ok "a stopped guardian: the program goes on ($a1 -> $a2 records), and a later SIGKILL loses nothing"
else bad "stopped guardian: guardian '$g', records $a1 -> $a2"; check_ack; fi

# -- the guardian starts at the first deferral (issue 10, item 7) ------------
# None in a program that defers nothing; at the first deferral of a program
# with 64 MiB written, a clone that leaves that memory out (no fault when it
# is written again), the program's own MADV_DONTFORK marks kept.
if out=$(rt "$T/lazyguard" "$W/lazy" 64 2>&1); then ok "lazy guardian: $(echo "$out" | sed 's/^ok //' | paste -sd ';')"
else bad "lazy guardian"; echo "$out"; fi

# -- the guardian holds nothing the program gave up (issue 9, item 1) ---------
# escape.c chroots, drops every capability, enters SECCOMP_MODE_STRICT, then
# by memory writes alone redirects the guardian's return addresses to code
# that prints a file outside its jail.  A guardian sharing the program's
# memory prints it (4 runs of 4 before the redesign).
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$W/jail"; echo "TOPSECRET-$$" > "$W/secret"; chmod 600 "$W/secret"
  n=0 confined=0
  for i in 1 2 3; do
    rt "$T/escape" "$W/esc.out" "$W/secret" "$W/jail" > "$W/esc.so" 2> "$W/esc.se"
    sleep 0.3 # the guardian outlives the program by moments
    grep -q '^gave-up' "$W/esc.se" && confined=$((confined + 1))
    if grep -q TOPSECRET "$W/esc.so" || [ "$(stat -c %s "$W/esc.out")" != 1600 ]; then n=$((n + 1)); fi
  done
  if [ "$n" = 0 ] && [ "$confined" = 3 ]; then ok "escape: a confined program cannot steer the guardian (3 runs, every record on disk)"
  else bad "escape: $n of 3 runs leaked or lost records ($confined confined)"; fi
elif [ "${CI:-}" = true ]; then bad "escape: needs root (chroot)"
else skipped "escape: needs root (chroot)"; fi

# -- a reader polling the file sees each write within the time bound ---------
if worst=$(rt "$T/tailer" "$W/tail" 10 250); then ok "tailer: each record seen within 250 ms (worst ${worst} us, bound 5 ms)"; else bad "tailer"; fi
if SYSCLUSTER_FLUSH_MS=3000 rt "$T/tailer" "$W/tail" 3 250 >/dev/null 2>&1; then bad "control: a 3 s bound still met 250 ms"; else ok "control: with a 3 s bound the reader waits"; fi

# -- a reader woken through a process-shared object sees every record -------
# (a 60 s time bound: only the wrapper of the waking call can publish)
for k in sem cond broadcast mutex rwlock barrier futex; do
  if r=$(SYSCLUSTER_FLUSH_MS=60000 rt timeout 60 "$T/observer" "$W/obs" "$k" 50); then ok "observer through $k: $r"
  else bad "observer through $k: $r"; fi
done

# -- the differential fuzzer: random calls over shared files, plain vs runtime --
# A fixed seed set (about 20 s here); bench/runtime/fuzz.sh runs more.
if out=$(test/fuzz.sh "$LIB" "$T/fuzz" 1 150 400); then ok "$out"; else bad "fuzzer"; echo "$out"; fi

# -- raw system calls: detected, reported, program unchanged -----------------
msg=$(rt "$T/rawsys" "$W/raw1" 5000 2>&1 >/dev/null); "$T/rawsys" "$W/raw2" 5000
if cmp -s "$W/raw1" "$W/raw2" && echo "$msg" | grep -q "raw syscall"; then ok "raw syscalls reported, output unchanged"; else bad "raw syscalls: $msg"; fi
# Only code counts: a table in .text outside every FDE (libcrypto's kind) is
# data; a raw syscall in assembly without unwind info (Go's kind) is found.
msg=$(rt env SYSCLUSTER_VERBOSE=1 "$T/scanprobe" "$T/libdatatext.so" "$W/scan" 2>&1)
if echo "$msg" | grep -q 'deferred=96 ' && ! echo "$msg" | grep -q "raw syscall"; then ok "scan: syscall bytes in data between functions are not raw syscalls"
else bad "scan: data in .text taken for code: $msg"; fi
msg=$(rt env SYSCLUSTER_VERBOSE=1 "$T/scanprobe" "$T/libnocfi.so" "$W/scan" 2>&1)
if echo "$msg" | grep -q "libnocfi.so makes system calls without libc"; then ok "scan: a raw syscall in code without unwind info is found"
else bad "scan: a raw syscall outside every FDE missed: $msg"; fi
# A real program that loads OpenSSL's libcrypto (no raw syscall in it) is coalesced, same bytes.
if python3 -c 'import hashlib, ssl' 2>/dev/null; then
  py='import hashlib, ssl, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(2000): os.write(fd, b"%05d %s\n" % (i, hashlib.sha256(b"%d" % i).hexdigest()[:8].encode()))'
  python3 -c "$py" "$W/py1"; msg=$(rt env SYSCLUSTER_VERBOSE=1 python3 -c "$py" "$W/py2" 2>&1)
  if cmp -s "$W/py1" "$W/py2" && echo "$msg" | grep -q 'python3[^ ]*: deferred=[1-9]' && ! echo "$msg" | grep -q libcrypto; then
    ok "python3 with hashlib and ssl (libcrypto loaded): deferred, same bytes"
  else bad "python3 with libcrypto: $msg"; fi
else
  bad "python3 with hashlib and ssl not available (scripts/install-deps.sh installs python3)"
fi

# -- the programs exec starts: a static one at the end of a chain of scripts as
# deep as the kernel follows is reported (the supervisor follows as many) ------
printf '#include <unistd.h>\nint main(void) { return write(1, "static\\n", 7) != 7; }\n' > "$W/static.c"
if gcc -static -o "$W/static" "$W/static.c" 2>/dev/null; then
  prev=$W/static
  for i in 1 2 3 4 5; do printf '#!%s\n' "$prev" > "$W/chain$i"; chmod +x "$W/chain$i"; prev=$W/chain$i; done
  n=0
  for i in 3 5; do
    msg=$(rt sh -c "exec '$W/chain$i'" 2>&1)
    echo "$msg" | grep -q "static is statically linked" && echo "$msg" | grep -q '^static$' && n=$((n + 1))
  done
  if [ "$n" = 2 ]; then ok "exec: a static program behind 3 and 5 scripts is reported"; else bad "exec through scripts: $msg"; fi
else
  bad "exec through scripts: gcc -static failed (libc6-dev provides libc.a)"
fi

# -- signal dispositions: the program and its children see what it set --------
"$T/sigexec" > "$W/sig1" 2>&1; rt "$T/sigexec" > "$W/sig2" 2>&1
if [ "$(grep -c ignores "$W/sig1")" = 6 ] && cmp -s "$W/sig1" "$W/sig2"; then
  ok "signals: SIG_IGN of SIGSEGV/SIGBUS kept across exec, posix_spawn, system, popen; glibc's 32 refused as plain"
else bad "signals across exec: $(diff "$W/sig1" "$W/sig2" | tr '\n' ' ')"; fi
if [ "$(grep '^SigIgn' /proc/self/status)" = "$(rt grep '^SigIgn' /proc/self/status)" ]; then ok "signals: the program starts with the ignored signals it was given"
else bad "signals: the runtime changes the ignored signals at start"; fi

# -- libc's own stat and open calls (nftw, ftw, fts, dlopen) see every byte ----
mkdir -p "$W/lcs1" "$W/lcs2"
"$T/libcstat" "$W/lcs1" "$T/libdatatext.so" > "$W/lcs1.out" 2>&1
msg=$(rt env SYSCLUSTER_VERBOSE=1 "$T/libcstat" "$W/lcs2" "$T/libdatatext.so" 2>&1 > "$W/lcs2.out")
if grep -q '^nftw log 1600$' "$W/lcs1.out" && grep -q '^dlopen ok 7$' "$W/lcs1.out" && grep -q '^dlerror failed /nonexistent' "$W/lcs1.out" && cmp -s "$W/lcs1.out" "$W/lcs2.out" &&
   echo "$msg" | grep -q 'deferred=[1-9]'; then
  ok "nftw, ftw, fts and dlopen of a file written in short writes see every byte; dlerror() survives the runtime's lookups"
else bad "libc-internal stat/open: $(diff "$W/lcs1.out" "$W/lcs2.out" | tr '\n' ' ') $msg"; fi

# -- errors of deferred writes -----------------------------------------------
"$T/enospc" "$W/fb1" efbig 100000 > "$W/fb1.msg"; s1=$?
rt "$T/enospc" "$W/fb2" efbig 100000 > "$W/fb2.msg"; s2=$?
if cmp -s "$W/fb1" "$W/fb2" && [ "$s1" = "$s2" ] && [ "$(cat "$W/fb2.msg")" = EFBIG ]; then
  ok "EFBIG: same file ($(stat -c %s "$W/fb2") bytes), same status, the next write fails with EFBIG"
else bad "EFBIG: status $s1/$s2, $(cat "$W/fb1.msg")/$(cat "$W/fb2.msg")"; fi
mkdir -p "$W/mnt"
if mount -t tmpfs -o size=256k tmpfs "$W/mnt" 2>/dev/null; then
  "$T/enospc" "$W/mnt/a" stop 100000 > "$W/e1"; s1=$?; cp "$W/mnt/a" "$W/a1"; rm -f "$W/mnt/a"
  rt "$T/enospc" "$W/mnt/a" stop 100000 > "$W/e2"; s2=$?; cp "$W/mnt/a" "$W/a2"; rm -f "$W/mnt/a"
  if cmp -s "$W/a1" "$W/a2" && [ "$s1" = 1 ] && [ "$s2" = 1 ] && [ "$(cat "$W/e2")" = ENOSPC ]; then
    ok "ENOSPC: same bytes on the full tmpfs, a write fails with ENOSPC"
  else bad "ENOSPC stop: $s1/$s2 $(cat "$W/e1")/$(cat "$W/e2")"; fi
  r1=$("$T/enospc" "$W/mnt/b" close 33000); rm -f "$W/mnt/b"
  r2=$(rt "$T/enospc" "$W/mnt/b" close 33000); rm -f "$W/mnt/b"
  if [ "$r1" = "$r2" ]; then ok "ENOSPC: writes ignoring errors, then close: as plain ($r2)"; else bad "ENOSPC close: plain '$r1', runtime '$r2'"; fi
  # A logger that frees space on ENOSPC and writes the record again: the
  # same bytes as plain, and (one writer: the runtime stops deferring near
  # full) the error at the same records.
  for m in retry retry-other retry-fork; do
    "$T/enospc" "$W/mnt/a" $m 30000 > "$W/e1"; s1=$?; cp "$W/mnt/a" "$W/a1"; rm -f "$W/mnt"/*
    rt "$T/enospc" "$W/mnt/a" $m 30000 > "$W/e2"; s2=$?; cp "$W/mnt/a" "$W/a2"; rm -f "$W/mnt"/*
    if [ "$s1" = 0 ] && [ "$s2" = 0 ] && cmp -s "$W/a1" "$W/a2" && cmp -s "$W/e1" "$W/e2" && [ "$(wc -l < "$W/e2")" -ge 1 ]; then
      ok "ENOSPC $m: every record once, in order, as plain; $(tr '\n' ' ' < "$W/e2")"
    else bad "ENOSPC $m: status $s1/$s2, plain '$(tr '\n' ' ' < "$W/e1")' runtime '$(tr '\n' ' ' < "$W/e2")', $(cmp "$W/a1" "$W/a2" 2>&1)"; fi
  done
  umount "$W/mnt"
else
  skipped "ENOSPC on a small tmpfs: mounting needs root"
fi

# -- plans: clusters applied at this program's own call sites ------------------
# planned.c finds the return addresses of its sites and prints the plan the
# supervisor would pass; each mode's checks must hold plain and planned, and
# the -v report must show the sites were applied.
PLAN=$("$T/planned" spec)
pl() { env LD_PRELOAD="$LIB" SYSCLUSTER_PLAN="$PLAN" SYSCLUSTER_VERBOSE=1 "$@"; }
answered() { # answered SITE REPORT: how many calls at SITE the runtime answered
  sed -n "s/.*plan cluster #[0-9]* at $1: [0-9]* calls, \([0-9]*\) .*/\1/p" "$2" | head -1
}
at_least() { [ "${1:-0}" -ge "$2" ] 2>/dev/null; }
for mode in clock pid write seek dlopen; do
  arg=; [ "$mode" = write ] || [ "$mode" = seek ] && arg="$W/p$mode"
  plain_out=$("$T/planned" $mode $arg 2>&1); s1=$?
  plan_out=$(pl "$T/planned" $mode $arg 2>"$W/plan.err"); s2=$?
  case $mode in
    clock) applied=$(at_least "$(answered gtod "$W/plan.err")" 2000 && at_least "$(answered cgt "$W/plan.err")" 2000 &&
                     at_least "$(answered time "$W/plan.err")" 2000 && echo y) ;;
    pid) applied=$(at_least "$(answered getpid "$W/plan.err")" 1000 && at_least "$(answered gettid "$W/plan.err")" 1000 &&
                   at_least "$(answered libc-getpid "$W/plan.err")" 1000 && echo y) ;;
    write) applied=$(grep -q 'deferred=19996 ' "$W/plan.err" && echo y) ;; # the planned writes but the first 4, none of the others
    seek) applied=$(at_least "$(answered seek "$W/plan.err")" 1000 && at_least "$(answered read "$W/plan.err")" 1000 && echo y) ;;
    dlopen) applied=$(at_least "$(answered plugin-gtod "$W/plan.err")" 2000 && echo y) ;;
  esac
  if [ "$s1" = 0 ] && [ "$s2" = 0 ] && [ "$applied" = y ]; then
    ok "plan $mode: $(echo "$plan_out" | grep -c '^ok') checks hold planned as plain, sites applied"
  else
    bad "plan $mode: plain $s1, planned $s2, applied '$applied'"; echo "$plain_out$plan_out" | grep -v '^ok'; grep plan "$W/plan.err"
  fi
done
# A pending offset outlives SIGKILL (the guardian sets it), and is set within the time bound.
r1=$("$T/planned" seekkill "$W/pk"); r2=$(SYSCLUSTER_FLUSH_MS=60000 pl "$T/planned" seekkill "$W/pk" 2>/dev/null)
r3=$(pl "$T/planned" seekkill "$W/pk" 2>/dev/null)
if [ "$r1" = "before 20064 after 20064" ] && [ "$r2" = "before 0 after 20064" ] && [ "$r3" = "before 20064 after 20064" ]; then
  ok "plan seek: a SIGKILLed child's pending offset reaches the description it shares (and within 5 ms without the kill)"
else bad "plan seekkill: plain '$r1', pending '$r2', time bound '$r3'"; fi
# The module found by path when the plan has no build-id; not found with another build-id.
PLAN=$(printf '%s\n' "$PLAN" | awk -F'\t' 'BEGIN { OFS = "\t" } $1 == "module" { $3 = "-" } { print }')
pl "$T/planned" clock >/dev/null 2>"$W/plan.err"; n1=$(answered gtod "$W/plan.err")
PLAN=$(printf '%s\n' "$PLAN" | awk -F'\t' 'BEGIN { OFS = "\t" } $1 == "module" { $3 = "00112233445566778899" } { print }')
pl "$T/planned" clock >/dev/null 2>"$W/plan.err"; n2=$(answered gtod "$W/plan.err")
if at_least "$n1" 2000 && [ -z "$n2" ]; then ok "plan: a module without build-id matched by path; another build-id matches nothing"
else bad "plan module matching: by path '$n1', other build-id '$n2'"; fi
PLAN=$("$T/planned" spec)
# More sites than the library holds: the rest are named, not silently dropped.
msg=$(env LD_PRELOAD="$LIB" SYSCLUSTER_PLAN="$(printf '%s\n' "$PLAN"; for i in $(seq 600); do printf 'site\tclock\t0\t%x\t96\t0\t9\tx:%d\n' $((4096 + i)) "$i"; done)" /bin/true 2>&1)
if echo "$msg" | grep -q "the plan has $(( $(printf '%s\n' "$PLAN" | grep -c '^site') + 600 - 512 )) sites this runtime cannot hold"; then ok "plan: sites beyond the library's table are reported"
else bad "plan: too many sites: '$msg'"; fi
if mount -t tmpfs -o size=256k tmpfs "$W/mnt" 2>/dev/null; then
  "$T/planned" enospc "$W/mnt/a" > "$W/e1"; s1=$?; cp "$W/mnt/a" "$W/a1"; rm -f "$W/mnt/a"
  pl "$T/planned" enospc "$W/mnt/a" > "$W/e2" 2>"$W/plan.err"; s2=$?; cp "$W/mnt/a" "$W/a2"; rm -f "$W/mnt/a"
  if cmp -s "$W/a1" "$W/a2" && [ "$s1" = 1 ] && [ "$s2" = 1 ] && [ "$(cat "$W/e2")" = ENOSPC ] && grep -q 'deferred=[1-9]' "$W/plan.err"; then
    ok "plan write: ENOSPC: same bytes on the full tmpfs, a later planned write fails with ENOSPC"
  else bad "plan ENOSPC: $s1/$s2 $(cat "$W/e1")/$(cat "$W/e2")"; fi
  umount "$W/mnt"
else
  skipped "plan ENOSPC on a small tmpfs: mounting needs root"
fi

# -- corpus and coreutils, plain vs runtime ------------------------------------
head -c 300000 /dev/urandom > "$W/in"
for bs in 8 512; do
  dd if="$W/in" of="$W/dd1" bs=$bs 2>/dev/null; s1=$?
  rt dd if="$W/in" of="$W/dd2" bs=$bs 2>/dev/null; s2=$?
  if cmp -s "$W/dd1" "$W/dd2" && [ "$s1" = "$s2" ]; then ok "dd bs=$bs"; else bad "dd bs=$bs"; fi
done
# Plain against `syscluster run` with `syscluster verify --run`: stdout,
# stderr, exit status and files compared byte for byte in scratch copies,
# and the runtime acted (fewer crossings).
SC=${SC:-$PWD/../target/release/syscluster}
# vrun NAME VERIFY-ARGS...: passes when verify finds no difference; its
# report in $W/NAME.verify.
vrun() {
  local name=$1; shift
  mkdir -p "$W/empty"
  "$SC" verify --dir "$W/empty" "$@" > "$W/$name.verify" 2>&1
}
crossings() { awk '$1 == "crossings" { print $2, $3 }' "$W/$1.verify"; }
if [ -x "$CORPUS/write8" ] && [ -x "$SC" ]; then
  if vrun write8 --run -- "$CORPUS/write8" out 100000 && read -r a b < <(crossings write8) && [ "$b" -lt $((a / 10)) ]; then
    ok "corpus write8 (syscluster verify --run: same bytes, crossings $a -> $b)"
  else bad "corpus write8: $(cat "$W/write8.verify")"; fi
  if vrun threads --run --no-count -- "$CORPUS/threads" . 4 50000; then ok "corpus threads (syscluster verify --run)"
  else bad "corpus threads: $(cat "$W/threads.verify")"; fi
  if vrun forkexec --run --no-count -- "$CORPUS/forkexec" out 50000; then ok "corpus forkexec (syscluster verify --run)"
  else bad "corpus forkexec: $(cat "$W/forkexec.verify")"; fi
  # ENOSPC from the environment: each scratch copy on a 256 KiB tmpfs.
  if [ "$(id -u)" = 0 ]; then
    if vrun enospc --run --no-count --fs-limit 256K -- "$T/enospc" a stop 100000 && grep -qE '^  exit +1 +1$' "$W/enospc.verify"; then
      ok "ENOSPC stop (syscluster verify --run --fs-limit 256K): same bytes, both exit 1"
    else bad "ENOSPC stop under verify: $(cat "$W/enospc.verify")"; fi
  else
    skipped "syscluster verify --fs-limit: mounting needs root"
  fi
else
  skipped "corpus: run make -C tests/corpus and cargo build --release"
fi

echo "runtime tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
