#!/usr/bin/env bash
# The runtime's differential fuzzer, longer than in `make test`:
#   bench/runtime/fuzz.sh [SEEDS [FIRST [OPS]]]     default 1000 seeds from 1000, 600 ops
# Builds the runtime and its tests, then runs runtime/test/fuzz.sh (each
# seed plain and under the runtime, every file and the output compared).
set -eu
cd "$(dirname "$0")/../.."
SEEDS=${1:-1000} FIRST=${2:-1000} OPS=${3:-600}
make -s -C runtime build/libsyscluster-preload.so build/test/fuzz
exec runtime/test/fuzz.sh runtime/build/libsyscluster-preload.so runtime/build/test/fuzz "$FIRST" "$SEEDS" "$OPS"
