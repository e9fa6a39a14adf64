#!/usr/bin/env bash
# The programs exec starts: a static one (built here) at the end of a
# chain of scripts as deep as the kernel follows is reported (the
# supervisor follows as many), behind 3 and 5 scripts.
. "$(dirname "$0")/common.sh"
printf '#include <unistd.h>\nint main(void) { return write(1, "static\\n", 7) != 7; }\n' > "$W/static.c"
if gcc -static -o "$W/static" "$W/static.c" 2>/dev/null; then
  prev=$W/static
  for i in 1 2 3 4 5; do printf '#!%s\n' "$prev" > "$W/chain$i"; chmod +x "$W/chain$i"; prev=$W/chain$i; done
  n=0
  for i in 3 5; do
    msg=$(rt sh -c "exec '$W/chain$i'" 2>&1)
    echo "$msg" | grep -q "static is statically linked" && echo "$msg" | grep -q '^static$' && n=$((n + 1))
  done
  if [ "$n" = 2 ]; then ok "exec: a static program behind 3 and 5 scripts is reported"; else bad "exec through scripts: $msg"; fi
else
  bad "exec through scripts: gcc -static failed (libc6-dev provides libc.a)"
fi
t_finish
