#!/usr/bin/env bash
# The runtime's differential fuzzer, longer than in `make test`:
#   bench/runtime/fuzz.sh [SEEDS [FIRST [OPS]]]     default 1000 seeds from 1000, 600 ops
# Builds the runtime and its tests, then runs preload/test/fuzz.sh (each
# seed plain and under the runtime, every file and the output compared).
set -eu
cd "$(dirname "$0")/../.."
SEEDS=${1:-1000} FIRST=${2:-1000} OPS=${3:-600}
make -s -C preload build/libsyscluster-preload.so build/test/fuzz
exec preload/test/fuzz.sh preload/build/libsyscluster-preload.so preload/build/test/fuzz "$FIRST" "$SEEDS" "$OPS"
