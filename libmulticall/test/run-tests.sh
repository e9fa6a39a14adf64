#!/usr/bin/env bash
# Runs every libmulticall test program on every backend (each program
# compares direct, fusion, uring and auto itself), once per calibration of
# auto: the built-in choices, a file that enables every rule and io_uring
# (eager), and one that enables none (never).  Then checks the ABI: the
# exported symbols are the symbol map's, each has a man page, no object
# has a constructor.
#   test/run-tests.sh BUILD_DIR [TEST...]
# Exit status: 0 when everything passed or skipped, 1 otherwise.  A
# skipped test (exit 77) names the capability it lacked ("SKIP CAP: why",
# tests/lib/require.h); where that capability is required
# (SYSCLUSTER_REQUIRE, or CI=true) the skip is a failure, and so is a skip
# that names none.
set -u
B=${1:?usage: run-tests.sh BUILD_DIR [TEST...]}
shift
cd "$(dirname "$0")/.." || exit 1
. ../tests/lib/require.sh
export MC_BUILD=$B
TIMEOUT=${MC_TEST_TIMEOUT:-300}

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	for t in test/*.c; do
		n=$(basename "$t" .c)
		[ "$n" = harness ] || tests+=("$n")
	done
fi

work=$(mktemp -d /tmp/mc-run-tests.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$B/mc-calibrate" --decisions=eager -o "$work/eager.json" >/dev/null || { echo "FAIL mc-calibrate --decisions=eager"; exit 1; }
"$B/mc-calibrate" --decisions=never -o "$work/never.json" >/dev/null || { echo "FAIL mc-calibrate --decisions=never"; exit 1; }
configs=("none" "$work/eager.json" "$work/never.json")
names=("builtin" "eager" "never")
# A sanitized build (make test-asan) runs each program once, with every rule
# and io_uring enabled (eager): the most code for its time.
if [ "${MC_SANITIZED:-}" = 1 ]; then configs=("$work/eager.json"); names=("eager"); fi

pass=0 fail=0 skip=0
failed=()
for t in "${tests[@]}"; do
	for i in "${!configs[@]}"; do
		out="$work/$t.${names[$i]}.out"
		start=$(date +%s%N)
		MULTICALL_CALIBRATION=${configs[$i]} timeout "$TIMEOUT" "$B/test/$t" >"$out" 2>&1
		rc=$?
		tenths=$((($(date +%s%N) - start) / 100000000))
		secs="$((tenths / 10)).$((tenths % 10))"
		case $rc in
		0) pass=$((pass + 1)); printf 'PASS %-12s auto=%-7s %5ss\n' "$t" "${names[$i]}" "$secs" ;;
		77) why=$(grep -m1 '^SKIP [^ :]*:' "$out" | sed 's/^SKIP //'); cap=${why%%:*}
		    if [ -z "$why" ] || t_required "$cap" || [ "${CI:-}" = true ]; then
			    fail=$((fail + 1)); failed+=("$t/${names[$i]}")
			    printf 'FAIL %-12s auto=%-7s skipped, but %s\n' "$t" "${names[$i]}" "${why:-named no capability}$([ -n "$why" ] && echo ' (required here)')"
		    else
			    skip=$((skip + 1)); printf 'SKIP %-12s auto=%-7s %s\n' "$t" "${names[$i]}" "$why"
		    fi ;;
		*) fail=$((fail + 1)); failed+=("$t/${names[$i]}")
		   printf 'FAIL %-12s auto=%-7s (exit %d%s)\n' "$t" "${names[$i]}" "$rc" "$([ $rc = 124 ] && echo ', timed out')"
		   head -n 40 "$out" | sed 's/^/    /' ;;
		esac
		grep -h '^note:' "$out" | sort -u | sed 's/^/    /'
	done
done

# The examples: the seed's copy program, per iteration (fig. 3) and looped
# (§3.4), on every backend, at block sizes and file sizes around a block.
# A uring backend that cannot start here is left out, and said so, unless
# uring is required (SYSCLUSTER_REQUIRE, CI=true): then it fails.
ex_ok=1 ex_nouring=
for size in 0 1 4095 4096 4097 300000; do
	head -c $size /dev/urandom >"$work/in"
	for e in copy copy-loop; do
		for b in auto direct fusion uring; do
			for bs in 512 4096 3000; do
				rm -f "$work/out"
				if ! "$B/examples/$e" -b $b -s $bs "$work/in" "$work/out" 2>"$work/err" ||
				   ! cmp -s "$work/in" "$work/out"; then
					if [ "$b" = uring ] && grep -q "^$e: uring backend: " "$work/err" &&
					   ! t_required uring && [ "${CI:-}" != true ]; then
						ex_nouring=$(cat "$work/err"); continue
					fi
					echo "FAIL examples: $e -b $b -s $bs on $size bytes: $(head -c 300 "$work/err")"; ex_ok=0
				fi
			done
		done
	done
done
[ -z "$ex_nouring" ] || echo "    note: examples not run on the uring backend: $ex_nouring"
if [ $ex_ok = 1 ]; then pass=$((pass + 1)); echo "PASS examples"; else fail=$((fail + 1)); failed+=("examples"); fi

# ABI: exported symbols == the map's globals; soname; man pages; constructors.
# Not for a sanitized build (MC_SANITIZED=1, make test-asan): its objects
# have the sanitizers' constructors and symbols.
if [ "${MC_SANITIZED:-}" = 1 ]; then
	echo "libmulticall tests: $pass passed, $skip skipped, $fail failed (sanitized build: ABI checked by the plain build)"
	[ $fail -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
	exit 0
fi
abi_fail() { fail=$((fail + 1)); failed+=("abi"); echo "FAIL abi: $*"; }
exported=$(nm -D --defined-only "$B/libmulticall.so" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort)
mapped=$(sed -n '/global:/,/local:/p' src/libmulticall.map | grep -o 'mc_[a-z_]*' | sort)
[ "$exported" = "$mapped" ] || abi_fail "exported symbols differ from src/libmulticall.map: $(diff <(echo "$exported") <(echo "$mapped") | tr '\n' ' ')"
readelf -d "$B/libmulticall.so" | grep -q 'SONAME.*libmulticall.so.1' || abi_fail "soname is not libmulticall.so.1"
nm -D --defined-only "$B/libmulticall.so" | grep -q ' T mc_run@@LIBMULTICALL_1.0' || abi_fail "mc_run is not versioned LIBMULTICALL_1.0"
for o in "$B"/pic/*.o; do
	if readelf -S "$o" | grep -q 'init_array\|\.ctors'; then abi_fail "$o has a constructor"; fi
done
for s in $mapped; do
	[ -f "man/$s.3" ] || abi_fail "no man page man/$s.3"
done
for m in man/*.3; do
	if ! grep -q '^\.so ' "$m"; then
		for sec in SYNOPSIS 'RETURN VALUE' ERRORS; do
			grep -q "^\.SH \"\?$sec" "$m" || abi_fail "$m has no $sec section"
		done
	fi
	if command -v groff >/dev/null; then
		w=$(cd man && groff -man -Tutf8 -ww -z "$(basename "$m")" 2>&1)
		[ -z "$w" ] || abi_fail "$m: $w"
	fi
done
command -v groff >/dev/null || echo "note: groff missing (groff-base): man pages not linted"
[[ " ${failed[*]} " == *" abi "* ]] || { pass=$((pass + 1)); echo "PASS abi"; }

echo "libmulticall tests: $pass passed, $skip skipped, $fail failed"
[ $fail -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
exit 0
