/* The wrappers that must be written in assembly, because they end by
 * jumping to libc's function with the caller's frame untouched: vfork and
 * the stdio functions (stdio_list.h).  Each calls its C half first
 * (wrap_proc.c, wrap_stdio.c). */
    .text

/* vfork cannot be wrapped by a C function: the child returns through the
 * parent's frame.  Write everything out first, then jump to libc's vfork
 * with the caller's return address still on the stack. */
    .globl vfork
    .type vfork, @function
    .globl __vfork
    .type __vfork, @function
vfork:
__vfork:
    .cfi_startproc
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call sc_vfork_prepare
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size vfork, .-vfork


/* The stdio wrappers: save the argument registers (and %al, the count of
 * vector registers a variadic call uses), call sc_pre_NAME, restore, jump
 * to the real NAME. */
    .text
.macro STUB name
    .globl \name
    .type \name, @function
\name:
    .cfi_startproc
    pushq %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    subq $208, %rsp
    movq %rdi, 0(%rsp)
    movq %rsi, 8(%rsp)
    movq %rdx, 16(%rsp)
    movq %rcx, 24(%rsp)
    movq %r8, 32(%rsp)
    movq %r9, 40(%rsp)
    movq %rax, 48(%rsp)
    movdqu %xmm0, 64(%rsp)
    movdqu %xmm1, 80(%rsp)
    movdqu %xmm2, 96(%rsp)
    movdqu %xmm3, 112(%rsp)
    movdqu %xmm4, 128(%rsp)
    movdqu %xmm5, 144(%rsp)
    movdqu %xmm6, 160(%rsp)
    movdqu %xmm7, 176(%rsp)
    call sc_pre_\name
    movq %rax, %r11
    movq 0(%rsp), %rdi
    movq 8(%rsp), %rsi
    movq 16(%rsp), %rdx
    movq 24(%rsp), %rcx
    movq 32(%rsp), %r8
    movq 40(%rsp), %r9
    movq 48(%rsp), %rax
    movdqu 64(%rsp), %xmm0
    movdqu 80(%rsp), %xmm1
    movdqu 96(%rsp), %xmm2
    movdqu 112(%rsp), %xmm3
    movdqu 128(%rsp), %xmm4
    movdqu 144(%rsp), %xmm5
    movdqu 160(%rsp), %xmm6
    movdqu 176(%rsp), %xmm7
    leave
    .cfi_def_cfa %rsp, 8
    jmp *%r11
    .cfi_endproc
    .size \name, .-\name
.endm

#define W(name, kind, arg) STUB name;
#include "stdio_list.h"

    .section .note.GNU-stack,"",@progbits
