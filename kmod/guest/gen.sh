#!/bin/sh
# kmod-gen in the guest (kmod-gen): /plan/multicall.ko is the module
# `syscluster kmod-gen` wrote from the plan of a recording of the corpus's
# copy program (tests/corpus/copy.c: read 4096 bytes from fd 3, write them
# to fd 4, until the end), built with Kbuild by guest/run.sh.  It replaces
# the stock module for this test, and the same cluster -- the copy loop of
# libmulticall/examples/copy-loop.c -- runs through it on kmod and on
# direct: the same output, exit status and messages, and the module's
# counters say which path ran: the plan's for the 4096-byte block the value
# profile showed, the generic one (the stock specializations) for another
# block.  libmulticall's loop test then runs on the generated module (every
# copy loop shape and fault, kmod against direct).  The stock module is
# loaded back at the end, also after a failure.
P=/sys/module/multicall/parameters
restore() { rmmod multicall 2>/dev/null; insmod /multicall.ko || echo "FAIL: cannot load the stock module back"; }
fail() { echo "FAIL: $*"; restore; exit 1; }
[ -f /plan/multicall.ko ] || { echo "FAIL: no /plan/multicall.ko in the image"; exit 1; }
tmp=${TMPDIR:-/tmp}/kmod-gen
rm -rf "$tmp" && mkdir -p "$tmp" || fail "cannot make $tmp"
head -c 300000 /dev/urandom > "$tmp/in" || fail "cannot write the input"
rmmod multicall || fail "cannot unload the stock module"
insmod /plan/multicall.ko || fail "the generated module does not load"

# run NAME BLOCK OUT: copy-loop on direct and kmod; same exit, messages, bytes.
run() {
	case $3 in /dev/*) od=$3 ok=$3;; *) od=$3.direct ok=$3.kmod;; esac
	/progs/copy-loop -b direct -s "$2" "$tmp/in" "$od" 2> "$tmp/err.direct"
	rd=$?
	/progs/copy-loop -b kmod -s "$2" "$tmp/in" "$ok" 2> "$tmp/err.kmod"
	rk=$?
	[ "$rd" = "$rk" ] || fail "$1: exit $rk on kmod, $rd on direct"
	cmp -s "$tmp/err.direct" "$tmp/err.kmod" || fail "$1: messages differ: $(cat "$tmp/err.kmod") / $(cat "$tmp/err.direct")"
	[ "$od" = "$ok" ] || cmp -s "$od" "$ok" || fail "$1: the copies differ"
}
# delta COUNTER BEFORE: how much the counter grew.
delta() { echo $(( $(cat "$P/$1") - $2 )); }

p0=$(cat $P/runs_plan) g0=$(cat $P/runs_copy) b0=$(cat $P/runs_copy_block)
run "block 4096" 4096 "$tmp/out"
cmp -s "$tmp/in" "$tmp/out.kmod" || fail "block 4096: the copy differs from its input"
[ "$(delta runs_plan "$p0")" = 1 ] || fail "block 4096: the plan's path ran $(delta runs_plan "$p0") times, not once"
[ "$(delta runs_copy_block "$b0")" = 0 ] || fail "block 4096: the stock path ran instead of the plan's"

p0=$(cat $P/runs_plan)
run "block 1000" 1000 "$tmp/out"
[ "$(delta runs_plan "$p0")" = 0 ] || fail "block 1000: the plan's guard took a block of 1000 bytes"
[ "$(delta runs_copy "$g0")" = 1 ] || fail "block 1000: the generic path did not run it"

p0=$(cat $P/runs_plan)
[ -e /dev/full ] || fail "no /dev/full"
run "block 4096 to /dev/full" 4096 /dev/full
[ "$rk" = 1 ] && grep -q "No space" "$tmp/err.kmod" || fail "/dev/full: no ENOSPC reported: $(cat "$tmp/err.kmod")"
[ "$(delta runs_plan "$p0")" = 1 ] || fail "/dev/full: the plan's path did not run"

/progs/loop > "$tmp/loop.out" 2>&1 || { sed 's/^/    /' "$tmp/loop.out" | head -20; fail "libmulticall's loop test on the generated module"; }
echo "note: kmod-gen: the plan's copy loop ran through the generated module's path ($(cat $P/runs_plan) runs during the test), the same as direct"
rm -rf "$tmp"
rmmod multicall || fail "cannot unload the generated module"
insmod /multicall.ko || { echo "FAIL: cannot load the stock module back"; exit 1; }
echo "a module generated from a plan ran the plan's cluster as direct does"
