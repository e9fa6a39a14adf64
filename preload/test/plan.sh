# Sourced by the plan tests (plan.test.sh, plan-enospc.test.sh): the plan
# of test/planned.c's own sites and running under it.
PLAN=$("$T/planned" spec)
pl() { env LD_PRELOAD="$LIB" SYSCLUSTER_PLAN="$PLAN" SYSCLUSTER_VERBOSE=1 "$@"; }
answered() { # answered SITE REPORT: how many calls at SITE the runtime answered
  sed -n "s/.*plan cluster #[0-9]* at $1: [0-9]* calls, \([0-9]*\) .*/\1/p" "$2" | head -1
}
at_least() { [ "${1:-0}" -ge "$2" ] 2>/dev/null; }
