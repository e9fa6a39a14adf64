#!/bin/sh
# The recorder in the guest (kmod-record): `syscluster record` (BPF, events
# mode) of the copy loop of libmulticall/examples/copy-loop.c -- 64 KiB in
# 4 KiB blocks -- run three ways: direct (every call crosses, the raw_syscalls
# tracepoints see them), kmod (the whole loop is one ioctl on /dev/multicall:
# the inner calls pass no syscall entry, only the module's tracepoints
# multicall:mc_enter/mc_exit carry them) and auto from a pipe (which chooses
# the module).  Each profile must count the same reads and writes as the
# direct one, and the ioctl that ran the loop must not stand in their place.
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

rec() { # rec NAME [record args...] -- command...
	name=$1; shift
	syscluster record -q --backend bpf --mode events --node-key name --no-callsites -o "$tmp/$name.json" "$@" ||
		fail "$name: syscluster record exited $?"
	cmp -s "$tmp/in" "$tmp/out" || fail "$name: the copy differs from its input"
	rm -f "$tmp/out"
}

rec direct -- /progs/copy-loop -b direct "$tmp/in" "$tmp/out"
rec kmod -- /progs/copy-loop -b kmod "$tmp/in" "$tmp/out"
cat "$tmp/in" | rec auto -- /progs/copy-loop -b auto /proc/self/fd/0 "$tmp/out"

dr=$(count "$tmp/direct.json" read)
dw=$(count "$tmp/direct.json" write)
[ "$dr" -ge 16 ] && [ "$dw" -ge 16 ] || fail "direct: $dr reads, $dw writes recorded; want at least 16 each"
for b in kmod auto; do
	r=$(count "$tmp/$b.json" read)
	w=$(count "$tmp/$b.json" write)
	i=$(count "$tmp/$b.json" ioctl)
	echo "note: recorded copy loop (64 KiB, 4 KiB blocks): direct $dr reads $dw writes; $b $r reads $w writes $i ioctls (the version check)"
	[ "$r" = "$dr" ] && [ "$w" = "$dw" ] || fail "$b: $r reads, $w writes recorded; direct: $dr, $dw"
	[ "$i" -le 1 ] || fail "$b: $i ioctls recorded: the multi-call's ioctl stands in its calls' place"
done
rm -rf "$tmp"
echo "recorded the inner calls of the module's multi-calls"
