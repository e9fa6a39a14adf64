# Tests that fail closed, for shell tests (sourced); tests/lib/require.h is
# the same for C, docs/TESTING.md the convention.
#
# Exit codes as liburing's tests: 0 pass, 1 fail, 77 skip.  A test skips
# only for a capability this machine lacks, and names it ("SKIP CAP: why");
# where the capability is required -- named in SYSCLUSTER_REQUIRE
# (comma-separated) or CI=true, where every capability is -- it fails
# instead ("FAIL CAP required: why").
T_EXIT_PASS=0 T_EXIT_FAIL=1 T_EXIT_SKIP=77

# t_required CAP: is CAP named in SYSCLUSTER_REQUIRE?
t_required() {
  case ",${SYSCLUSTER_REQUIRE:-}," in *",$1,"*) return 0 ;; esac
  return 1
}

# t_need CAP WHY...: CAP is missing; skip, or fail where it is required.
t_need() {
  local cap=$1; shift
  if t_required "$cap" || [ "${CI:-}" = true ]; then
    echo "FAIL $cap required: $*"
    exit "$T_EXIT_FAIL"
  fi
  echo "SKIP $cap: $*"
  exit "$T_EXIT_SKIP"
}

# t_lacks CAP WHY...: a part of the test needs CAP, which is missing: that
# part is left out with a SKIP line and the test goes on, or the test fails
# where CAP is required (as t_need).
t_lacks() {
  local cap=$1; shift
  if t_required "$cap" || [ "${CI:-}" = true ]; then
    echo "FAIL $cap required: $*"
    exit "$T_EXIT_FAIL"
  fi
  echo "SKIP $cap: $*"
}
