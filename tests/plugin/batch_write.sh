#!/usr/bin/env bash
# Execution test of the plugin's batched writes (llvm/lib/BatchWrite.cpp,
# docs/COMPILER.md): tests/plugin/batch_write.c — a loop of one checked
# write of one block, as mkfs.fat clears sectors — recorded, advised
# (advise must make a batch-writes cluster of it), built by clang-19 alone
# and by `syscluster cc` with that plan; the two must leave the same
# stdout, stderr, exit status and file:
# - 0 to 5000 blocks of 512 B and 4 KiB (batches of 1024 blocks and their
#   remainders), with fewer crossings for the rebuilt one (strace -c);
# - real faults: a 256 KiB tmpfs filling inside a block (a short write)
#   and on a block boundary in the middle of a batch (ENOSPC), EBADF (the descriptor closed before the loop), a file
#   size limit that falls inside a block in the middle of a batch (a
#   short write, then SIGXFSZ; and EFBIG with SIGXFSZ ignored);
# - faults injected by `syscluster verify --inject` into the K-th write
#   the source issues (the runtime makes its writes one by one there:
#   MULTICALL_BACKEND=direct): ENOSPC, EIO, EINTR, short writes;
# - faults injected by strace into the rebuilt program's writevs, in the
#   middle of the loop: a failed batch (EIO, EINTR) gives the loop back,
#   whose real write then succeeds (the same file as a run without the
#   fault) or fails as the original's at that block did (EIO injected into
#   both: the same message, errno and file).
# Needs root for the tmpfs (as tests/plugin/run.sh: required in CI).
#   tests/plugin/batch_write.sh        (after make build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib/require.sh"
BIN=${BIN:-$ROOT/target/release/syscluster}
CLANG=${SYSCLUSTER_CLANG:-clang-19}
T=$(mktemp -d /tmp/sc-batchwrite.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "batch_write test: FAIL: $*" >&2; exit 1; }
cd "$T"
export XDG_CACHE_HOME=$T/cache
export MULTICALL_CALIBRATION=$ROOT/llvm/test/calibration.json
command -v strace > /dev/null || fail "strace is missing (scripts/install-deps.sh)"
SRC=$ROOT/tests/plugin/batch_write.c
"$CLANG" -O2 -g "$SRC" -o plain
"$BIN" record -q -o rec.json -- "$T/plain" rec.out 3000 512 > /dev/null
"$BIN" advise -q rec.json --plan-out plan.json > advice.txt
grep -q '"rule": "batch-writes"' plan.json || fail "advise made no batch-writes cluster: $(head -30 advice.txt)"
"$BIN" cc --plan "$T/plan.json" --remarks "$T/remarks" -O2 -g "$SRC" -o sc
grep -q "is written in batches" remarks/*.yaml ||
  fail "the loop was not batched: $(grep -h -A3 'Name:' remarks/*.yaml | head -20)"
nm sc | grep -q __syscluster_batch_write || fail "sc does not call __syscluster_batch_write"

# same NAME SCRIPT: runs SCRIPT for both builds ($PROG) in fresh
# directories, compares everything they leave.
same() {
  local name=$1 script=$2 v
  for v in plain sc; do
    mkdir -p "$v.$name"
    (cd "$v.$name" && PROG="$T/$v" bash -c "$script" > stdout 2> stderr; echo $? > status) || true
    sed -i -E 's/^bash: line [0-9]+: +[0-9]+ /bash: PID /; s#'"$T"'/(plain|sc)#PROG#g' "$v.$name/stderr"
  done
  diff -r "plain.$name" "sc.$name" > /dev/null ||
    fail "$name: the two builds differ: $(diff -r "plain.$name" "sc.$name" | head -8)"
  echo "batch_write test: $name: same stdout, stderr, status and file"
}

for size in 512 4096; do
  for k in 0 1 2 3 1023 1024 1025 2048 5000; do
    same "k$k-$size" "\$PROG out $k $size"
  done
done
grep -q "^position 2560100$" sc.k5000-512/stdout || fail "k5000-512: $(cat sc.k5000-512/stdout)"

# Crossings: the loop's 5000 writes are 5 writevs and an fstat.
for v in plain sc; do
  strace -f -c -o "$v.count" "$T/$v" out.count 5000 512 > /dev/null
done
calls() { awk '$NF == "total" { print $(NF-2) }' "$1"; }
p=$(calls plain.count) s=$(calls sc.count)
[ "$s" -lt $((p - 4900)) ] || fail "crossings: plain $p, sc $s (expected about 4990 fewer)"
grep -q " writev$" sc.count || fail "sc made no writev: $(cat sc.count)"
echo "batch_write test: crossings: plain $p, sc $s"

# Runs of fewer iterations than the pass's break-even (the remark's "it
# pays from N iterations": the test's calibration prices a write, a
# writev and the fstat at its crossing) run as written: no writev; from
# N, batched.
min=$(cat remarks/*.yaml | tr -s ' \n' ' ' | grep -o "it pays from [0-9]* iterations" | head -1 | awk '{ print $4 }')
[ -n "$min" ] && [ "$min" -gt 3 ] || fail "the remark gives no break-even above the runtime's 3 iterations: '$min'"
for k in $((min - 1)) "$min"; do
  same "min$k" "\$PROG out $k 512"
  strace -f -e trace=writev -o "min$k.trace" "$T/sc" "out.min$k" "$k" 512 > /dev/null
done
! grep -q "^[0-9]* *writev(" "min$((min - 1)).trace" || fail "$((min - 1)) iterations (below $min) made a writev"
grep -q "^[0-9]* *writev(" "min$min.trace" || fail "$min iterations made no writev: $(head -5 "min$min.trace")"
echo "batch_write test: break-even $min iterations: $((min - 1)) run as written, $min batched"

# Real faults.
same ebadf "\$PROG out 3000 512 close"
# RLIMIT_FSIZE of 600 KiB: 614400 - 100 = 1199.8 blocks of 512 B, inside
# the second batch: block 1199 is written in part (412 B), a short write
# the handler reports; the next write would raise SIGXFSZ.
same fsize-short "ulimit -f 600; \$PROG out 3000 512; echo status \$?; stat -c %s out"
grep -q "failed whilst writing block 1199: result 412: errno 0" sc.fsize-short/stderr ||
  fail "fsize-short: $(cat sc.fsize-short/stderr)"
same fsize-short-4096 "ulimit -f 600; \$PROG out 3000 4096; echo status \$?; stat -c %s out"
# A limit on a block boundary (614300 B = 6143 blocks of 100 B, the last
# block of the sixth batch): the batch stops there, the real write gets
# SIGXFSZ (killed) or, ignored, EFBIG.
same fsize-boundary "ulimit -f 600; \$PROG out 8000 100; echo status \$?; stat -c %s out"
grep -q "^614400$" sc.fsize-boundary/stdout || fail "fsize-boundary: $(cat sc.fsize-boundary/stdout)"
same fsize-efbig "trap '' XFSZ; ulimit -f 600; \$PROG out 8000 100; echo status \$?; stat -c %s out"
grep -q "block 6143: result -1: errno 27" sc.fsize-efbig/stderr || fail "fsize-efbig: no EFBIG: $(cat sc.fsize-efbig/stderr)"
if [ "$(id -u)" -eq 0 ]; then
  # 262144 - 100 B: 511 blocks of 512 B and 412 B of the next (a short
  # write in the first batch); 7279 blocks of 36 B exactly (the eighth
  # batch stops on the boundary, the real write fails with ENOSPC).
  tmpfs="unshare -m bash -c 'mkdir -p full && mount -t tmpfs -o size=256k sc full && \$PROG full/out"
  same enospc-short "$tmpfs 3000 512; echo status \$?; stat -c %s full/out'"
  grep -q "block 511: result 412: errno 0" sc.enospc-short/stderr || fail "enospc-short: $(cat sc.enospc-short/stderr)"
  same enospc "$tmpfs 8000 36; echo status \$?; stat -c %s full/out'"
  grep -q "block 7279: result -1: errno 28" sc.enospc/stderr || fail "enospc: $(cat sc.enospc/stderr)"
else
  t_lacks tmpfs "enospc needs root for a tmpfs mount"
fi

# Injected into the K-th write the source issues (the header is write 1).
mkdir -p empty
for fault in write:ENOSPC@2 write:EIO@1500 write:EINTR@1026 write:short@700 write:short=100@3000; do
  "$BIN" verify --dir empty --inject "$fault" -- "$T/plain" out 3000 512 ::: "$T/sc" out 3000 512 > "$fault.verify" 2>&1 ||
    fail "verify $fault: $(cat "$fault.verify")"
  echo "batch_write test: $fault: same stdout, stderr, status and file (syscluster verify)"
done

# Injected by strace into the rebuilt program's second writev (blocks
# 1024-2047): the loop resumes at block 1024 with the real write.
inject() { # NAME PROGRAM STRACE-INJECT...: PROGRAM under strace's faults
  local name=$1 prog=$2; shift 2
  local args=()
  for f in "$@"; do args+=(-e "inject=$f"); done
  mkdir -p "$name" && (cd "$name" && strace -qq -f -o /dev/null -e trace=write,writev "${args[@]}" \
    "$T/$prog" out 3000 512 > stdout 2> stderr; echo $? > status) || true
}
mkdir -p ref && (cd ref && "$T/plain" out 3000 512 > stdout 2> stderr; echo $? > status)
for e in EIO EINTR; do
  inject "writev-$e" sc "writev:error=$e:when=2"
  diff -r ref "writev-$e" > /dev/null || fail "writev:$e@2: not the run without the fault: $(diff -r ref "writev-$e" | head -5)"
  grep -q "^position 1536100$" "writev-$e/stdout" || fail "writev:$e@2: $(cat "writev-$e/stdout")"
  echo "batch_write test: writev:$e@2 (strace): the loop resumed, the same file as without the fault"
done
# The same block failing for real in both: the plain build's 1026th write
# (the header, then blocks 0-1024), the rebuilt one's second writev and
# the write the loop resumes with (its second).
inject plain-eio plain "write:error=EIO:when=1026"
inject sc-eio sc "writev:error=EIO:when=2" "write:error=EIO:when=2"
diff -r plain-eio sc-eio > /dev/null || fail "EIO at block 1024: $(diff -r plain-eio sc-eio | head -5)"
grep -q "failed whilst writing block 1024: result -1: errno 5" sc-eio/stderr || fail "EIO at block 1024: $(cat sc-eio/stderr)"
echo "batch_write test: EIO at block 1024, inside the loop (strace): the same message, errno and file"
echo "batch_write test: PASS"
