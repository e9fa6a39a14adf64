#!/bin/sh
# The recorder in the guest (kmod-record): `syscluster record` (BPF, events
# and aggregate modes) of the copy loop of libmulticall/examples/copy-loop.c -- 64 KiB in
# 4 KiB blocks -- run three ways: direct (every call crosses, the raw_syscalls
# tracepoints see them), kmod (the whole loop is one ioctl on /dev/multicall:
# the inner calls pass no syscall entry, only the module's tracepoints
# multicall:mc_enter/mc_exit carry them) and auto from a pipe (which chooses
# the module).  Each profile must count the same reads and writes as the
# direct one, and the ioctl that ran the loop must not stand in their place.
# Then the module is unloaded and loaded again during a recording: the
# recorder attaches to it when it appears and says so.
# Fails (exit 1) with a line saying what differs.
fail() { echo "FAIL: $*"; exit 1; }
tmp=${TMPDIR:-/tmp}/kmod-record
rm -rf "$tmp" && mkdir -p "$tmp" || fail "cannot make $tmp"
head -c 65536 /dev/urandom > "$tmp/in" || fail "cannot write the input"

# count PROFILE SYSCALL: the node's count in a profile keyed by name.
count() {
	syscluster report -f json "$1" | awk -v want="\"$2\"" '
		/^  "nodes": \[/ { nodes = 1 }
		/^  \]/ { nodes = 0 }
		nodes && /"syscall":/ { name = $2; sub(/,$/, "", name) }
		/"count":/ && name != "" { c = $2; sub(/,$/, "", c); if (name == want) n += c; name = "" }
		END { print n + 0 }'
}

rec() { # rec MODE NAME [record args...] -- command...
	mode=$1 name=$2; shift 2
	syscluster record -q --backend bpf --mode "$mode" --node-key name --no-callsites -o "$tmp/$name.json" "$@" \
		2> "$tmp/$name.err" || fail "$name: syscluster record exited $?: $(cat "$tmp/$name.err")"
	cmp -s "$tmp/in" "$tmp/out" || fail "$name: the copy differs from its input"
	rm -f "$tmp/out"
}

# same NAME DIRECT: the profile NAME counts the reads and writes of DIRECT,
# and at most one ioctl (the version check), not the multi-call's.
same() {
	r=$(count "$tmp/$1.json" read) w=$(count "$tmp/$1.json" write) i=$(count "$tmp/$1.json" ioctl)
	dr=$(count "$tmp/$2.json" read) dw=$(count "$tmp/$2.json" write)
	[ "$dr" -ge 16 ] && [ "$dw" -ge 16 ] || fail "$2: $dr reads, $dw writes recorded; want at least 16 each"
	echo "note: recorded copy loop (64 KiB, 4 KiB blocks): $2 $dr reads $dw writes; $1 $r reads $w writes $i ioctls (the version check)"
	[ "$r" = "$dr" ] && [ "$w" = "$dw" ] || fail "$1: $r reads, $w writes recorded; $2: $dr, $dw"
	[ "$i" -le 1 ] || fail "$1: $i ioctls recorded: the multi-call's ioctl stands in its calls' place"
}

for mode in events aggregate; do
	rec $mode direct-$mode -- /progs/copy-loop -b direct "$tmp/in" "$tmp/out"
	rec $mode kmod-$mode -- /progs/copy-loop -b kmod "$tmp/in" "$tmp/out"
	cat "$tmp/in" | rec $mode auto-$mode -- /progs/copy-loop -b auto /proc/self/fd/0 "$tmp/out"
	same kmod-$mode direct-$mode
	same auto-$mode direct-$mode
done

# The module loaded during a recording: the recorder notices it and
# attaches (guest/wait-attached.c waits, at most 60 s, until the recorder
# holds a link on multicall:mc_enter, then execs the copy loop), and says so.
restore() { [ -e /sys/module/multicall ] || insmod /multicall.ko; }
rmmod multicall || fail "cannot unload the module"
# Loaded once the recorded command has started (it creates $tmp/started).
(n=0; while [ ! -e "$tmp/started" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done; insmod /multicall.ko) &
rec events late -- /progs/wait-attached "$tmp/started" /progs/copy-loop -b kmod "$tmp/in" "$tmp/out" || { restore; exit 1; }
wait
restore
grep -q "multicall.ko was loaded during the recording: its multi-calls are recorded call by call" "$tmp/late.err" ||
	fail "the recorder did not say it attached to the module loaded during the recording: $(cat "$tmp/late.err")"
same late direct-events
rm -rf "$tmp"
echo "recorded the inner calls of the module's multi-calls (events and aggregate; a module loaded mid-recording)"
