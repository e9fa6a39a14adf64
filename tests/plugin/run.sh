#!/usr/bin/env bash
# Execution test of the compiler plugin (issue 12). Last, check_region
# and check_full (below) do the same for straight-line regions
# (region_report.c; built with -DFULL_CHECKS, its writes checked `!= n`),
# check_interchange for stores between a region's calls (§3.3.1,
# interchange_report.c),
# check_spec for a copy loop specialized on its profiled block size.
# The copy program of seed
# 000 (tests/corpus/copy.c) and copy_report.c (the same loop, then the last
# read's result, errno, both offsets and the buffer printed) built by
# clang-19 alone and by `syscluster cc` with a plan recorded from a real run
# must give the same stdout, stderr, exit status and files in every case below — sizes around the block size,
# a missing input, an unwritable output, a short-writing file size limit,
# a pipe reader that goes away, a pipe as input, a full tmpfs (ENOSPC),
# and faults injected by `syscluster verify --inject` (ENOSPC, EIO, EINTR,
# EFAULT, EBADF, ESPIPE, short reads and writes, early and late) —
# and the plugin-built program must cross into the kernel fewer times.
# copy.c is built as for this host (the calibration decides: a short copy or
# a pipe runs the loop as written, a long copy between files is one looped
# multi-call), copy_report.c with --assume-gain (every case through
# libmulticall, as on a host with the kernel module).
# Needs root for the tmpfs case: as root (CI) it must run; elsewhere it is
# skipped with a message unless tmpfs is required (SYSCLUSTER_REQUIRE, or
# CI set: tests/lib/require.sh), where that is a failure.
#   tests/plugin/run.sh        (after make build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib/require.sh"
BIN=${BIN:-$ROOT/target/release/syscluster}
CLANG=${SYSCLUSTER_CLANG:-clang-19}
T=$(mktemp -d /tmp/sc-plugin.XXXXXX)
[ -n "${KEEP:-}" ] && echo "plugin test: in $T" >&2
cleanup() { [ -n "${KEEP:-}" ] || rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "plugin test: FAIL: $*" >&2; exit 1; }
cd "$T"
# The test programs are C of the project's own: warning-free, as every C
# file of the tree is built (-Werror), in each variant the tests build
# ($d: one or two flags).
for src in "$ROOT"/tests/plugin/*.c; do
  for d in -DCHECK=1 "-DCHECK=3 -DVARBS"; do
    "$CLANG" -fsyntax-only -Wall -Wextra -Werror $d "$src" || fail "$(basename "$src") $d: warnings (-Werror)"
  done
done
# advise's cache of its own: no test depends on the calibration this
# machine has (or lacks) in ~/.cache.
export XDG_CACHE_HOME=$T/cache
# The pass decides from the lit tests' calibration (round numbers: a
# first context pays from 42 blocks of 4 KiB), not from one measured here
# under whatever load: the decisions are the same on every machine. The
# rebuilt programs read it too and find it made for another machine, so
# libmulticall runs on its built-in choices.
export MULTICALL_CALIBRATION=$ROOT/llvm/test/calibration.json

# run NAME SETUP...: runs both programs the same way (SETUP is a shell
# snippet run in a fresh directory, the program in $PROG) and compares
# everything they leave.
run() {
  local name=$1 script=$2 v dir=$PWD
  for v in plain sc; do
    mkdir -p "$v.$name"
    (cd "$v.$name" && PROG="$dir/copy_$v" bash -c "$script" > stdout 2> stderr; echo $? > status) || true
    # The shell's report of a killed program names its pid and the program.
    sed -i -E 's/^bash: line [0-9]+: +[0-9]+ /bash: PID /; s/copy_(plain|sc)/copy_X/g' "$v.$name/stderr"
  done
  diff -r "plain.$name" "sc.$name" > /dev/null || fail "$(basename "$PWD") $name: the two builds differ: $(diff -r plain.$name sc.$name | head -5)"
  echo "plugin test: $(basename "$PWD") $name: same stdout, stderr, status and files"
}

# verify NAME VERIFY-ARGS...: `syscluster verify` in a scratch copy of
# ./empty (the programs and inputs are named by absolute paths); its report
# kept in NAME.verify.
verify() {
  local name=$1; shift
  "$BIN" verify --dir empty "$@" > "$name.verify" 2>&1 ||
    fail "$(basename "$PWD") $name: syscluster verify: $(cat "$name.verify")"
  echo "plugin test: $(basename "$PWD") $name: same stdout, stderr, status and files (syscluster verify)"
}

# crossings NAME: "BEFORE AFTER", the crossings of the two variants in
# NAME.verify (original, candidate).
crossings() { grep '^  crossings' "$1.verify" | awk '{print $2, $3}'; }

# The first multi-call of a fused copy (copy_sc, in a check directory):
# what it crosses from the program's open of its output to its exit,
# under strace. The loop was priced from the calibration and the gate
# finds two regular files, so the fusion rule is decided: no calibration
# read, no machine identity, no /dev/multicall, no io_uring, no malloc.
# What is left (947200 B, 4 KiB blocks): the program's read; the gate
# (fstat, lseek, fstat); the context's mmap; the program's first write;
# the engine's full read, the probes (statx, fstatfs, statx) and the
# lseek that takes that read back; an lseek on the output (64 KiB
# alignment) and 2 copy_file_range, the second ending inside the last
# block (947200 is not a multiple of 4096); that block finished for real
# (lseek, read, the pread that refills the buffer, the read of 0) — 18.
# A probe that comes back fails here.
first_context_crossings() {
  local max=18 n probes='^[0-9]+ +(openat|uname|ioctl|io_uring_[a-z]+|futex|brk|getrandom)\('
  strace -f -qq -o first.strace ./copy_sc "$T/in.947200" out_first
  cmp -s "$T/in.947200" out_first || fail "$name: first context: wrong output"
  sed -n '/ \(creat\|openat\)(.*out_first"/,$p' first.strace | tail -n +2 | grep -v '+++ exited\|exit_group' > first.calls || true
  grep -q copy_file_range first.calls || fail "$name: first context: the copy was not fused: $(cat first.calls)"
  ! grep -Eq "$probes" first.calls ||
    fail "$name: first context: a probe, the calibration or malloc: $(grep -E "$probes" first.calls)"
  n=$(wc -l < first.calls)
  echo "plugin test: $name: the first multi-call of a fused copy crosses $n times (at most $max)"
  [ "$n" -le "$max" ] || fail "$name: the first multi-call crosses $n times, more than $max: $(cut -c1-60 first.calls)"
}

# check PROGRAM.c [CC-OPTIONS]: builds it both ways, then runs every case.
check() {
  local src=$1 name opts=${2:-}
  name=$(basename "$src" .c)
  mkdir -p "$T/$name" && cd "$T/$name"
  # The plain build, recorded; the plan from that run.
  "$CLANG" -O2 -g "$src" -o copy_plain
  head -c 2390753 /dev/urandom > rec_in
  "$BIN" record -q -o copy.json -- ./copy_plain rec_in rec_out > /dev/null
  "$BIN" advise -q copy.json --plan-out plan.json > /dev/null
  grep -q '"source_hash"' plan.json || fail "$name: the plan has no source_hash"

  # The plugin build, its remarks kept.
  # shellcheck disable=SC2086
  "$BIN" cc --plan plan.json --remarks remarks $opts -O2 -g "$src" -o copy_sc
  ls remarks/*.opt.yaml > /dev/null || fail "$name: no remark file in remarks/"
  grep -q 'Name:.*Clustered' remarks/*.opt.yaml || fail "$name: no 'Clustered' remark: $(cat remarks/*.opt.yaml)"
  nm copy_sc > sc.syms; nm copy_plain > plain.syms
  grep -q __syscluster_write_read_loop sc.syms || fail "$name: copy_sc does not call the looped multi-call"
  grep -q __syscluster plain.syms && fail "$name: copy_plain calls the runtime"
  # Without a plan, syscluster cc is clang.
  "$BIN" cc -O2 -g -c "$src" -o plain_cc.o
  "$CLANG" -O2 -g -c "$src" -o plain_clang.o
  cmp -s plain_cc.o plain_clang.o || fail "$name: syscluster cc without --plan differs from clang"

  # The sizes, and faults injected into the K-th call as each program's
  # source issues it (`syscluster verify --inject`; the multi-call runs on
  # libmulticall's direct backend there, one system call per call).
  mkdir -p empty
  for size in 0 1 4095 4096 4097 81920 947200; do
    verify "size-$size" --no-count -- "$PWD/copy_plain" "$T/in.$size" out ::: "$PWD/copy_sc" "$T/in.$size" out
  done
  for fault in write:ENOSPC@3 write:EIO@1 read:EIO@5 write:short@2 read:short=100@4 write:EINTR@7 \
               read:EINTR@6 read:EFAULT@3 write:EFAULT@4; do
    verify "$fault" --inject "$fault" -- "$PWD/copy_plain" "$T/in.81920" out ::: "$PWD/copy_sc" "$T/in.81920" out
  done
  run missing-input '$PROG /nonexistent out'
  run unwritable-output "\$PROG $T/in.81920 /nonexistent/out"
  # RLIMIT_FSIZE with SIGXFSZ ignored: a short write, then EFBIG for every write.
  run short-write "trap '' XFSZ; ulimit -f 50; \$PROG $T/in.947200 out; ls -l out | cut -d' ' -f5"
  # SIGXFSZ not ignored: the program is killed at the limit.
  run fsize-signal "ulimit -f 50; \$PROG $T/in.947200 out; echo status \$?; ls -l out | cut -d' ' -f5"
  # The reader goes away: SIGPIPE at the same point.
  run broken-pipe "\$PROG $T/in.947200 /dev/stdout | head -c 10000 | od | tail -2; echo \${PIPESTATUS[0]}"
  # SIGPIPE ignored: EPIPE for every write after that.
  run epipe "trap '' PIPE; \$PROG $T/in.947200 /dev/stdout | head -c 10000 | od | tail -2; echo \${PIPESTATUS[0]}"
  # A pipe as input: reads shorter than the block.
  run pipe-input "cat $T/in.947200 | \$PROG /dev/stdin out; cmp $T/in.947200 out"
  if [ "$name" = copy_report ]; then
    # EINTR from a real signal: the read blocks on a pipe that stays empty
    # (sleep holds it open), SIGALRM's handler (no SA_RESTART) interrupts
    # it after 1 s: the loop ends on -1, errno EINTR, in both.
    run eintr-signal "sleep 3 | SC_ALARM=1 \$PROG /dev/stdin out; echo status \$?"
    grep -q "^n=-1 errno=4 " sc.eintr-signal/stdout || fail "$name: eintr-signal: the read was not interrupted: $(cat sc.eintr-signal/stdout)"
  fi
  # ENOSPC: a 256 KiB tmpfs, in a private mount namespace.
  if [ "$(id -u)" -eq 0 ]; then
    verify enospc-fs-limit --no-count --fs-limit 256K -- "$PWD/copy_plain" "$T/in.947200" out ::: "$PWD/copy_sc" "$T/in.947200" out
    run enospc "unshare -m bash -c 'mkdir -p full && mount -t tmpfs -o size=256k sc full && \$PROG $T/in.947200 full/out; echo status \$?; ls -l full/out | cut -d\" \" -f5; cmp -n 262144 $T/in.947200 full/out && echo prefix same'"
    grep -q "prefix same" sc.enospc/stdout || fail "$name: enospc: the tmpfs case did not run: $(cat sc.enospc/stderr)"
  else
    t_lacks tmpfs "enospc needs root for a tmpfs mount"
  fi
  # Same bytes and fewer crossings (counted as syscluster stat does).
  verify size-2390753 -- "$PWD/copy_plain" "$T/in.2390753" out ::: "$PWD/copy_sc" "$T/in.2390753" out
  read -r before after < <(crossings "size-2390753")
  echo "plugin test: $name: crossings for 2.28 MiB: $before (clang) -> $after (syscluster cc)"
  [ "$after" -lt "$before" ] || fail "$name: no fewer crossings ($before -> $after)"
  if [ -z "$opts" ]; then
    # Never slower: a copy too short to pay for the first context (here
    # 4097 B, 2 blocks < 42), and a pipe, run as written — the gate's
    # fstat and lseek, nothing more.
    grep -q 'estimated saving' remarks/*.opt.yaml || fail "$name: the remark has no gain estimate"
    verify short-count -- "$PWD/copy_plain" "$T/in.4097" out ::: "$PWD/copy_sc" "$T/in.4097" out
    read -r before after < <(crossings "short-count")
    echo "plugin test: $name: crossings for 4097 B: $before (clang) -> $after (syscluster cc)"
    [ "$after" -le $((before + 2)) ] || fail "$name: a short copy crosses more than twice more ($before -> $after)"
    nm copy_sc | grep -q ' [TtWw] mc_run_loop$' || fail "$name: copy_sc lacks libmulticall"
    strace -f -qq -e trace=openat,statx,copy_file_range -o short.strace ./copy_sc "$T/in.4097" out_sc
    ! grep -q 'copy_file_range\|statx\|multicall-calibration' short.strace ||
      fail "$name: a short copy made a context or probed: $(cat short.strace)"
    # A long copy into a pipe runs as written too: the loop was priced for
    # a copy between two files (a fusion context, first_fusion_context);
    # into a pipe no fusion applies without the kernel module, so a context
    # would cost first_context and save nothing (docs/COMPILER.md).
    strace -f -qq -e trace=creat,openat,statx,copy_file_range,mmap -o pipe.strace ./copy_sc "$T/in.947200" /dev/stdout |
      cmp -s "$T/in.947200" - || fail "$name: a copy into a pipe: wrong output"
    ! sed -n '/\(creat\|openat\)(.*\/dev\/stdout"/,$p' pipe.strace | grep -q 'copy_file_range\|statx\|mmap\|multicall' ||
      fail "$name: a copy into a pipe made a context or probed: $(sed -n '/\(creat\|openat\)(.*\/dev\/stdout"/,$p' pipe.strace)"
    grep -q '\(creat\|openat\)(.*/dev/stdout"' pipe.strace || fail "$name: a copy into a pipe: no open of /dev/stdout traced"
    echo "plugin test: $name: a long copy into a pipe runs as written (no context, no probe)"
    first_context_crossings
  fi
}

