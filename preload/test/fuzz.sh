#!/usr/bin/env bash
# The differential fuzzer's driver: runs preload/test/fuzz.c for each seed
# plain and under the runtime (LD_PRELOAD with SYSCLUSTER_COALESCE, as
# fuzz.test.sh does) and compares the output and every file byte for byte.
#   fuzz.sh LIB FUZZBIN FIRST_SEED COUNT [OPS]
# Prints one line per seed that differs (and the first difference), then a
# summary; exits 1 if any seed differed, 2 on bad arguments.
# $SC_PRELOAD_FIRST, when set, goes before LIB in LD_PRELOAD (the
# sanitizers' run-time library for a sanitized LIB: test/asan.sh).
set -u
if [ $# -lt 4 ] || [ ! -f "$1" ] || [ ! -x "$2" ]; then
  echo "usage: fuzz.sh LIB FUZZBIN FIRST_SEED COUNT [OPS]" >&2
  exit 2
fi
LIB=$1 BIN=$2 FIRST=$3 COUNT=$4 OPS=${5:-400}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
differ=0
for ((seed = FIRST; seed < FIRST + COUNT; seed++)); do
  rm -rf "$W/a" "$W/b"; mkdir "$W/a" "$W/b"
  "$BIN" "$W/a" "$seed" "$OPS" > "$W/a.out" 2>&1; s1=$?
  env LD_PRELOAD="${SC_PRELOAD_FIRST:+$SC_PRELOAD_FIRST:}$LIB" SYSCLUSTER_COALESCE=4096 "$BIN" "$W/b" "$seed" "$OPS" > "$W/b.out" 2>&1; s2=$?
  what=
  [ "$s1" = "$s2" ] || what="exit status $s1 vs $s2"
  [ -n "$what" ] || cmp -s "$W/a.out" "$W/b.out" || what="output: $(diff "$W/a.out" "$W/b.out" | head -3 | tr '\n' ' ')"
  if [ -z "$what" ]; then
    for f in "$W"/a/*; do
      n=$(basename "$f")
      if ! cmp -s "$f" "$W/b/$n"; then what="file $n: $(cmp "$f" "$W/b/$n" 2>&1 | head -1)"; break; fi
    done
  fi
  if [ -n "$what" ]; then
    differ=$((differ + 1))
    echo "seed $seed differs: $what"
  fi
done
echo "fuzz: $differ of $COUNT seeds differ (seeds $FIRST..$((FIRST + COUNT - 1)), $OPS operations each)"
[ "$differ" = 0 ]
