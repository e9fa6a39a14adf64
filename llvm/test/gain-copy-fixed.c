// Every call of the fused copy pays a fixed cost its blocks do not save
// (the gate, the probes, the engine's read taken back, the pread refilling
// the buffer): mc-calibrate's costs_ns.fused_copy_fixed, which the pass
// charges where the calibration has it, else the probes' calls.  80 KiB at
// 8 KiB blocks, 10 blocks saving 3.6 us each (6.0 - 2.4 us,
// Inputs/calibration-fusion.json): a 30 us fusion context + 4.6 us probes
// pay from ceil(34.6 / 3.6) = 10 blocks, so the loop is replaced; with a
// 12 us fixed cost (Inputs/calibration-copy-fixed.json), from
// ceil(42.0 / 3.6) = 12, so it is left as written.
// RUN: %make-plan %s --count 10 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-copy-fixed.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIXED
// FIXED: is left as it is: no gain: estimated -6.0 us per run: 10 reads at gain-copy-fixed.c:34 in the profile x 3.6 us saved per block of 8192 B - 30.0 us first context (a fusion context: costs_ns.first_fusion_context) - 12.0 us fixed cost (costs_ns.fused_copy_fixed: the gate, the probes, the read taken back, the buffer refilled) (saving measured at 8192 B by copy-block.file, {{.*}}calibration-copy-fixed.json); it pays from 12 blocks
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-copy-fixed.json -S -emit-llvm %s -o - | FileCheck %s --check-prefix=FIXEDIR
// FIXEDIR-NOT: @__syscluster_write_read_loop
//
// A calibration from an mc-calibrate before fused_copy_fixed: the probes'
// calls only, and the same loop is replaced.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-fusion.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OLD
// OLD: became one looped multi-call {{.*}}; estimated saving 1.4 us per run like the recorded one: 10 reads at gain-copy-fixed.c:34 in the profile x 3.6 us saved per block of 8192 B - 30.0 us first context (a fusion context: costs_ns.first_fusion_context) - 4.6 us probes (saving measured at 8192 B by copy-block.file, {{.*}}calibration-fusion.json); a run with fewer than 10 blocks left to copy
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-fusion.json -S -emit-llvm %s -o - | FileCheck %s --check-prefix=OLDIR
// OLDIR: call i64 @__syscluster_write_read_loop({{.*}}, i64 8192, i64 %{{.*}}, i64 10)
//
// A fused_copy_fixed below 0: the one-line error, nothing replaced.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-copy-fixed-negative.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: is left as it is: no gain known: this host's calibration cannot be read (calibration {{.*}}calibration-copy-fixed-negative.json: costs_ns.fused_copy_fixed is not a number of nanoseconds (0 or more)), so
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    int inp = open(argv[1], O_RDONLY), out = creat(argv[2], 0666), n;
    char buff[8192];

    while ((n = read(inp, &buff, 8192)) > 0) // sc: read
        write(out, &buff, n);                // sc: write
    return 0;
}
