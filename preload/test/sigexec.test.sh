#!/usr/bin/env bash
# Signal dispositions: the program and its children see what it set
# (test/sigexec.c: SIG_IGN of SIGSEGV/SIGBUS kept across exec,
# posix_spawn, system, popen; glibc's 32 refused as plain), and it starts
# with the ignored signals it was given -- while the library has taken
# the signals over (its handlers in SigCgt), or these compare a program
# with itself.
. "$(dirname "$0")/common.sh"
"$T/sigexec" > "$W/sig1" 2>&1; rt "$T/sigexec" > "$W/sig2" 2>&1
if [ "$(grep -c ignores "$W/sig1")" = 6 ] && cmp -s "$W/sig1" "$W/sig2"; then
  ok "signals: SIG_IGN of SIGSEGV/SIGBUS kept across exec, posix_spawn, system, popen; glibc's 32 refused as plain"
else bad "signals across exec: $(diff "$W/sig1" "$W/sig2" | tr '\n' ' ')"; fi
plain=$(grep '^SigCgt' /proc/self/status); ours=$(rt grep '^SigCgt' /proc/self/status)
if [ "$plain" = "$ours" ]; then bad "signals: the library did not take the signals over ($ours)"
elif [ "$(grep '^SigIgn' /proc/self/status)" = "$(rt grep '^SigIgn' /proc/self/status)" ]; then ok "signals: the program starts with the ignored signals it was given (the library's handlers: ${ours#*:	})"
else bad "signals: the runtime changes the ignored signals at start"; fi
t_finish
