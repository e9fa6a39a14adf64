; The fortified read (__read_chk: glibc's read for _FORTIFY_SOURCE when the
; count is not known to fit the buffer) is the read system call to the pass;
; its check passes only when the buffer's size it carries is at least the
; count, so the copy loop becomes a looped multi-call only then.  (clang 19
; with glibc 2.36 does not emit __read_chk for read(): glibc's inline
; wrapper calls `read` itself through an asm label and clang drops it, so
; the plain call stays — copy-loop.c's FORTIFY run; gcc emits it.  IR
; written by hand, as gcc would give it to a tool built on LLVM.)
; RUN: %make-plan %s --calls read,write > %t.plan
; RUN: %opt-sc -syscluster-plan=%t.plan -pass-remarks=syscluster -pass-remarks-missed=syscluster -pass-remarks-analysis=syscluster -S %s -o %t.ll 2>&1 | FileCheck %s
; RUN: FileCheck %s --check-prefix=IR < %t.ll

; CHECK: fortified.c:2:5: plan cluster #1 (copy-offload): read at fortified.c:2 matched
; CHECK: fortified.c:3:5: plan cluster #1 (copy-offload): the loop of write at fortified.c:3 -> read at fortified.c:2 became one looped multi-call
; CHECK: fortified.c:7:5: plan cluster #2 (copy-offload): read at fortified.c:7 matched
; CHECK: fortified.c:8:5: plan cluster #2 (copy-offload): the loop of write at fortified.c:8 -> read at fortified.c:7 is left as it is: safety: the fortified read's check (__read_chk) is not proved to pass

; IR-LABEL: define void @fits(
; IR: call i64 @__syscluster_write_read_loop(
; IR-LABEL: define void @too_small(
; IR-NOT: __syscluster_write_read_loop
; IR: call i64 @__read_chk(i32 %in, ptr %buf, i64 4096, i64 2048)

; Markers for make-plan.py (lines of the C the IR pretends to come from):
; line 2: // sc: read fits
; line 3: // sc: write fits
; line 7: // sc: read too_small
; line 8: // sc: write too_small

define void @fits(i32 %in, i32 %out, ptr %buf) !dbg !5 {
pre:
  %r0 = call i64 @__read_chk(i32 %in, ptr %buf, i64 4096, i64 4096), !dbg !8
  %t0 = trunc i64 %r0 to i32
  %c0 = icmp sgt i32 %t0, 0
  br i1 %c0, label %loop, label %exit
loop:
  %p = phi i64 [ %r0, %pre ], [ %r, %loop ]
  %n = and i64 %p, 2147483647
  %w = call i64 @write(i32 %out, ptr %buf, i64 %n), !dbg !9
  %r = call i64 @__read_chk(i32 %in, ptr %buf, i64 4096, i64 4096), !dbg !8
  %t = trunc i64 %r to i32
  %c = icmp sgt i32 %t, 0
  br i1 %c, label %loop, label %exit
exit:
  ret void
}

; The same with a buffer of 2048 bytes declared to the check: __read_chk
; would abort the program on the first read; the loop stays.
define void @too_small(i32 %in, i32 %out, ptr %buf) !dbg !10 {
pre:
  %r0 = call i64 @__read_chk(i32 %in, ptr %buf, i64 4096, i64 2048), !dbg !11
  %t0 = trunc i64 %r0 to i32
  %c0 = icmp sgt i32 %t0, 0
  br i1 %c0, label %loop, label %exit
loop:
  %p = phi i64 [ %r0, %pre ], [ %r, %loop ]
  %n = and i64 %p, 2147483647
  %w = call i64 @write(i32 %out, ptr %buf, i64 %n), !dbg !12
  %r = call i64 @__read_chk(i32 %in, ptr %buf, i64 4096, i64 2048), !dbg !11
  %t = trunc i64 %r to i32
  %c = icmp sgt i32 %t, 0
  br i1 %c, label %loop, label %exit
exit:
  ret void
}

declare i64 @__read_chk(i32, ptr, i64, i64)
declare i64 @write(i32, ptr, i64)

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "fortified.c", directory: "/build")
!2 = !DISubroutineType(types: !{})
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 5}
!5 = distinct !DISubprogram(name: "fits", scope: !1, file: !1, line: 1, type: !2, unit: !0, spFlags: DISPFlagDefinition)
!8 = !DILocation(line: 2, column: 5, scope: !5)
!9 = !DILocation(line: 3, column: 5, scope: !5)
!10 = distinct !DISubprogram(name: "too_small", scope: !1, file: !1, line: 6, type: !2, unit: !0, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 7, column: 5, scope: !10)
!12 = !DILocation(line: 8, column: 5, scope: !10)
