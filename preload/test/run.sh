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
