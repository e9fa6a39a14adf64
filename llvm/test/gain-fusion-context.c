// The first context of a priced copy loop is a fusion context (the runtime
// makes one only between two regular files: llvm/runtime/write_read_loop.c),
// so the pass charges mc-calibrate's first_fusion_context where the
// calibration has it.  80 KiB at 4 KiB blocks, 20 blocks saving 2.5 us each
// (Inputs/calibration-blocks.json): a 30 us fusion context + 4.6 us probes
// pay from ceil(34.6 / 2.5) = 14 blocks; the auto context's 100 us, from
// ceil(104.6 / 2.5) = 42.
// RUN: %make-plan %s --count 20 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-fusion.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUSION
// FUSION: became one looped multi-call {{.*}}; estimated saving 15.4 us per run like the recorded one: 20 reads at gain-fusion-context.c:33 in the profile x 2.5 us saved per block of 4096 B - 30.0 us first context (a fusion context: costs_ns.first_fusion_context) - 4.6 us probes (saving measured at 4096 B by copy-block.file, {{.*}}calibration-fusion.json); a run with fewer than 14 blocks left to copy (or not between two regular files) runs the loop as written
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-fusion.json -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// IR: call i64 @__syscluster_write_read_loop({{.*}}, i64 4096, i64 %{{.*}}, i64 14)
//
// A calibration from an mc-calibrate before first_fusion_context: the auto
// context's first_context is charged, and the same loop is left as written.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OLD
// OLD: is left as it is: no gain: estimated -54.6 us per run: 20 reads at gain-fusion-context.c:33 in the profile x 2.5 us saved per block of 4096 B - 100.0 us first context (an auto context: costs_ns.first_context, this calibration has no first_fusion_context) - 4.6 us probes (saving measured at 4096 B by copy-block.file, {{.*}}calibration-blocks.json); it pays from 42 blocks
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json -S -emit-llvm %s -o - | FileCheck %s --check-prefix=OLDIR
// OLDIR-NOT: @__syscluster_write_read_loop
//
// A first_fusion_context that is no positive number: the one-line error,
// nothing replaced.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-fusion-negative.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: is left as it is: no gain known: this host's calibration cannot be read (calibration {{.*}}calibration-fusion-negative.json: costs_ns.first_fusion_context is not a positive number), so
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    int inp = open(argv[1], O_RDONLY), out = creat(argv[2], 0666), n;
    char buff[4096];

    while ((n = read(inp, &buff, 4096)) > 0) // sc: read
        write(out, &buff, n);                // sc: write
    return 0;
}
