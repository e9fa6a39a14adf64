# Sourced by every preload test (NAME.test.sh): the paths, the ways to run
# a program under the library, and the test's verdict.  A test runs alone
# too:  O=build test/NAME.test.sh  (from preload/).
#   ok WHAT / bad WHAT   one check passed / failed (a test has several)
#   t_need CAP WHY       CAP missing here: skip, or fail where required
#                        (tests/lib/require.sh)
#   t_finish             exit 0 if no check failed, else 1
# Paths: LIB (the library), T (the test programs), CORPUS, SC (the
# syscluster binary), W (a scratch directory of this test, removed at its
# end, with any tmpfs mounted on $W/mnt).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
. ../tests/lib/require.sh
O=${O:-build}
LIB=$PWD/$O/libsyscluster-preload.so
T=$PWD/$O/test
CORPUS=$PWD/../tests/corpus/bin
SC=${SC:-$PWD/../target/release/syscluster}
W=$(mktemp -d "${TMPDIR:-/tmp}/sc-preload-test.XXXXXX")
trap 'umount "$W/mnt" 2>/dev/null; rm -rf "$W"' EXIT
trap 'exit 1' INT TERM
t_failed=0
ok() { echo "ok   $*"; }
bad() { t_failed=$((t_failed + 1)); echo "FAIL $*"; }
t_finish() { exit $((t_failed ? T_EXIT_FAIL : T_EXIT_PASS)); }

rt() { env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 "$@"; }
# In the background, so that $! is the program itself (signals reach it).
rtbg() { (exec env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 "$@") & }
# The library built without a guardian (a test build; the shipped one has no switch).
nogrdbg() { (exec env LD_PRELOAD="$T/libsyscluster-preload-noguardian.so" SYSCLUSTER_COALESCE=4096 "$@") & }

# deferred FILE: the deferred= count of the last -v report in FILE (empty if none).
deferred() { grep -ao 'deferred=[0-9]*' "$1" | tail -1 | cut -d= -f2; }
# acted FILE: the -v report in FILE says the library deferred writes.  A
# check that compares only outputs passes with the library silently off:
# each asserts that it acted too.
acted() { [ "$(deferred "$1")" -gt 0 ] 2>/dev/null; }

# ackwriter (test/ackwriter.c) runs: a fresh start, and a wait until the
# runtime holds acknowledged records back (it defers: plain, every
# acknowledged record is in the file).
ack_fresh() { rm -f "$W/ack.out" "$W/ack"; }
ack_deferring() { "$T/ackwriter" --deferring "$W/ack.out" "$W/ack" >/dev/null; }
# ack_within_bound: after program and guardian were killed at once, the
# records on disk are a prefix at most one buffer (8192 records) short of
# the acknowledged; raises $worst to this run's loss.
ack_within_bound() {
  local r l
  r=$("$T/ackwriter" --check "$W/ack.out" "$W/ack" 8192 2>&1) || { echo "$r"; return 1; }
  l=$(( $(echo "$r" | cut -d' ' -f2) - $(echo "$r" | cut -d' ' -f1) )); [ "$l" -gt "$worst" ] && worst=$l
  return 0
}
check_ack() { # the guardian finishes within moments of the death
  for _ in $(seq 50); do "$T/ackwriter" --check "$W/ack.out" "$W/ack" >/dev/null 2>&1 && return 0; sleep 0.02; done
  "$T/ackwriter" --check "$W/ack.out" "$W/ack"
}
# writes CMD...: how many write-family system calls CMD and its children
# made (strace -f): what the kernel saw, however the process ended.
writes() {
  command -v strace >/dev/null || { echo "strace not installed (scripts/install-deps.sh installs it)" >&2; return 1; }
  (strace -f -qq -e trace=write,writev,pwrite64,pwritev,pwritev2 -e signal=none -o "$W/writes.st" "$@" >/dev/null 2>&1)
  grep -c 'write' "$W/writes.st"
}

# vrun NAME VERIFY-ARGS...: `syscluster verify` in an empty directory,
# passing when it finds no difference; its report in $W/NAME.verify.
vrun() {
  local name=$1; shift
  mkdir -p "$W/empty"
  "$SC" verify --dir "$W/empty" "$@" > "$W/$name.verify" 2>&1
}
# crossings NAME: the original's and the candidate's crossings in that report.
crossings() { awk '$1 == "crossings" { print $2, $3 }' "$W/$1.verify"; }
