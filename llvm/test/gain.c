// Never a slower program (issue 12, Must 7): the looped multi-call pays
// once for the program's first context and the probes, and saves a little
// per block.  The calibration of the host (lit.cfg.py: 100 us first
// context, 4.6 us probes, 2.5 us saved per block: 42 blocks to break even)
// and the profile's reads at the loop decide; the remark says which way.
// RUN: %make-plan %s --count 41 > %t.short.plan
// RUN: %make-plan %s --count 42 > %t.long.plan
// Fewer reads than break-even in the profile: left as it is.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.short.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: %clang-sc -mllvm -syscluster-plan=%t.short.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=UNCHANGED
// SHORT: gain.c:39:9: remark: plan cluster #1 (copy-offload): the loop of write at gain.c:39 -> read at gain.c:38 is left as it is: no gain: estimated -2.1 us per run: 41 reads at gain.c:38 in the profile x 2.5 us saved per block of 4096 B - 100.0 us first context (an auto context: costs_ns.first_context, this calibration has no first_fusion_context) - 4.6 us probes ({{.*}}calibration.json); it pays from 42 blocks [-Rpass-missed=syscluster]
// UNCHANGED-NOT: __syscluster_write_read_loop
// At break-even: replaced, and the rebuilt program runs the loop as written when fewer than 42 blocks are left.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.long.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=LONG
// RUN: %clang-sc -mllvm -syscluster-plan=%t.long.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// LONG: remark: plan cluster #1 (copy-offload): the loop of write at gain.c:{{[0-9]+}} -> read at gain.c:{{[0-9]+}} became one looped multi-call {{.*}}; estimated saving 0.4 us per run like the recorded one: 42 reads at {{.*}}; a run with fewer than 42 blocks left to copy (or not between two regular files) runs the loop as written [-Rpass=syscluster]
// IR: call i64 @__syscluster_write_read_loop({{.*}}, i64 4096, i64 %{{.*}}, i64 42)
// For a host with the kernel module: replaced whatever the count, no gate.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.short.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ASSUME
// RUN: %clang-sc -mllvm -syscluster-plan=%t.short.plan -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=ASSUME-IR
// ASSUME: became one looped multi-call {{.*}}; compiled without a gain estimate (-syscluster-assume-gain
// ASSUME-IR: call i64 @__syscluster_write_read_loop({{.*}}, i64 4096, i64 %{{.*}}, i64 0)
// No calibration of the host: whether it gains is unknown, so nothing changes.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.long.plan -mllvm -syscluster-calibration=%t.missing %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOCAL
// NOCAL: is left as it is: no gain known: this host's calibration cannot be read (calibration {{.*}}.missing: cannot read: {{.*}}(run `syscluster calibrate` on the host the program is for)), so whether the multi-call is faster is unknown [-Rpass-missed=syscluster]
// A calibration where the fused loop is no faster: never.
// RUN: sed 's/900.0/3400.0/g' %S/calibration.json > %t.flat.json
// RUN: %clang-sc -mllvm -syscluster-plan=%t.long.plan -mllvm -syscluster-calibration=%t.flat.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FLAT
// FLAT: is left as it is: no gain: on this host the looped multi-call copies a block no faster than read+write (3.4 us against 3.4 us, {{.*}}flat.json)
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
