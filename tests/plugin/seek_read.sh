#!/usr/bin/env bash
# Execution test of the plugin's lseek + read → pread (llvm/lib/SeekRead.cpp,
# docs/COMPILER.md): tests/plugin/seek_read.c built by clang-19 alone and
# by `syscluster cc` with a plan naming its pair gives the same stdout,
# stderr and exit status on a regular file (reads inside it, across its
# end, past it; the position the pairs leave read back by a plain read and
# by lseek(SEEK_CUR); a close and reopen), a directory (EISDIR), a pipe
# (ESPIPE), /dev/zero (an lseek that returns 0), a negative offset
# (EINVAL), a descriptor opened with and without O_CLOEXEC, a fork whose
# child reads at the shared position after pairs (pthread_atfork sets the
# pending one), a program spawned from another translation unit reading
# the inherited descriptor (those two linked statically too), and all of
# it again under
# MULTICALL_BACKEND=direct; and the rebuilt program issues fewer system
# calls on a close-on-exec file (counted by strace).
#   tests/plugin/seek_read.sh        (after make build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/release/syscluster}
CLANG=${SYSCLUSTER_CLANG:-clang-19}
T=$(mktemp -d /tmp/sc-seekread.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "seek_read test: FAIL: $*" >&2; exit 1; }
cd "$T"
export XDG_CACHE_HOME=$T/cache
export MULTICALL_CALIBRATION=$ROOT/llvm/test/calibration.json
command -v strace > /dev/null || fail "strace is missing (scripts/install-deps.sh)"
SRC=$ROOT/tests/plugin/seek_read.c
"$CLANG" -O2 -g "$SRC" "$ROOT/tests/plugin/seek_read_spawn.c" -o plain
head -c 10000 /dev/urandom > file
# The plan: a run reading the file in 64-byte pieces at 300 offsets.
"$BIN" record -q -o rec.json -- "$T/plain" file $(seq -f 'g%.0f' 0 32 9568) > /dev/null
"$BIN" advise -q rec.json --plan-out plan.json > advice.txt
grep -q '"rule": "pread"' plan.json || fail "advise made no pread cluster: $(head -20 advice.txt)"
"$BIN" cc --plan "$T/plan.json" --remarks "$T/remarks" -O2 -g -c "$SRC" -o sc.o
"$BIN" cc --plan "$T/plan.json" -O2 -g sc.o "$ROOT/tests/plugin/seek_read_spawn.c" -o sc
grep -q "became one pread" remarks/*.yaml || fail "the pair was not replaced: $(grep -h String remarks/*.yaml | head -5)"
mkdir dir
cases=(
  "file g0 g100 n c g9990 n c g20000 c g64 r n c g9936 c"
  "file g5000 n n c g-5"
  "file R g0 g100 n c g9990 n c g20000 c g64 r n c R g9936 c"
  "file R g0 g100 f c g200 f n c g300 c"
  "file R g0 R g100 f g200 c"
  "file g0 g100 x c g200 x n x R g300 x c"
  "dir g0 c"
  "/dev/zero g0 g100"
)
run() { # run VARIANT INPUT OPS...: stdout, stderr and status in one file
  local v=$1; shift
  local rc=0
  "$T/$v" "$@" > "$v.out" 2> "$v.err" || rc=$?
  echo "status $rc" >> "$v.out"
  cat "$v.err" >> "$v.out"
}
n=0
for direct in "" direct; do
  for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    MULTICALL_BACKEND=$direct run plain $c
    # shellcheck disable=SC2086
    MULTICALL_BACKEND=$direct run sc $c
    sed -i 's/^sc: /plain: /' sc.out
    diff plain.out sc.out > /dev/null || fail "${direct:-auto}: $c: $(diff plain.out sc.out | head -5)"
    n=$((n + 1))
  done
  for v in plain sc; do
    rc=0
    printf 'abcdefghijklmnopqrstuvwxyz' | "$T/$v" /dev/stdin g0 > "$v.out" 2> "$v.err" || rc=$?
    echo "status $rc" >> "$v.out"
    sed 's/^sc: /plain: /' "$v.err" >> "$v.out"
  done
  diff plain.out sc.out > /dev/null || fail "${direct:-auto}: a pipe: $(diff plain.out sc.out | head -5)"
  n=$((n + 1))
done
# Linked statically (libc.a's pthread_atfork and atexit): the fork and
# the spawn again.
"$BIN" cc --plan "$T/plan.json" -O2 -g -static sc.o "$ROOT/tests/plugin/seek_read_spawn.c" -o sc-static 2> static.err ||
  fail "a static link failed: $(head -3 static.err)"
for c in "file R g0 g100 f c g200 f n c g300 c" "file g0 g100 x c R g200 x c"; do
  # shellcheck disable=SC2086
  run plain $c
  # shellcheck disable=SC2086
  run sc-static $c
  sed -i 's/^sc-static: /plain: /' sc-static.out
  diff plain.out sc-static.out > /dev/null || fail "static: $c: $(diff plain.out sc-static.out | head -5)"
  n=$((n + 1))
done
echo "seek_read test: the same output, errors and status in $n runs (a file with and without O_CLOEXEC, a fork, a spawn, linked statically too, a directory, a pipe, /dev/zero, EINVAL; auto and MULTICALL_BACKEND=direct)"
count() { strace -f -c -o "$1.strace" "$T/$1" file R g0 g100 g200 g300 g400 g500 g600 g700 n c > /dev/null &&
  awk '$NF == "total" { print $(NF-2) }' "$1.strace"; }
before=$(count plain) after=$(count sc)
echo "seek_read test: system calls of an O_CLOEXEC reopen, 8 pairs, a read and an lseek: $before (clang) -> $after (syscluster cc)"
[ "$after" -lt "$before" ] || fail "no fewer system calls ($before -> $after)"
echo "seek_read test: PASS"
