#!/usr/bin/env bash
# Corpus programs plain against `syscluster run`, with `syscluster verify
# --run`: stdout, stderr, exit status and files compared byte for byte in
# scratch copies, and the runtime acted: the candidate's crossings (its
# supervisor's included) at most a tenth of the original's.
. "$(dirname "$0")/common.sh"
[ -x "$CORPUS/write8" ] || t_need corpus "the corpus is not built (make -C tests/corpus)"
[ -x "$SC" ] || t_need corpus "no syscluster binary at $SC (cargo build --release, or SC=)"
for c in "write8 out 100000" "threads . 4 50000" "forkexec out 50000"; do
  name=${c%% *}
  # shellcheck disable=SC2086 # the program's arguments
  if vrun "$name" --run -- "$CORPUS/$name" ${c#* } && read -r a b < <(crossings "$name") && [ "$b" -lt $((a / 10)) ]; then
    ok "corpus $name (syscluster verify --run: same bytes, crossings $a -> $b)"
  else bad "corpus $name: $(cat "$W/$name.verify")"; fi
done
t_finish
