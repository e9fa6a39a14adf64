// A calibration measuring only 4096 B blocks (copy-loop.file, as an older mc-calibrate
// wrote): a larger block is credited only its two crossings (2 x 0.2 us), 100 us + 4.6 us
// pay from 262 blocks; with copy-block.file it is priced by its size (gain-block-sizes.c).
// RUN: %make-plan %s --count 261 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// CHECK: is left as it is: no gain: estimated -0.2 us per run: 261 reads at gain-large-block.c:18 in the profile x 0.4 us saved per block of 16384 B - 100.0 us first context (an auto context: costs_ns.first_context, this calibration has no first_fusion_context) - 4.6 us probes (saving its two crossings: this calibration measures no block above 4096 B {{.*}}); it pays from 262 blocks
// RUN: %make-plan %s --count 262 > %t.262.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.262.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// IR: call i64 @__syscluster_write_read_loop({{.*}}, i64 16384, i64 %{{.*}}, i64 262)
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    int inp = open(argv[1], O_RDONLY), out = creat(argv[2], 0666), n;
    char buff[16384];

    while ((n = read(inp, &buff, 16384)) > 0) // sc: read
        write(out, &buff, n);               // sc: write
    return 0;
}
