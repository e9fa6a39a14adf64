#!/usr/bin/env bash
# Plans: clusters applied at this program's own call sites.
# test/planned.c finds the return addresses of its sites and prints the
# plan the supervisor would pass; each mode's checks must hold plain and
# planned, and the -v report must show the sites were applied.  Then: a
# pending offset outlives SIGKILL; modules matched by path or build-id;
# sites beyond the library's table reported.
. "$(dirname "$0")/common.sh"
. test/plan.sh
for mode in clock pid write seek dlopen; do
  arg=; [ "$mode" = write ] || [ "$mode" = seek ] && arg="$W/p$mode"
  plain_out=$("$T/planned" $mode $arg 2>&1); s1=$?
  plan_out=$(pl "$T/planned" $mode $arg 2>"$W/plan.err"); s2=$?
  case $mode in
    clock) applied=$(at_least "$(answered gtod "$W/plan.err")" 2000 && at_least "$(answered cgt "$W/plan.err")" 2000 &&
                     at_least "$(answered time "$W/plan.err")" 2000 && echo y) ;;
    pid) applied=$(at_least "$(answered getpid "$W/plan.err")" 1000 && at_least "$(answered gettid "$W/plan.err")" 1000 &&
                   at_least "$(answered libc-getpid "$W/plan.err")" 1000 && echo y) ;;
    write) applied=$(grep -q 'deferred=19996 ' "$W/plan.err" && echo y) ;; # the planned writes but the first 4, none of the others
    seek) applied=$(at_least "$(answered seek "$W/plan.err")" 1000 && at_least "$(answered read "$W/plan.err")" 1000 && echo y) ;;
    dlopen) applied=$(at_least "$(answered plugin-gtod "$W/plan.err")" 2000 && echo y) ;;
  esac
  if [ "$s1" = 0 ] && [ "$s2" = 0 ] && [ "$applied" = y ]; then
    ok "plan $mode: $(echo "$plan_out" | grep -c '^ok') checks hold planned as plain, sites applied"
  else
    bad "plan $mode: plain $s1, planned $s2, applied '$applied'"; echo "$plain_out$plan_out" | grep -v '^ok'; grep plan "$W/plan.err"
  fi
done
# A pending offset outlives SIGKILL (the guardian sets it), and is set within the time bound.
r1=$("$T/planned" seekkill "$W/pk"); r2=$(SYSCLUSTER_FLUSH_MS=60000 pl "$T/planned" seekkill "$W/pk" 2>/dev/null)
r3=$(pl "$T/planned" seekkill "$W/pk" 2>/dev/null)
if [ "$r1" = "before 20064 after 20064" ] && [ "$r2" = "before 0 after 20064" ] && [ "$r3" = "before 20064 after 20064" ]; then
  ok "plan seek: a SIGKILLed child's pending offset reaches the description it shares (and within 5 ms without the kill)"
else bad "plan seekkill: plain '$r1', pending '$r2', time bound '$r3'"; fi
# The module found by path when the plan has no build-id; not found with another build-id.
PLAN=$(printf '%s\n' "$PLAN" | awk -F'\t' 'BEGIN { OFS = "\t" } $1 == "module" { $3 = "-" } { print }')
pl "$T/planned" clock >/dev/null 2>"$W/plan.err"; n1=$(answered gtod "$W/plan.err")
PLAN=$(printf '%s\n' "$PLAN" | awk -F'\t' 'BEGIN { OFS = "\t" } $1 == "module" { $3 = "00112233445566778899" } { print }')
pl "$T/planned" clock >/dev/null 2>"$W/plan.err"; n2=$(answered gtod "$W/plan.err")
if at_least "$n1" 2000 && [ -z "$n2" ]; then ok "plan: a module without build-id matched by path; another build-id matches nothing"
else bad "plan module matching: by path '$n1', other build-id '$n2'"; fi
PLAN=$("$T/planned" spec)
# More sites than the library holds: the rest are named, not silently dropped.
msg=$(env LD_PRELOAD="$LIB" SYSCLUSTER_PLAN="$(printf '%s\n' "$PLAN"; for i in $(seq 600); do printf 'site\tclock\t0\t%x\t96\t0\t9\tx:%d\n' $((4096 + i)) "$i"; done)" true 2>&1)
if echo "$msg" | grep -q "the plan has $(( $(printf '%s\n' "$PLAN" | grep -c '^site') + 600 - 512 )) sites this runtime cannot hold"; then ok "plan: sites beyond the library's table are reported"
else bad "plan: too many sites: '$msg'"; fi
t_finish
