// The saving per block is measured for 4096-byte blocks (mc-calibrate's
// copy-loop.file); a 512-byte block saves its two crossings and an eighth
// of the rest: 2 x 0.2 + (2.5 - 0.4) x 512/4096 = 0.66 us, so a first
// context of 100 us and 4.6 us of probes pay from 158 blocks, not 42.
// RUN: %make-plan %s --count 157 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// CHECK: is left as it is: no gain: estimated -0.6 us per run: 157 reads at gain-small-block.c:19 in the profile x 0.7 us saved per block of 512 B - 100.0 us first context (an auto context: costs_ns.first_context, this calibration has no first_fusion_context) - 4.6 us probes (saving scaled from copy-loop.file's 4096 B, {{.*}}); it pays from 158 blocks
// RUN: %make-plan %s --count 158 > %t.158.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.158.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// IR: call i64 @__syscluster_write_read_loop({{.*}}, i64 512, i64 %{{.*}}, i64 158)
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    int inp = open(argv[1], O_RDONLY), out = creat(argv[2], 0666), n;
    char buff[512];

    while ((n = read(inp, &buff, 512)) > 0) // sc: read
        write(out, &buff, n);               // sc: write
    return 0;
}
