#!/usr/bin/env bash
# The preload library built with AddressSanitizer and UBSan (make test-asan)
# on the checks that drive most of its code: the in-process semantics, short
# writes of two fds sharing a description, every way a program ends, the
# differential fuzzer, plans (their parsing included), and corpus programs.
# Each runs plain and under the sanitized library and must give the same
# bytes and status, and no sanitizer may report anything: reports go to
# files (log_path), so that one from any process — a child, the guardian —
# fails the run even when its exit status is not looked at.
#
# ASan's run-time library must be the first library loaded: it goes first in
# LD_PRELOAD, before the library it instruments (the programs themselves are
# the plain test programs).  Leak detection is off: it would report the
# programs' own leaks (dd, python) and stop the world with ptrace, which the
# guardian's seccomp filter refuses; what the library allocates is freed or
# kept for the process's life by design.  disable_coredump=0: ASan's own
# start-up calls setrlimit, which the library wraps, before ASan has mapped
# its shadow memory — a wrapper that runs then faults on any instrumented
# access (not a defect of the library: the plain build runs it fine).
# dd is not among the programs: coreutils' dd asks aligned_alloc for 8
# bytes aligned to 4096, which ASan refuses by itself.
#   ASAN_LIB=build/asan/libsyscluster-preload.so T=build/test test/asan.sh
# Exit 0 when every check passed, 1 otherwise.
set -u
cd "$(dirname "$0")/.."
LIB=$PWD/${ASAN_LIB:?ASAN_LIB: the sanitized preload library}
T=$PWD/${T:?T: the directory of the test programs}
CORPUS=$PWD/../tests/corpus/bin
ASAN_RT=$(${CC:-gcc} -print-file-name=libasan.so)
[ -f "$ASAN_RT" ] || { echo "FAIL asan: no libasan.so from ${CC:-gcc} -print-file-name"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/reports"
export ASAN_OPTIONS="detect_leaks=0:disable_coredump=0:halt_on_error=1:log_path=$W/reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$W/reports/ubsan"
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   asan: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL asan: $*"; }
rt() { env LD_PRELOAD="$ASAN_RT:$LIB" SYSCLUSTER_COALESCE=4096 "$@"; }

# In-process semantics: every check of semantics.c under the library.
mkdir -p "$W/sem"
if out=$(rt timeout 300 "$T/semantics" "$W/sem" 2>&1); then
  ok "semantics: $(echo "$out" | grep -c '^ok') checks"
else
  bad "semantics"; echo "$out" | grep -v '^ok' | head -20
fi
# fds 1 and 2 sharing one description: deferred and coalesced, in order.
"$T/semantics" "$W/sem" interleave 2000 > "$W/il1" 2>&1
rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" interleave 2000 > "$W/il2" 2>&1
if head -n -1 "$W/il2" | cmp -s "$W/il1" - && tail -1 "$W/il2" | grep -q 'deferred=[1-9]'; then
  ok "> log 2>&1: 2000 lines in order, deferred"
else bad "> log 2>&1: $(tail -1 "$W/il2")"; fi
# Every way a program ends flushes every byte.
for m in return exit _exit quick_exit pthread abort exec; do
  rt "$T/semantics" "$W/sem" exit "$m" 2>/dev/null
  if [ "$(stat -c %s "$W/sem/exit")" = 8000 ]; then ok "ends by $m: every byte written"; else bad "ends by $m"; fi
done
# The fast path and the threads that take slots from it (no guardian in
# this build: only threads take them).
r=$(rt env SYSCLUSTER_VERBOSE=1 timeout 300 "$T/fastpath" "$W/fast" threads 50000 2>"$W/fast.err")
if [ "${r#ok}" != "$r" ] && grep -q 'fast=[1-9]' "$W/fast.err"; then ok "fast path, threads: $r"
else bad "fast path, threads: $r $(grep -o 'fast=[0-9]*' "$W/fast.err")"; fi
rm -f "$W/fast"
# The differential fuzzer: random calls over shared files, plain vs runtime.
if out=$(SC_PRELOAD_FIRST=$ASAN_RT test/fuzz.sh "$LIB" "$T/fuzz" 1 25 400); then ok "$out"; else bad "fuzzer"; echo "$out"; fi
# Plans: parsed, matched to this program's sites, applied.
PLAN=$("$T/planned" spec)
for mode in clock pid write seek; do
  arg=; [ "$mode" = write ] || [ "$mode" = seek ] && arg="$W/p$mode"
  plain=$("$T/planned" $mode $arg 2>&1); s1=$?
  planned=$(rt env SYSCLUSTER_PLAN="$PLAN" SYSCLUSTER_VERBOSE=1 "$T/planned" $mode $arg 2>"$W/plan.err"); s2=$?
  # The sites answered calls (a planned write shows as deferred=).
  applied='plan cluster #[0-9]* at .*: [0-9]* calls, [1-9]'; [ "$mode" = write ] && applied='deferred=[1-9]'
  if [ "$s1" = 0 ] && [ "$s2" = 0 ] && grep -q "$applied" "$W/plan.err"; then
    ok "plan $mode: $(echo "$planned" | grep -c '^ok') checks hold planned as plain, sites applied"
  else bad "plan $mode: plain $s1, planned $s2"; echo "$plain$planned" | grep -v '^ok' | head; grep plan "$W/plan.err" | head; fi
done
# A plan with more sites than the library holds, and one cut short.
msg=$(rt env SYSCLUSTER_PLAN="$(printf '%s\n' "$PLAN"; for i in $(seq 600); do printf 'site\tclock\t0\t%x\t96\t0\t9\tx:%d\n' $((4096 + i)) "$i"; done)" true 2>&1)
if echo "$msg" | grep -q "sites this runtime cannot hold"; then ok "plan: sites beyond the library's table reported"; else bad "plan: too many sites: $msg"; fi
if rt env SYSCLUSTER_PLAN="${PLAN:0:$((${#PLAN} / 2))}" true >/dev/null 2>&1; then ok "plan cut in half: the program still runs"; else bad "plan cut in half"; fi
# Real programs, plain vs runtime.
if [ -x "$CORPUS/write8" ]; then
  "$CORPUS/write8" "$W/w1" 100000; rt env SYSCLUSTER_VERBOSE=1 "$CORPUS/write8" "$W/w2" 100000 2> "$W/w.err"
  if cmp -s "$W/w1" "$W/w2" && grep -q 'deferred=[1-9]' "$W/w.err"; then ok "corpus write8: same bytes, deferred"; else bad "corpus write8: $(cat "$W/w.err")"; fi
  mkdir -p "$W/t1" "$W/t2"; "$CORPUS/threads" "$W/t1" 4 50000; rt env SYSCLUSTER_VERBOSE=1 "$CORPUS/threads" "$W/t2" 4 50000 2> "$W/t.err"
  if diff -r "$W/t1" "$W/t2" >/dev/null && grep -q 'deferred=[1-9]' "$W/t.err"; then ok "corpus threads: same files, deferred"; else bad "corpus threads: $(cat "$W/t.err")"; fi
  "$CORPUS/forkexec" "$W/f1" 50000; rt env SYSCLUSTER_VERBOSE=1 "$CORPUS/forkexec" "$W/f2" 50000 2> "$W/f.err"
  if cmp -s "$W/f1" "$W/f2" && grep -q 'deferred=[1-9]' "$W/f.err"; then ok "corpus forkexec: same bytes, deferred"; else bad "corpus forkexec: $(cat "$W/f.err")"; fi
else
  bad "corpus: not built (make -C tests/corpus)"
fi

# Whatever any process reported.
if compgen -G "$W/reports/*" >/dev/null; then
  bad "sanitizer reports:"; head -n 40 "$W"/reports/* | sed 's/^/    /'
else ok "no sanitizer report from any process"; fi
echo "runtime asan tests: $pass passed, $fail failed"
[ "$fail" = 0 ]
