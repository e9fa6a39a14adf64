#!/usr/bin/env bash
# The preload library's tests (make -C preload test): runs every
# test/NAME.test.sh, or the NAMEs given, one after another, and prints one
# line per test with its time.
#   O=build SC=.../syscluster test/run-tests.sh [-v] [NAME...]
# -v (or V=1) prints each test's own lines (its checks) too; a failed test's
# are always printed.
#
# A test is one executable file, test/NAME.test.sh: a short description
# header, `. "$(dirname "$0")/common.sh"`, its checks (ok/bad), then
# `t_finish`.  Its exit status is liburing's: 0 pass, 1 fail, 77 skip.  To
# add one, write that file (chmod +x; the C programs it drives go in
# test/NAME.c, built by the Makefile as $T/NAME) -- nothing to register.
#
# A test skips (77) only for a capability this machine lacks, naming it on
# a line "SKIP CAP: why" (t_need, tests/lib/require.sh).  The skip is a
# failure where CAP is required (named in SYSCLUSTER_REQUIRE, or CI=true,
# where every capability is), and so is a skip that names none.
# Exit status: 0 when every test passed or skipped, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
. ../tests/lib/require.sh
verbose=${V:-}
[ "${1:-}" = -v ] && { verbose=1; shift; }
TIMEOUT=${SC_TEST_TIMEOUT:-600}
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  for t in test/*.test.sh; do tests+=("$(basename "$t" .test.sh)"); done
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pass=0 fail=0 skip=0 failed=() start_all=$(date +%s%N)
for t in "${tests[@]}"; do
  t=$(basename "$t" .test.sh) # test/NAME.test.sh given as a path
  [ -x "test/$t.test.sh" ] || { fail=$((fail + 1)); failed+=("$t"); echo "FAIL $t: no executable test/$t.test.sh"; continue; }
  start=$(date +%s%N)
  timeout "$TIMEOUT" "test/$t.test.sh" > "$out" 2>&1
  rc=$?
  tenths=$((($(date +%s%N) - start) / 100000000))
  secs="$((tenths / 10)).$((tenths % 10))s"
  case $rc in
  0) if ! grep -q '^ok' "$out"; then # a pass that checked nothing
       fail=$((fail + 1)); failed+=("$t"); printf 'FAIL %-20s %6s  passed, but no check ran\n' "$t" "$secs"
       sed 's/^/    /' "$out"; continue
     fi
     pass=$((pass + 1)); printf 'PASS %-20s %6s  %s\n' "$t" "$secs" "$(grep -c '^ok' "$out") checks"
     [ -z "$verbose" ] || sed 's/^/    /' "$out" ;;
  77) why=$(grep -m1 '^SKIP [^ :]*:' "$out" | sed 's/^SKIP //'); cap=${why%%:*}
      if [ -z "$why" ] || t_required "$cap" || [ "${CI:-}" = true ]; then
        fail=$((fail + 1)); failed+=("$t")
        printf 'FAIL %-20s %6s  skipped, but %s\n' "$t" "$secs" "${why:-it named no capability}$([ -n "$why" ] && echo ' (required here)')"
        sed 's/^/    /' "$out"
      else
        skip=$((skip + 1)); printf 'SKIP %-20s %6s  %s\n' "$t" "$secs" "$why"
      fi ;;
  *) fail=$((fail + 1)); failed+=("$t")
     printf 'FAIL %-20s %6s  (exit %d%s)\n' "$t" "$secs" "$rc" "$([ $rc = 124 ] && echo ', timed out')"
     sed 's/^/    /' "$out" ;;
  esac
done
tenths=$((($(date +%s%N) - start_all) / 100000000))
echo "preload tests: $pass passed, $skip skipped, $fail failed in $((tenths / 10)).$((tenths % 10))s"
[ $fail -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
exit 0
