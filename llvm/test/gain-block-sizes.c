// Blocks above 4 KiB are priced by mc-calibrate's copy-block.file: the
// fused copy's saving measured at each block size (Inputs/calibration-blocks.json:
// 3.6 us at 8192 B, 3.7 us at 16384 B), interpolated between two sizes,
// and only the two crossings (2 x 0.2 us) above the largest size measured.
// 100 us first context + 4.6 us probes pay from ceil(104.6 / 3.6) = 30
// blocks of 8 KiB and ceil(104.6 / 3.7) = 29 of 16 KiB.
// RUN: %make-plan %s --count 40 > %t.plan
// RUN: %make-plan %s --count 29 > %t.29.plan
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ACC8
// ACC8: became one looped multi-call {{.*}}; estimated saving 39.4 us per run like the recorded one: 40 reads at gain-block-sizes.c:[[#LINE:]] in the profile x 3.6 us saved per block of 8192 B - 100.0 us first context (an auto context: costs_ns.first_context, this calibration has no first_fusion_context) - 4.6 us probes (saving measured at 8192 B by copy-block.file, {{.*}}calibration-blocks.json); a run with fewer than 30 blocks
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR8
// IR8: call i64 @__syscluster_write_read_loop({{.*}}, i64 8192, i64 %{{.*}}, i64 30)
// RUN: %clang-sc -DBLOCK=16384 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ACC16
// ACC16: became one looped multi-call {{.*}} x 3.7 us saved per block of 16384 B - 100.0 us first context (an auto context: costs_ns.first_context, this calibration has no first_fusion_context) - 4.6 us probes (saving measured at 16384 B by copy-block.file, {{.*}}); a run with fewer than 29 blocks
// RUN: %clang-sc -DBLOCK=16384 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR16
// IR16: call i64 @__syscluster_write_read_loop({{.*}}, i64 16384, i64 %{{.*}}, i64 29)
//
// One block short of the break-even: left as written.
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.29.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: is left as it is: no gain: estimated -0.2 us per run: 29 reads at {{.*}} x 3.6 us saved per block of 8192 B {{.*}}(saving measured at 8192 B by copy-block.file, {{.*}}); it pays from 30 blocks
//
// A host where the fused copy saves 0.3 us per block at 8 and 16 KiB: the
// same 40 blocks do not pay (349 needed), at either size.
// RUN: sed 's/2400.0/5700.0/; s/6100.0/9500.0/' %S/Inputs/calibration-blocks.json > %t.slow.json
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%t.slow.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=REF8
// REF8: is left as it is: no gain: estimated -92.6 us per run: 40 reads at {{.*}} x 0.3 us saved per block of 8192 B {{.*}}(saving measured at 8192 B by copy-block.file, {{.*}}slow.json); it pays from 349 blocks
// RUN: %clang-sc -DBLOCK=16384 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%t.slow.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=REF16
// REF16: is left as it is: no gain: estimated -92.6 us per run: 40 reads at {{.*}} x 0.3 us saved per block of 16384 B {{.*}}(saving measured at 16384 B by copy-block.file, {{.*}}slow.json); it pays from 349 blocks
// RUN: %clang-sc -DBLOCK=16384 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%t.slow.json -S -emit-llvm %s -o - | FileCheck %s --check-prefix=NOIR
// NOIR-NOT: __syscluster_write_read_loop
//
// Between two sizes measured: linear (12288 B: 7.9 - 4.25 = 3.65 us).
// RUN: %clang-sc -DBLOCK=12288 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=MID
// MID: became one looped multi-call {{.*}} x 3.6 us saved per block of 12288 B {{.*}}(saving interpolated between 8192 B and 16384 B of copy-block.file, {{.*}}); a run with fewer than 29 blocks
// A size not measured (null) is left out: 8192 B between 4096 and 16384 B
// (5533.3 - 2633.3 ns = 2.9 us).
// RUN: sed 's/"direct_ns": \[3400.0, 6000.0/"direct_ns": [3400.0, null/' %S/Inputs/calibration-blocks.json > %t.null.json
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%t.null.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NULL
// NULL: became one looped multi-call {{.*}} x 2.9 us saved per block of 8192 B {{.*}}(saving interpolated between 4096 B and 16384 B of copy-block.file, {{.*}}null.json)
// Above the largest size measured (65536 B, where it saves 4 us): no
// measurement, so only the two crossings (0.4 us; 262 blocks).
// RUN: %clang-sc -DBLOCK=131072 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%S/Inputs/calibration-blocks.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEYOND
// BEYOND: is left as it is: no gain: {{.*}} x 0.4 us saved per block of 131072 B {{.*}}(saving its two crossings: copy-block.file measures blocks up to 65536 B, {{.*}}); it pays from 262 blocks
// A calibration from an older mc-calibrate (no copy-block.file: the lit
// calibration.json) still loads, and credits 8 KiB only its two crossings.
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OLD
// OLD: is left as it is: no gain: {{.*}} x 0.4 us saved per block of 8192 B {{.*}}(saving its two crossings: this calibration measures no block above 4096 B (copy-loop.file; a newer mc-calibrate measures copy-block.file), {{.*}}calibration.json); it pays from 262 blocks
// A corrupt calibration: the one-line error it gave before copy-block.file
// (not JSON), and one for a copy-block.file out of order; nothing changes.
// RUN: head -c 300 %S/Inputs/calibration-blocks.json > %t.cut.json
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%t.cut.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=CUT
// CUT: is left as it is: no gain known: this host's calibration cannot be read (calibration {{.*}}cut.json: not JSON: {{.*}}), so whether the multi-call is faster is unknown
// RUN: sed 's/"block_bytes": \[4096, 8192/"block_bytes": [8192, 4096/' %S/Inputs/calibration-blocks.json > %t.order.json
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%t.order.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: is left as it is: no gain known: this host's calibration cannot be read (calibration {{.*}}order.json: copy-block.file's block_bytes are not whole numbers of bytes in ascending order), so
// RUN: sed 's/"fusion_ns": \[900.0, 2400.0/"fusion_ns": [900.0, "fast"/' %S/Inputs/calibration-blocks.json > %t.str.json
// RUN: %clang-sc -DBLOCK=8192 -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-calibration=%t.str.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=STR
// STR: no gain known: this host's calibration cannot be read (calibration {{.*}}str.json: copy-block.file's direct_ns and fusion_ns are not positive numbers or null), so
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    int inp = open(argv[1], O_RDONLY), out = creat(argv[2], 0666), n;
    char buff[BLOCK];

    while ((n = read(inp, &buff, BLOCK)) > 0) // sc: read
        write(out, &buff, n);                 // sc: write
    return 0;
}
