; The write's count is the previous read's result only if the read that
; enters the loop was tested > 0: a loop entered without that test (here an
; unconditional branch: the first write would get a count of 0 or a masked
; -1) stays as it is.  IR written by hand, as clang never emits it.
; RUN: %make-plan %s --calls read,write > %t.plan
; RUN: %opt-sc -syscluster-plan=%t.plan -pass-remarks=syscluster -pass-remarks-missed=syscluster -S %s -o %t.ll 2>&1 | FileCheck %s
; RUN: FileCheck %s --check-prefix=IR < %t.ll

; CHECK: untested-entry.c:3:5: plan cluster #1 (copy-offload): the loop of write at untested-entry.c:3 -> read at untested-entry.c:2 became one looped multi-call
; CHECK: untested-entry.c:8:5: plan cluster #2 (copy-offload): the loop of write at untested-entry.c:8 -> read at untested-entry.c:7 is left as it is: argument safety: the loop's first write count is not a read's result tested > 0 before the loop

; IR-LABEL: define void @tested(
; IR: call i64 @__syscluster_write_read_loop(
; IR-LABEL: define void @untested(
; IR-NOT: __syscluster_write_read_loop
; IR: call i64 @write(

; Markers for make-plan.py (lines of the C the IR pretends to come from):
; line 2: // sc: read tested
; line 3: // sc: write tested
; line 7: // sc: read untested
; line 8: // sc: write untested

define void @tested(i32 %in, i32 %out, ptr %buf) !dbg !5 {
pre:
  %r0 = call i64 @read(i32 %in, ptr %buf, i64 4096), !dbg !8
  %t0 = trunc i64 %r0 to i32
  %c0 = icmp sgt i32 %t0, 0
  br i1 %c0, label %loop, label %exit
loop:
  %p = phi i64 [ %r0, %pre ], [ %r, %loop ]
  %n = and i64 %p, 2147483647
  %w = call i64 @write(i32 %out, ptr %buf, i64 %n), !dbg !9
  %r = call i64 @read(i32 %in, ptr %buf, i64 4096), !dbg !8
  %t = trunc i64 %r to i32
  %c = icmp sgt i32 %t, 0
  br i1 %c, label %loop, label %exit
exit:
  ret void
}

define void @untested(i32 %in, i32 %out, ptr %buf) !dbg !10 {
pre:
  %r0 = call i64 @read(i32 %in, ptr %buf, i64 4096), !dbg !11
  br label %loop
loop:
  %p = phi i64 [ %r0, %pre ], [ %r, %loop ]
  %n = and i64 %p, 2147483647
  %w = call i64 @write(i32 %out, ptr %buf, i64 %n), !dbg !12
  %r = call i64 @read(i32 %in, ptr %buf, i64 4096), !dbg !11
  %t = trunc i64 %r to i32
  %c = icmp sgt i32 %t, 0
  br i1 %c, label %loop, label %exit
exit:
  ret void
}

declare i64 @read(i32, ptr, i64)
declare i64 @write(i32, ptr, i64)

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "untested-entry.c", directory: "/build")
!2 = !DISubroutineType(types: !{})
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 5}
!5 = distinct !DISubprogram(name: "tested", scope: !1, file: !1, line: 1, type: !2, unit: !0, spFlags: DISPFlagDefinition)
!8 = !DILocation(line: 2, column: 5, scope: !5)
!9 = !DILocation(line: 3, column: 5, scope: !5)
!10 = distinct !DISubprogram(name: "untested", scope: !1, file: !1, line: 6, type: !2, unit: !0, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 7, column: 5, scope: !10)
!12 = !DILocation(line: 8, column: 5, scope: !10)