for size in 0 1 4095 4096 4097 81920 947200 2390753; do
  head -c $size /dev/urandom > "in.$size"
done
check "$ROOT/tests/corpus/copy.c"
check "$ROOT/tests/plugin/copy_report.c" --assume-gain

# Straight-line regions (fig. 6/7, §3.3.2): region_report.c's loop body is
# lseek -> read -> write -> write, every call checked by err(3). Its plan
# makes two clusters: the two writes (one descriptor: writev fuses them) and
# lseek -> read. With the lit calibration the writes gain from 500 runs of
# the region (the profile's 1000 pay) and lseek -> read does not (seek_pread
# pays from 16 calls): one region replaced, the other left with a NoGain
# remark; with --assume-gain both. The two builds are named alike (err(3)
# prints the program's name) and compared by verify, also with faults
# injected into the K-th call as the source issues it: a failed call must
# cancel the rest of its multi-call and run the program's own handler.
check_region() {
  local src=$ROOT/tests/plugin/region_report.c v before after
  mkdir -p "$T/region" && cd "$T/region"
  mkdir -p plain sc assume empty
  head -c 8000 /dev/urandom > in
  "$CLANG" -O2 -g "$src" -o plain/region_report
  "$BIN" record -q -o rec.json -- plain/region_report in out 1000 > /dev/null
  "$BIN" advise -q rec.json --plan-out plan.json > /dev/null
  "$BIN" cc --plan plan.json --remarks remarks -O2 -g "$src" -o sc/region_report
  "$BIN" cc --plan plan.json --remarks remarks-assume --assume-gain -O2 -g "$src" -o assume/region_report
  grep -q 'became one multi-call of 2 calls.*checked, its error handler kept' remarks/*.opt.yaml ||
    fail "region: the writes were not replaced: $(grep -h -A3 'Name:.*Clustered\|NoGain\|NotReplaced' remarks/*.opt.yaml)"
  grep -q 'Name:.*NoGain' remarks/*.opt.yaml || fail "region: no NoGain remark for lseek -> read"
  [ "$(grep -c 'Name:.*Clustered' remarks-assume/*.opt.yaml)" -eq 2 ] ||
    fail "region: --assume-gain did not replace both regions"
  grep -q __syscluster_run <(nm sc/region_report) || fail "region: sc/region_report does not call __syscluster_run"
  for v in sc assume; do
    verify "region-$v" -- "$PWD/plain/region_report" "$PWD/in" out 1000 ::: "$PWD/$v/region_report" "$PWD/in" out 1000
    # Faults early (the sc build's first 500 runs are its calls as written;
    # the assume build is in the multi-call from the first) and late.
    for fault in write:ENOSPC@3 write:EIO@4 read:EIO@6 lseek:ESPIPE@5 lseek:EBADF@1 write:EINTR@9 write:short@4 \
                 read:short=50@7 write:EIO@1500 write:ENOSPC@1999 write:short@1501 \
                 read:EINTR@12 read:EFAULT@8 write:EFAULT@10 write:EFAULT@1600; do
      verify "region-$v-$fault" --inject "$fault" -- "$PWD/plain/region_report" "$PWD/in" out 1000 ::: \
        "$PWD/$v/region_report" "$PWD/in" out 1000
    done
  done
  # The descriptors are main's own: registered once, the writes' writev
  # is not preceded by a statx in every run.
  for v in sc assume; do
    read -r before after < <(crossings "region-$v")
    echo "plugin test: region: crossings ($v): $before (clang) -> $after (syscluster cc)"
    [ "$after" -lt "$before" ] || fail "region: $v: no fewer crossings ($before -> $after)"
  done
  # A fault must have taken the handler (err's exit status), not ended the run.
  grep -q '^  exit  *5  *5$' region-assume-write:ENOSPC@3.verify || fail "region: write:ENOSPC@3 did not exit 5 in both"
  grep -q '^  exit  *3  *3$' region-assume-lseek:ESPIPE@5.verify || fail "region: lseek:ESPIPE@5 did not exit 3 in both"
  # EFAULT (a bad buffer, as the kernel reports it) is an error like another: err(3)'s status and message.
  grep -q '^  exit  *4  *4$' region-assume-read:EFAULT@8.verify || fail "region: read:EFAULT@8 did not exit 4 in both"
  grep -q '^  exit  *6  *6$' region-assume-write:EFAULT@10.verify || fail "region: write:EFAULT@10 (a record's write) did not exit 6 in both"
  cd "$T"
}
check_region

# build_recorded NAME SRC ARGS... [-- CFLAGS...]: in $T/NAME, NAME built by
# clang-19 (plain/), recorded running with ARGS, advised, and rebuilt by
# `syscluster cc` from that plan for the lit calibration's host (sc/,
# remarks in remarks-sc/) and with --assume-gain (assume/, remarks in
# remarks/).
build_recorded() {
  local name=$1 src=$2 args=() flags=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -eq 0 ] || { shift; flags=("$@"); }
  mkdir -p "$T/$name" && cd "$T/$name"
  mkdir -p plain sc assume empty
  "$CLANG" -O2 -g "${flags[@]}" "$src" -o "plain/$name"
  "$BIN" record -q -o rec.json -- "plain/$name" "${args[@]}" > /dev/null
  "$BIN" advise -q rec.json --plan-out plan.json > /dev/null
  "$BIN" cc --plan plan.json --remarks remarks-sc -O2 -g "${flags[@]}" "$src" -o "sc/$name"
  "$BIN" cc --plan plan.json --remarks remarks --assume-gain -O2 -g "${flags[@]}" "$src" -o "assume/$name"
}

# The same with writes checked `!= n` (region_report.c -DFULL_CHECKS): a
# short write is an error the program sends to err(3). The header write
# becomes a call checked full (MC_CHECK_FULL; the last call of a region
# keeps its own test after it): a short or failed write must stop the
# multi-call, leave the record unwritten and run the handler, as the calls
# one by one do: in the multi-call (assume/, and sc/ after its first 500
# runs) and in the runtime's calls as written (sc/, its first 500 runs).
check_full() {
  local fault v
  mkdir -p "$T/full" && head -c 8000 /dev/urandom > "$T/full/in"
  build_recorded full "$ROOT/tests/plugin/region_report.c" "$T/full/in" out 1000 -- -DFULL_CHECKS
  grep -q 'became one multi-call of 2 calls.*checked, its error handler kept.*write at region_report.c:[0-9]* (short transfer)' \
    remarks/*.opt.yaml || fail "full: the writes checked != n were not replaced: $(grep -h -A4 'Name:.*Clustered\|NoGain\|NotReplaced' remarks/*.opt.yaml)"
  grep -q 'became one multi-call of 2 calls.*(short transfer)' remarks-sc/*.opt.yaml ||
    fail "full: the writes were not replaced for the lit calibration's host"
  for v in sc assume; do
    verify "full-$v" -- "$PWD/plain/full" "$PWD/in" out 1000 ::: "$PWD/$v/full" "$PWD/in" out 1000
    for fault in write:short@4 write:short@3 write:ENOSPC@5 read:short=50@7 read:short=5@9 write:short@1501 \
                 write:short@1502 write:EIO@1998 lseek:EBADF@700 \
                 read:EINTR@8 write:EFAULT@1503; do
      verify "full-$v-$fault" --inject "$fault" -- "$PWD/plain/full" "$PWD/in" out 1000 ::: \
        "$PWD/$v/full" "$PWD/in" out 1000
    done
    # A short write took the handler in both (err's exit status), a short
    # read did not (the record written whole is as long as the read).
    grep -q '^  exit  *6  *6$' full-$v-write:short@4.verify || fail "full: $v: write:short@4 did not exit 6 in both"
    grep -q '^  exit  *5  *5$' full-$v-write:short@3.verify || fail "full: $v: write:short@3 did not exit 5 in both"
    grep -q '^  exit  *5  *5$' full-$v-write:short@1501.verify || fail "full: $v: write:short@1501 did not exit 5 in both"
    grep -q '^  exit  *0  *0$' full-$v-read:short=50@7.verify || fail "full: $v: read:short=50@7 did not exit 0 in both"
  done
  cd "$T"
}
check_full

# host_calibration: the lit calibration (writev.file from 2 calls) made
# for this machine, so that libmulticall uses it: writes fuse.
host_calibration() {
  python3 - "$ROOT/llvm/test/calibration.json" "$("$ROOT/libmulticall/build/mc-calibrate" --machine)" <<'PY'
import json, sys
calibration = json.load(open(sys.argv[1]))
calibration["machine"].update(json.loads(sys.argv[2]))
print(json.dumps(calibration))
PY
}

# §3.3.1, seed 000's example as a loop (interchange_report.c): between a
# block's write and the next call, `read_bytes += n; block_sent++;` on
# static counters, which every handler (err(3)) prints. The plan names the
# loop's calls (three writes; with -DSEND the seed's sendto among them) as
# one cluster: the stores stay where they are, so they run after the
# multi-call and before each later call's check, and a later call's
# handler prints the counters as the original's does, under faults early
# and late. The three writes on one descriptor fuse (statx + writev):
# fewer crossings. The sendto build is compared under faults (no rule
# fuses write and sendto: it crosses as before without the kernel module).
check_interchange() {
  local src=$ROOT/tests/plugin/interchange_report.c v fault keep before after
  mkdir -p "$T/interchange" && cd "$T/interchange"
  mkdir -p empty
  head -c 2390753 /dev/urandom > in
  for v in write send; do
    local flags=() calls=write,write,write
    [ "$v" = send ] && flags=(-DSEND) calls=write,write,sendto,write
    mkdir -p "plain-$v" "sc-$v"
    "$CLANG" -O2 -g "${flags[@]}" "$src" -o "plain-$v/interchange_report"
    # The plan: the recorded run's (its profile and module), with one
    # cluster of this build's calls at the source's `// sc:` lines
    # (llvm/test/make-plan.py), their numbers from data/.
    "$BIN" record -q -o "rec-$v.json" -- "plain-$v/interchange_report" in out > /dev/null
    "$BIN" advise -q "rec-$v.json" --plan-out "recorded-$v.json" > /dev/null
    python3 "$ROOT/llvm/test/make-plan.py" "$src" --calls "$calls" --shape sequence --count 584 --hash > "marked-$v.json"
    python3 - "recorded-$v.json" "marked-$v.json" "$calls" "$ROOT/data/syscalls_x86_64.tsv" > "plan-$v.json" <<'PY'
import json, sys
recorded, marked, calls, table = sys.argv[1:]
plan, cluster = json.load(open(recorded)), json.load(open(marked))["clusters"][0]
nrs = {f[1]: int(f[0]) for f in (l.split("\t") for l in open(table) if not l.startswith("#"))}
for c in cluster["calls"]:
    c["nr"] = nrs[c["syscall"]]
cluster["locations"] = [l for l in cluster["locations"] if l["syscall"] in calls.split(",")]
cluster.update(parameters={}, estimated_saving_ns=1.0, share_of_run=0.1, applicable_here=True, evidence=[])
plan["clusters"] = [cluster]
print(json.dumps(plan, indent=1))
PY
    "$BIN" cc --plan "plan-$v.json" --remarks "remarks-$v" --assume-gain -O2 -g "${flags[@]}" "$src" \
      -o "sc-$v/interchange_report"
    grep -q "moved the stores to read_bytes at interchange_report.c:[0-9]*, block_sent at interchange_report.c:[0-9]* after the region's calls (§3.3.1)" \
      "remarks-$v"/*.opt.yaml ||
      fail "interchange: $v: the counters were not moved: $(grep -h -A4 'Name:.*Clustered\|NotReplaced\|Region\|Stale' "remarks-$v"/*.opt.yaml | head -20)"
    verify "interchange-$v" -- "$PWD/plain-$v/interchange_report" "$PWD/in" out ::: \
      "$PWD/sc-$v/interchange_report" "$PWD/in" out
  done
  for fault in write:EIO@1 write:ENOSPC@2 write:ENOSPC@3 write:EIO@6 write:EINTR@5 write:EFAULT@8 read:EIO@3 \
               write:short@2 write:short@3 write:EIO@1500 write:ENOSPC@1502; do
    verify "interchange-write-$fault" --inject "$fault" -- "$PWD/plain-write/interchange_report" "$PWD/in" out ::: \
      "$PWD/sc-write/interchange_report" "$PWD/in" out
  done
  for fault in write:EIO@2 sendto:EIO@1 sendto:EPERM@2 write:ENOSPC@3 sendto:EINTR@300 read:EIO@4 write:EIO@1000; do
    verify "interchange-send-$fault" --inject "$fault" -- "$PWD/plain-send/interchange_report" "$PWD/in" out ::: \
      "$PWD/sc-send/interchange_report" "$PWD/in" out
  done
  # A later call's failure took its handler (err's exit status)...
  grep -q '^  exit  *7  *7$' interchange-write-write:ENOSPC@3.verify || fail "interchange: write:ENOSPC@3 did not exit 7 in both"
  grep -q '^  exit  *6  *6$' interchange-send-sendto:EPERM@2.verify || fail "interchange: sendto:EPERM@2 did not exit 6 in both"
  # ...which printed the counters the moved stores had updated (one block
  # of 4 KiB); its message kept in a file of the scratch copy.
  for v in write:write:ENOSPC@3:separator send:sendto:EIO@1:sendto; do
    local build=${v%%:*} fault=${v#*:} what=${v##*:}
    fault=${fault%:*}
    local rc=0 side
    "$BIN" verify --keep --dir empty --inject "$fault" -- \
      /bin/sh -c 'exec "$0" "$@" 2> stderr.txt' "$PWD/plain-$build/interchange_report" "$PWD/in" out ::: \
      /bin/sh -c 'exec "$0" "$@" 2> stderr.txt' "$PWD/sc-$build/interchange_report" "$PWD/in" out > message.verify 2>&1 ||
      rc=$?
    keep=$(sed -n 's/.*scratch copies kept in //p' message.verify)
    [ -d "$keep" ] || fail "interchange: verify --keep named no directory: $(cat message.verify)"
    for side in original candidate; do
      cp "$keep/$side-1-0/stderr.txt" "$side.stderr" 2> /dev/null || : > "$side.stderr"
    done
    rm -rf "$keep"
    [ "$rc" -eq 0 ] || fail "interchange: $build $fault: the handler's message differs: $(cat message.verify)"
    for side in original candidate; do
      grep -q "^interchange_report: $what after 4096 bytes in 1 blocks: " "$side.stderr" ||
        fail "interchange: $build $fault: $side's handler did not print the counters of the first block: $(cat "$side.stderr")"
    done
    echo "plugin test: interchange: $build $fault: the $what handler printed the moved counters (4096 bytes in 1 blocks) in both"
  done
  # Fewer crossings where the writes fuse (a host whose calibration says
  # writev pays from 2 calls): statx + writev for the three writes.
  host_calibration > host.json
  MULTICALL_CALIBRATION=$PWD/host.json verify interchange-host -- "$PWD/plain-write/interchange_report" "$PWD/in" out ::: \
    "$PWD/sc-write/interchange_report" "$PWD/in" out
  read -r before after < <(crossings interchange-host)
  echo "plugin test: interchange: writes fused (writev): crossings for 2.28 MiB: $before (clang) -> $after (syscluster cc)"
  [ "$after" -lt "$before" ] || fail "interchange: no fewer crossings where the writes fuse ($before -> $after)"
  cd "$T"
}
check_interchange

# Value specialization (§3.4): spec_copy.c's block size is a variable; the
# plan recorded at 4096 gives the read's count 4096 (`args`), so the loop
# becomes the looped multi-call behind a guard on the count, the loop as
# written for every other one. Both sides are compared, with faults.
check_spec() {
  local bs fault before after
  mkdir -p "$T/spec" && head -c 300000 /dev/urandom > "$T/spec/in"
  build_recorded spec "$ROOT/tests/plugin/spec_copy.c" "$T/spec/in" out 4096
  grep -q 'specialized (§3.4) for the read' remarks/*.opt.yaml ||
    fail "spec: the loop was not specialized: $(grep -h -A4 'Name:.*Clustered\|NotReplaced' remarks/*.opt.yaml)"
  for bs in 4096 1000 4095; do
    verify "spec-$bs" -- "$PWD/plain/spec" "$PWD/in" out $bs ::: "$PWD/assume/spec" "$PWD/in" out $bs
    for fault in read:EIO@5 write:ENOSPC@3 write:short@2 read:short=100@4 write:EINTR@6 read:EFAULT@3; do
      verify "spec-$bs-$fault" --inject "$fault" -- "$PWD/plain/spec" "$PWD/in" out $bs ::: \
        "$PWD/assume/spec" "$PWD/in" out $bs
    done
  done
  # The guard's fast side is the multi-call (between files, copy_file_range:
  # fewer crossings); any other block size crosses as the loop as written.
  read -r before after < <(crossings spec-4096)
  echo "plugin test: spec: crossings at 4096 B blocks: $before (clang) -> $after (syscluster cc)"
  [ "$after" -lt "$before" ] || fail "spec: no fewer crossings at 4096 ($before -> $after)"
  read -r before after < <(crossings spec-1000)
  echo "plugin test: spec: crossings at 1000 B blocks: $before (clang) -> $after (syscluster cc)"
  [ "$after" -eq "$before" ] || fail "spec: the unspecialized count did not run the loop as written ($before -> $after)"
  cd "$T"
}
check_spec

# Never a wrong program (Must 8), on the corpus programs the pass does not
# replace: each is recorded, advised, and compiled with its own plan (for
# this host and with --assume-gain); the plan has a cluster, the pass
# examines it and refuses it with a remark, and the object file is byte for
# byte clang's (the same program, so the same output, files and status).
# copy.c is the corpus program the pass replaces (check, above); copy_block,
# whose handler returns from main, check_returning below.
check_left() {
  local name args src v n
  mkdir -p "$T/left" && cd "$T/left"
  head -c 300000 /dev/urandom > in
  while read -r name args; do
    src=$ROOT/tests/corpus/$name.c
    "$CLANG" -O2 -g "$src" -o "$name"
    # shellcheck disable=SC2086
    "$BIN" record -q -o "$name.json" -- "./$name" $args > /dev/null
    "$BIN" advise -q "$name.json" --plan-out "$name.plan" > /dev/null
    n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["clusters"]))' "$name.plan")
    [ "$n" -gt 0 ] || fail "left: $name: the plan has no cluster"
    "$CLANG" -O2 -g -c "$src" -o "$name.clang.o"
    for v in host assume; do
      rm -rf "remarks-$name-$v"
      "$BIN" cc --plan "$name.plan" --remarks "remarks-$name-$v" $([ $v = host ] || echo --assume-gain) \
        -O2 -g -c "$src" -o "$name.$v.o"
      grep -q '^--- !Missed' "remarks-$name-$v"/*.opt.yaml || fail "left: $name ($v): no remark says why nothing was done"
      ! grep -q 'Name:.*Clustered' "remarks-$name-$v"/*.opt.yaml || fail "left: $name ($v): a region was replaced; check it as copy.c is"
      cmp -s "$name.clang.o" "$name.$v.o" || fail "left: $name ($v): the pass refused every region but changed the object"
    done
    echo "plugin test: left: $name ($n clusters): refused with remarks, the same object as clang's"
  done <<'LIST'
seekread in 500
selecttime 2000
write8 out 1000
reopen conf 200
redundant in 1000 lseek
rawclock 1000
LIST
  cd "$T"
}
check_left

# Value specialization of a straight-line region (§3.4): spec_fd.c writes
# a header to LOG and a body to OUT, one descriptor when LOG is "-" (the
# recorded run), which the code cannot prove; the value profile (`args.fd`)
# makes the two writes one writev region behind the runtime's guard. Both
# sides of the guard (one descriptor; two files) are compared, with faults.
check_spec_fd() {
  local fault v before after
  mkdir -p "$T/specfd"
  build_recorded specfd "$ROOT/tests/plugin/spec_fd.c" "$T/specfd/rec" - 1000
  for v in remarks remarks-sc; do
    grep -q 'specialized (§3.4) for one descriptor' $v/*.opt.yaml ||
      fail "specfd: the region was not specialized ($v): $(grep -h -A4 'Name:.*NotReplaced\|NoGain' $v/*.opt.yaml)"
  done
  grep -q __syscluster_run_one_fd <(nm sc/specfd) || fail "specfd: sc/specfd has no guarded multi-call"
  for v in sc assume; do
    verify "specfd-$v-one" -- "$PWD/plain/specfd" out - 1000 ::: "$PWD/$v/specfd" out - 1000
    verify "specfd-$v-two" -- "$PWD/plain/specfd" out log 1000 ::: "$PWD/$v/specfd" out log 1000
    for fault in write:ENOSPC@3 write:short@4 write:EIO@1600 write:short@1601; do
      verify "specfd-$v-one-$fault" --inject "$fault" -- "$PWD/plain/specfd" out - 1000 ::: \
        "$PWD/$v/specfd" out - 1000
      verify "specfd-$v-two-$fault" --inject "$fault" -- "$PWD/plain/specfd" out log 1000 ::: \
        "$PWD/$v/specfd" out log 1000
    done
    grep -q '^  exit  *1  *1$' "specfd-$v-one-write:short@1601.verify" ||
      fail "specfd: $v: write:short@1601 did not take the handler in both"
  done
  # The descriptors are main's own (opened there): registered once, the
  # writev is not preceded by a statx in every run.
  read -r before after < <(crossings specfd-sc-one)
  echo "plugin test: specfd: crossings, one descriptor: $before (clang) -> $after (syscluster cc)"
  [ "$after" -lt "$before" ] || fail "specfd: one descriptor: no fewer crossings ($before -> $after)"
  read -r before after < <(crossings specfd-sc-two)
  echo "plugin test: specfd: crossings, two files: $before (clang) -> $after (syscluster cc)"
  [ "$after" -le "$before" ] || fail "specfd: two files: more crossings ($before -> $after)"
  cd "$T"
}
check_spec_fd

# Descriptors registered once (mc_fd_register): reuse_fd.c's region of two
# writes is on a descriptor of main's own (opened there, given to nothing
# but system calls), which the runtime registers at its first multi-call;
# then the program closes it and opens /proc/self/comm (the same number),
# dup2s that file onto it, changes it with fcntl, forks a child that does
# the same, or execs itself. Both builds must give the same output and
# files; and the plugin build must classify the number again after each
# change: writes to /proc/self/comm (a proc file, never fused) stay write
# calls — a stale registration (the regular file's) would make them
# writev — and a file whose flags fcntl changed is registered again (two
# statx, not one). The counts are those of the library's built-in choices
# (the lit calibration is another machine's): a registered file fuses 2
# writes, an unregistered one 8.
check_reuse_fd() {
  local m v n=5 writev statx
  mkdir -p "$T/reusefd/empty" && touch "$T/reusefd/rec" "$T/reusefd/empty/f1"
  build_recorded reusefd "$ROOT/tests/plugin/reuse_fd.c" close 1000 "$T/reusefd/rec"
  grep -q 'its descriptors registered once per thread' remarks/*.opt.yaml ||
    fail "reusefd: the descriptor was not registered: $(grep -h -A4 'Name:.*Clustered\|NotReplaced\|NoGain' remarks/*.opt.yaml)"
  grep -q __syscluster_fd_release <(nm assume/reusefd) || fail "reusefd: no release before the calls that change descriptors"
  rm -f fifo && mkfifo fifo
  for m in "close $n f1 /proc/self/comm" "dup2 $n f1 /proc/self/comm" "fcntl $n f1" "fcntl 3 $PWD/fifo" \
           "fork $n f1 /proc/self/comm" "exec $n f1 /proc/self/comm"; do
    # shellcheck disable=SC2086
    verify "reusefd-${m%% *}-$(basename "${m##* }")" -- "$PWD/plain/reusefd" $m ::: "$PWD/assume/reusefd" $m
  done
  # The counts, in a scratch directory with the file.
  counts() {
    local out
    rm -rf count && cp -r empty count
    out=$(cd count && "$BIN" stat -r 1 --top 1000 -- "$PWD/../assume/reusefd" "$@" 2>&1)
    writev=$(awk '$2 == "writev" {print $1}' <<< "$out"); writev=${writev:-0}
    statx=$(awk '$2 == "statx" {print $1}' <<< "$out"); statx=${statx:-0}
  }
  counts close $n f1 /proc/self/comm
  [ "$writev" -eq $n ] || fail "reusefd: close + open: $writev writev for $n records to the file (stale: $((2 * n)))"
  counts dup2 $n f1 /proc/self/comm
  [ "$writev" -eq $n ] || fail "reusefd: dup2: $writev writev for $n records to the file (stale: $((2 * n)))"
  counts fork $n f1 /proc/self/comm
  [ "$writev" -eq $((2 * n)) ] || fail "reusefd: fork: $writev writev for $((2 * n)) records to the file (stale: $((3 * n)))"
  counts exec $n f1 /proc/self/comm
  [ "$writev" -eq $n ] || fail "reusefd: exec: $writev writev for $n records to the file"
  counts fcntl $n f1
  [ "$writev" -eq $((2 * n)) ] && [ "$statx" -eq 2 ] ||
    fail "reusefd: fcntl: $writev writev, $statx statx (want $((2 * n)) and 2: registered again after F_SETFL)"
  echo "plugin test: reusefd: the registration is dropped at close, dup2, fcntl and in a forked child"
  for m in write:ENOSPC@3 write:short@4 write:EIO@12; do
    verify "reusefd-close-$m" --inject "$m" -- "$PWD/plain/reusefd" close $n f1 /proc/self/comm ::: \
      "$PWD/assume/reusefd" close $n f1 /proc/self/comm
  done
  cd "$T"
}
check_reuse_fd

# Checked copy loops (§3.3.2 in §3.4): checked_copy.c's loop checks its
# writes, `!= n` to err (CHECK=1), `< 0` to perror+exit (2), `< n` to the
# program's own noreturn function, which prints the write's result, n,
# errno and a checksum of the buffer (3), `< n` to a goto out of the loop
# to a handler that prints n, errno and the checksum and returns 6 from
# main (4), `!= n` to a break, after which the code after the loop prints
# the write's result, n, errno and the checksum and returns 6 (5: the
# loop's values reach it through the exit's phis); the read is checked
# after the loop. Each becomes the looped multi-call with its write checked, which
# must stop exactly where the program calls its handler: the same message,
# exit status, bytes written and buffer — under injected faults (ENOSPC,
# EIO, EBADF, EFAULT, EINTR, short writes and reads), ENOSPC on a small
# tmpfs, short writes into a full non-blocking pipe, and a blocked pipe
# write interrupted by SIGALRM; and fewer crossings between files.
check_checked() {
  local c fault v before after
  mkdir -p "$T/checked"
  for size in 0 1 6000 6001; do head -c $size /dev/urandom > "$T/checked/in.$size"; done
  for c in 1 2 3 4 5; do
    # Blocks of 6000 B save less than 4 KiB ones: the 399 of 2.28 MiB pay
    # for the first context on the lit calibration's host (262 do).
    build_recorded "checked$c" "$ROOT/tests/plugin/checked_copy.c" "$T/in.2390753" out -- -DCHECK=$c
    for v in remarks remarks-sc; do
      grep -q 'its write checked) became one looped multi-call' $v/*.opt.yaml ||
        fail "checked$c: the loop was not replaced ($v): $(grep -h -A4 'Name:.*NotReplaced\|NoGain' $v/*.opt.yaml)"
    done
    grep -q __syscluster_write_read_loop_checked <(nm assume/checked$c) || fail "checked$c: no checked loop call"
    for size in 0 1 6000 6001; do
      verify "size-$size" --no-count -- "$PWD/plain/checked$c" "$T/checked/in.$size" out ::: \
        "$PWD/assume/checked$c" "$T/checked/in.$size" out
    done
    for fault in write:ENOSPC@3 write:EIO@1 write:EBADF@2 write:EFAULT@4 write:EINTR@5 write:short@2 \
                 read:EIO@5 read:EINTR@3 read:short=100@4 read:EFAULT@2; do
      verify "assume-$fault" --inject "$fault" -- "$PWD/plain/checked$c" "$T/in.947200" out ::: \
        "$PWD/assume/checked$c" "$T/in.947200" out
    done
    for fault in write:ENOSPC@60 write:short@100; do
      verify "sc-$fault" --inject "$fault" -- "$PWD/plain/checked$c" "$T/in.2390753" out ::: \
        "$PWD/sc/checked$c" "$T/in.2390753" out
    done
    # The handler ran (its exit status) where the check rejects the write:
    # a short write is rejected by != n and < n, not by < 0.
    local short_exit=(0 1 0 5 6 6) fail_exit=(0 1 4 5 6 6)
    grep -q "^  exit  *${short_exit[$c]}  *${short_exit[$c]}\$" assume-write:short@2.verify ||
      fail "checked$c: write:short@2 did not exit ${short_exit[$c]} in both: $(cat assume-write:short@2.verify)"
    grep -q "^  exit  *${fail_exit[$c]}  *${fail_exit[$c]}\$" assume-write:ENOSPC@3.verify ||
      fail "checked$c: write:ENOSPC@3 did not exit ${fail_exit[$c]} in both"
    grep -q "^  exit  *2  *2\$" assume-read:EIO@5.verify || fail "checked$c: read:EIO@5 did not exit 2 in both"
    grep -q "^  exit  *${short_exit[$c]}  *${short_exit[$c]}\$" sc-write:short@100.verify ||
      fail "checked$c: sc: write:short@100 did not exit ${short_exit[$c]} in both"
    ln -sf plain/checked$c copy_plain
    ln -sf assume/checked$c copy_sc
    # A full non-blocking pipe (64 KiB, nobody reading yet): a write of
    # 6000 B gets what is left (short), or EAGAIN.
    run nonblock-pipe "NONBLOCK=1 \$PROG $T/in.947200 /dev/stdout | (sleep 0.3; wc -c); echo \${PIPESTATUS[0]}"
    # SIGALRM (no SA_RESTART) interrupts the write blocked on the full pipe:
    # it returns what it wrote; the reader drains the pipe a second later.
    run alarm-pipe "ALARM=200 \$PROG $T/in.947200 /dev/stdout | (sleep 1; wc -c); echo \${PIPESTATUS[0]}"
    if [ "$(id -u)" -eq 0 ]; then
      verify enospc --no-count --fs-limit 256K -- "$PWD/plain/checked$c" "$T/in.947200" out ::: \
        "$PWD/assume/checked$c" "$T/in.947200" out
      grep -q "^  exit  *${fail_exit[$c]}  *${fail_exit[$c]}\$" enospc.verify ||
        fail "checked$c: ENOSPC on a full tmpfs did not exit ${fail_exit[$c]} in both: $(cat enospc.verify)"
    else
      t_lacks tmpfs "checked$c enospc needs root for a tmpfs mount"
    fi
    verify crossings -- "$PWD/plain/checked$c" "$T/in.2390753" out ::: "$PWD/sc/checked$c" "$T/in.2390753" out
    read -r before after < <(crossings crossings)
    echo "plugin test: checked$c: crossings for 2.28 MiB: $before (clang) -> $after (syscluster cc)"
    [ "$after" -lt "$before" ] || fail "checked$c: no fewer crossings ($before -> $after)"
  done
  # A variable block size (-DVARBS: BS from the environment), recorded at
  # 6000: specialized for it (§3.4), the loop as written for any other.
  mkdir -p "$T/checkedvar" && cd "$T/checkedvar" && mkdir -p empty
  build_recorded checkedvar "$ROOT/tests/plugin/checked_copy.c" "$T/in.2390753" out -- -DCHECK=3 -DVARBS
  grep -q 'its write checked) became one looped multi-call.*specialized (§3.4) for the read.s count 6000' \
    remarks/*.opt.yaml || fail "checkedvar: not specialized: $(grep -h -A4 'Name:.*NotReplaced\|NoGain' remarks/*.opt.yaml)"
  for bs in 6000 1000; do
    export BS=$bs
    verify "var-$bs" -- "$PWD/plain/checkedvar" "$T/in.2390753" out ::: "$PWD/assume/checkedvar" "$T/in.2390753" out
    for fault in write:ENOSPC@3 write:short@2 write:EINTR@4 read:EIO@5; do
      verify "var-$bs-$fault" --inject "$fault" -- "$PWD/plain/checkedvar" "$T/in.2390753" out ::: \
        "$PWD/assume/checkedvar" "$T/in.2390753" out
    done
    grep -q '^  exit  *5  *5$' "var-$bs-write:short@2.verify" || fail "checkedvar: BS=$bs: write:short@2 did not exit 5 in both"
    read -r before after < <(crossings "var-$bs")
    echo "plugin test: checkedvar: crossings for 2.28 MiB at $bs B blocks: $before (clang) -> $after (syscluster cc)"
  done
  unset BS
  read -r before after < <(crossings var-6000)
  [ "$after" -lt "$before" ] || fail "checkedvar: no fewer crossings at the profiled block size ($before -> $after)"
  read -r before after < <(crossings var-1000)
  [ "$after" -eq "$before" ] || fail "checkedvar: another block size did not run the loop as written ($before -> $after)"
  cd "$T"
}
check_checked

# A corpus copy loop whose write's handler returns from main (`return 1`
# when the write is not whole, `return n < 0` after the loop), which the
# pass used to refuse: copy_block, the block size an argument (recorded at
# 4096: specialized for it, §3.4). Both builds must give the same output,
# status and files under injected faults and real ones (RLIMIT_FSIZE's
# short write then EFBIG, ENOSPC on a 256 KiB tmpfs, an output that cannot
# be opened, a pipe as input), the handler's status where the write is
# rejected, and fewer crossings. (clean_bigcopy has the same loop with
# 1 MiB blocks; advise finds nothing worth a rewrite in it — the plan has
# no cluster — so there is nothing for the pass to do: lit rotation.c's
# `checked` is its shape.)
check_returning() {
  local name=copy_block bs=4096 fault before after size
  build_recorded "$name" "$ROOT/tests/corpus/$name.c" "$T/in.2390753" out $bs
  grep -q 'its write checked) became one looped multi-call.*specialized (§3.4) for the read.s count 4096' \
    remarks/*.opt.yaml || fail "$name: the loop was not replaced: $(grep -h -A4 'Name:.*NotReplaced\|NoGain' remarks/*.opt.yaml)"
  for size in 0 1 4096 4097 947200; do
    verify "size-$size" --no-count -- "$PWD/plain/$name" "$T/in.$size" out $bs ::: \
      "$PWD/assume/$name" "$T/in.$size" out $bs
  done
  for fault in write:ENOSPC@2 write:EIO@1 write:EBADF@2 write:EFAULT@2 write:EINTR@3 write:short@2 \
               read:EIO@2 read:EINTR@3 read:short=100@2 read:EFAULT@2 write:ENOSPC@500 write:short@400; do
    verify "$fault" --inject "$fault" -- "$PWD/plain/$name" "$T/in.2390753" out $bs ::: \
      "$PWD/assume/$name" "$T/in.2390753" out $bs
  done
  # The handler's `return 1` where the write is rejected (a short write
  # too: `!= n`), and after a failed read.
  for fault in write:ENOSPC@2 write:short@2 read:EIO@2 write:ENOSPC@500 write:short@400; do
    grep -q '^  exit  *1  *1$' "$fault.verify" || fail "$name: $fault did not exit 1 in both: $(cat "$fault.verify")"
  done
  # Another block size runs the loop as written (the guard), its faults too.
  for fault in write:ENOSPC@2 write:short@3; do
    verify "bs1000-$fault" --inject "$fault" -- "$PWD/plain/$name" "$T/in.947200" out 1000 ::: \
      "$PWD/assume/$name" "$T/in.947200" out 1000
  done
  ln -sf "plain/$name" copy_plain
  ln -sf "assume/$name" copy_sc
  run missing-input "\$PROG /nonexistent out $bs; echo status \$?"
  run unwritable-output "\$PROG $T/in.81920 /nonexistent/out $bs; echo status \$?"
  run short-write "trap '' XFSZ; ulimit -f 50; \$PROG $T/in.947200 out $bs; echo status \$?; ls -l out | cut -d' ' -f5"
  grep -q '^status 1$' sc.short-write/stdout || fail "$name: short-write: the handler did not return 1"
  run pipe-input "cat $T/in.947200 | \$PROG /dev/stdin out $bs; echo status \$?; cmp $T/in.947200 out"
  if [ "$(id -u)" -eq 0 ]; then
    verify enospc --no-count --fs-limit 256K -- "$PWD/plain/$name" "$T/in.947200" out $bs ::: \
      "$PWD/assume/$name" "$T/in.947200" out $bs
    grep -q '^  exit  *1  *1$' enospc.verify || fail "$name: ENOSPC on a full tmpfs did not exit 1 in both: $(cat enospc.verify)"
  else
    t_lacks tmpfs "$name enospc needs root for a tmpfs mount"
  fi
  verify crossings -- "$PWD/plain/$name" "$T/in.2390753" out $bs ::: "$PWD/sc/$name" "$T/in.2390753" out $bs
  read -r before after < <(crossings crossings)
  echo "plugin test: $name: crossings for 2.28 MiB: $before (clang) -> $after (syscluster cc)"
  [ "$after" -lt "$before" ] || fail "$name: no fewer crossings ($before -> $after)"
  cd "$T"
}
check_returning

# A plan edge across functions (seed 000 §3.3): wrapped_report.c writes a
# tag, a record and a newline per record, the record through an extern
# helper too large for clang's inliner, so the plan's write -> write edges
# cross from main into write_record. The pass inlines write_record into a
# trial copy of main and keeps it because the three writes became one
# multi-call (remarks checked); both builds are compared under faults in
# the helper's write (its own handler, exit 6), the static put()'s (exit
# 5), early (the sc build's first 500 runs run the calls as written) and
# late, and their crossings printed. With the lit calibration at run time
# (another machine's: libmulticall's built-in choices fuse a run of writes
# from eight calls) the three writes still cross three times; on a host
# whose calibration fuses them, statx + writev (docs/COMPILER.md).
check_inline() {
  local v fault before after
  mkdir -p "$T/inline" && head -c 8000 /dev/urandom > "$T/inline/in"
  build_recorded inline "$ROOT/tests/plugin/wrapped_report.c" "$T/inline/in" out 1000
  for v in remarks remarks-sc; do
    grep -q 'became one multi-call of 3 calls' $v/*.opt.yaml ||
      fail "inline: $v: the three writes were not replaced: $(grep -h -A4 'Name:.*Clustered\|NoGain\|NotReplaced\|Inlin' $v/*.opt.yaml)"
    grep -q 'Name:.*Inlined' $v/*.opt.yaml || fail "inline: $v: no Inlined remark"
    grep -q 'reached through write_record, called from main at wrapped_report.c:[0-9]*: inlined' $v/*.opt.yaml ||
      fail "inline: $v: the Inlined remark does not name write_record and its call"
  done
  nm sc/inline | grep -q ' T write_record$' || fail "inline: write_record lost its body (it is extern)"
  for v in sc assume; do
    verify "inline-$v" -- "$PWD/plain/inline" "$PWD/in" out 1000 ::: "$PWD/$v/inline" "$PWD/in" out 1000
    for fault in write:EIO@2 write:ENOSPC@3 write:short@2 write:EINTR@1 pread64:EIO@4 write:EIO@1601 \
                 write:ENOSPC@1602 write:short@2999 write:EBADF@1600; do
      verify "inline-$v-$fault" --inject "$fault" -- "$PWD/plain/inline" "$PWD/in" out 1000 ::: \
        "$PWD/$v/inline" "$PWD/in" out 1000
    done
    # The helper's handler ran in both (exit 6), and put()'s (exit 5).
    grep -q '^  exit  *6  *6$' "inline-$v-write:EIO@1601.verify" || fail "inline: $v: write:EIO@1601 did not exit 6 in both"
    grep -q '^  exit  *5  *5$' "inline-$v-write:ENOSPC@3.verify" || fail "inline: $v: write:ENOSPC@3 did not exit 5 in both"
    read -r before after < <(crossings "inline-$v")
    echo "plugin test: inline: $v: crossings for 1000 records: $before (clang) -> $after (syscluster cc)"
    [ "$after" -le $((before + 16)) ] || fail "inline: $v: more crossings than a first context's ($before -> $after)"
  done
  # Fewer crossings on a host whose calibration fuses writes: the lit
  # calibration (writev.file from 2 calls) made for this machine.
  host_calibration > host.json
  MULTICALL_CALIBRATION=$PWD/host.json verify inline-host -- "$PWD/plain/inline" "$PWD/in" out 1000 ::: \
    "$PWD/sc/inline" "$PWD/in" out 1000
  MULTICALL_CALIBRATION=$PWD/host.json verify inline-host-write:EIO@2000 --inject write:EIO@2000 -- \
    "$PWD/plain/inline" "$PWD/in" out 1000 ::: "$PWD/sc/inline" "$PWD/in" out 1000
  read -r before after < <(crossings inline-host)
  echo "plugin test: inline: writes fused (statx + writev): crossings for 1000 records: $before (clang) -> $after (syscluster cc)"
  [ "$after" -lt "$before" ] || fail "inline: no fewer crossings where the writes fuse ($before -> $after)"

  # The copy loop through wrappers that end in their calls (wrapped_copy.c,
  # clang told not to inline them): the plan names main's lines, the pass
  # inlines both wrappers and the loop becomes the looped multi-call.
  mkdir -p "$T/inline-copy" && head -c 2390753 /dev/urandom > "$T/inline-copy/in"
  build_recorded inline-copy "$ROOT/tests/plugin/wrapped_copy.c" "$T/inline-copy/in" out -- -mllvm -inline-threshold=-1000
  grep -q 'became one looped multi-call' remarks-sc/*.opt.yaml ||
    fail "inline-copy: the loop was not replaced: $(grep -h -A4 'Name:.*Clustered\|NotReplaced\|NoGain\|Inlin\|Stale' remarks-sc/*.opt.yaml)"
  [ "$(grep -c 'Name:.*Inlined' remarks-sc/*.opt.yaml)" -eq 2 ] || fail "inline-copy: not two Inlined remarks"
  for size in 0 4095 4097 81920; do
    verify "inline-copy-$size" --no-count -- "$PWD/plain/inline-copy" "$T/in.$size" out ::: \
      "$PWD/sc/inline-copy" "$T/in.$size" out
  done
  for fault in write:ENOSPC@3 read:EIO@5 write:short@2 read:short=100@4 write:EINTR@7; do
    verify "inline-copy-$fault" --inject "$fault" -- "$PWD/plain/inline-copy" "$T/in.81920" out ::: \
      "$PWD/assume/inline-copy" "$T/in.81920" out
  done
  verify inline-copy-big -- "$PWD/plain/inline-copy" "$PWD/in" out ::: "$PWD/sc/inline-copy" "$PWD/in" out
  read -r before after < <(crossings inline-copy-big)
  echo "plugin test: inline-copy: crossings for 2.28 MiB: $before (clang) -> $after (syscluster cc)"
  [ "$after" -lt "$before" ] || fail "inline-copy: no fewer crossings ($before -> $after)"
  cd "$T"
}
check_inline

# --remarks under make -j: translation units compiled at once, one file each.
cd "$T"
for src in "$ROOT/tests/corpus/copy.c" "$ROOT/tests/plugin/copy_report.c"; do
  d=$(basename "$src" .c)
  "$BIN" cc --plan "$d/plan.json" --remarks "$T/remarks-j" -O2 -g -c "$src" -o "$d.o" &
done
wait
[ "$(ls remarks-j | wc -l)" -eq 2 ] || fail "--remarks: $(ls remarks-j | wc -l) files for two translation units"
[ "$(grep -l 'Name:.*Clustered' remarks-j/* | wc -l)" -eq 2 ] || fail "--remarks: a translation unit's remarks are missing"
echo "plugin test: --remarks: one file per translation unit compiled in parallel"
echo "plugin test: PASS"
