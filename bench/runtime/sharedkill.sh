#!/usr/bin/env bash
# SIGKILL at random points while another process writes the same file,
# through the same open file description and through its own O_APPEND one
# (preload/test/sharedkill.c; issue 9 items 3 and 4).  `make test` runs 150
# rounds per mode; this runs as many as asked (default 1000), for the rare
# interleavings.
#   bench/runtime/sharedkill.sh [ROUNDS]     (from the repository root)
set -u
cd "$(dirname "$0")/../.." || exit 1
make -s -C preload build/test/sharedkill >/dev/null || exit 1
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
rc=0
for mode in same append; do
  if out=$(preload/build/test/sharedkill "$PWD/preload/build/libsyscluster-preload.so" $mode "${1:-1000}" "$w" 2>&1); then
    echo "ok   $mode description: $(echo "$out" | tail -1)"
  else
    echo "FAIL $mode description:"; echo "$out" | tail -5; rc=1
  fi
done
exit $rc
