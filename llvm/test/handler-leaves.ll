; The checked copy loop's handler may leave the loop any way it likes, as
; long as no path from it comes back into the loop other than through the
; loop's own entry (CheckedLoop.cpp, resumesLoop).  clang rotates a loop
; whose handler goes back to the read (the way back joins the latch), so
; the shape refused here — the read at the loop's head, the handler going
; back to it when retry() says so — is written by hand.
; RUN: %make-plan %s --calls read,write > %t.plan
; RUN: %opt-sc -syscluster-plan=%t.plan -pass-remarks=syscluster -pass-remarks-missed=syscluster -S %s -o %t.ll 2>&1 | FileCheck %s
; RUN: opt-19 -passes=verify -disable-output %t.ll
; RUN: FileCheck %s --check-prefix=IR < %t.ll

; CHECK: handler-leaves.c:3:5: plan cluster #1 (copy-offload): the loop of read at handler-leaves.c:2 -> write at handler-leaves.c:3 (its write checked) became one looped multi-call
; CHECK: handler-leaves.c:8:5: plan cluster #2 (copy-offload): the loop of read at handler-leaves.c:7 -> write at handler-leaves.c:8 (its write checked) is left as it is: linearity: the write's check leads to code that goes back into the loop (br at handler-leaves.c:9): the loop would go on after the handler, which a looped multi-call cannot leave and resume
; CHECK: handler-leaves.c:13:5: plan cluster #3 (copy-offload): the loop of read at handler-leaves.c:12 -> write at handler-leaves.c:13 (its write checked) became one looped multi-call

; IR-LABEL: define i32 @leaves(
; IR: [[K:%.*]] = call i64 @__syscluster_write_read_loop_checked(
; IR: call void @report()
; IR: phi i32
; IR-NOT: call i64 @write(
; IR-LABEL: define i32 @resumes(
; IR-NOT: __syscluster_write_read_loop
; IR: call i64 @write(
; IR-LABEL: define void @outer(
; IR: call i64 @__syscluster_write_read_loop_checked(
; IR-NOT: call i64 @write(
; IR: ret void

; Markers for make-plan.py (lines of the C the IR pretends to come from):
; line 2: // sc: read leaves
; line 3: // sc: write leaves
; line 7: // sc: read resumes
; line 8: // sc: write resumes
; line 12: // sc: read outer
; line 13: // sc: write outer

; The handler reports and returns 1; the loop's end returns 0.
define i32 @leaves(i32 %in, i32 %out, ptr %buf) !dbg !5 {
pre:
  br label %head
head:
  %r = call i64 @read(i32 %in, ptr %buf, i64 4096), !dbg !8
  %c = icmp sgt i64 %r, 0
  br i1 %c, label %body, label %exit
body:
  %w = call i64 @write(i32 %out, ptr %buf, i64 %r), !dbg !9
  %ok = icmp eq i64 %w, %r
  br i1 %ok, label %head, label %handler
handler:
  call void @report()
  br label %exit
exit:
  %v = phi i32 [ 0, %head ], [ 1, %handler ]
  ret i32 %v
}

; Refused: the handler goes back to the read when retry() says so.
define i32 @resumes(i32 %in, i32 %out, ptr %buf) !dbg !10 {
pre:
  br label %head
head:
  %r = call i64 @read(i32 %in, ptr %buf, i64 4096), !dbg !11
  %c = icmp sgt i64 %r, 0
  br i1 %c, label %body, label %exit
body:
  %w = call i64 @write(i32 %out, ptr %buf, i64 %r), !dbg !12
  %ok = icmp eq i64 %w, %r
  br i1 %ok, label %head, label %handler
handler:
  %again = call i1 @retry()
  br i1 %again, label %head, label %exit, !dbg !13
exit:
  %v = phi i32 [ 0, %head ], [ 1, %handler ]
  ret i32 %v
}

; An outer loop over descriptors: the handler goes to the next one, which
; enters the copy loop again through its entry (a fresh start): accepted.
define void @outer(i32 %out, ptr %buf, i32 %first, i32 %last) !dbg !14 {
entry:
  br label %pre
pre:
  %in = phi i32 [ %first, %entry ], [ %next, %latch ]
  br label %head
head:
  %r = call i64 @read(i32 %in, ptr %buf, i64 4096), !dbg !15
  %c = icmp sgt i64 %r, 0
  br i1 %c, label %body, label %latch
body:
  %w = call i64 @write(i32 %out, ptr %buf, i64 %r), !dbg !16
  %ok = icmp eq i64 %w, %r
  br i1 %ok, label %head, label %handler
handler:
  call void @report()
  br label %latch
latch:
  %next = add i32 %in, 1
  %more = icmp slt i32 %next, %last
  br i1 %more, label %pre, label %done
done:
  ret void
}

declare i64 @read(i32, ptr, i64)
declare i64 @write(i32, ptr, i64)
declare void @report()
declare i1 @retry()

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "handler-leaves.c", directory: "/build")
!2 = !DISubroutineType(types: !{})
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 5}
!5 = distinct !DISubprogram(name: "leaves", scope: !1, file: !1, line: 1, type: !2, unit: !0, spFlags: DISPFlagDefinition)
!8 = !DILocation(line: 2, column: 5, scope: !5)
!9 = !DILocation(line: 3, column: 5, scope: !5)
!10 = distinct !DISubprogram(name: "resumes", scope: !1, file: !1, line: 6, type: !2, unit: !0, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 7, column: 5, scope: !10)
!12 = !DILocation(line: 8, column: 5, scope: !10)
!13 = !DILocation(line: 9, column: 5, scope: !10)
!14 = distinct !DISubprogram(name: "outer", scope: !1, file: !1, line: 11, type: !2, unit: !0, spFlags: DISPFlagDefinition)
!15 = !DILocation(line: 12, column: 5, scope: !14)
!16 = !DILocation(line: 13, column: 5, scope: !14)
