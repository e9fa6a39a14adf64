#!/usr/bin/env bash
# cgroup.kill (issue 9 item 4) takes program and guardian together: the
# records on disk are a prefix, none torn, at most one buffer (8192
# records) short of what was acknowledged; each run killed while deferring.
. "$(dirname "$0")/common.sh"
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
cg=$cg2/syscluster-rt-$$
[ "$(id -u)" = 0 ] && [ -n "$cg2" ] && mkdir "$cg" 2>/dev/null && [ -e "$cg/cgroup.kill" ] ||
  { rmdir "$cg" 2>/dev/null; t_need cgroup-kill "needs root and a cgroup2 mount with cgroup.kill"; }
trap 'for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.02; done; rm -rf "$W"' EXIT
n=0; worst=0; held=0
for i in $(seq 10); do
  ack_fresh
  sh -c "echo \$\$ > '$cg/cgroup.procs' && LD_PRELOAD='$LIB' SYSCLUSTER_COALESCE=4096 exec '$T/ackwriter' '$W/ack.out' '$W/ack'" & p=$!
  sleep "0.0$((RANDOM % 9 + 1))"
  ack_deferring && held=$((held + 1))
  echo 1 > "$cg/cgroup.kill"; wait "$p" 2>/dev/null
  ack_within_bound || n=$((n + 1))
done
if [ "$n" = 0 ] && [ "$held" = 10 ]; then ok "cgroup.kill: records a prefix, at most $worst acknowledged lost (bound 8192; 10 runs, each killed deferring)"
else bad "cgroup.kill: $n of 10 runs beyond the bound, $held of 10 killed while deferring"; fi
t_finish
