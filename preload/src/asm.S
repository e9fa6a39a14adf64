/* Small pieces that must be written in assembly and call nothing: the
 * fault-safe copy and the signal restorer (a leaf: the wrappers that jump
 * to libc are in wrap_jump.S). */
    .text

/* long sc_copy_user(void *dst, const void *src, size_t n)
 * Copies the caller's buffer; a fault on it (the program passed a bad
 * pointer to write) resumes at sc_copy_fixup, which returns -EFAULT.  See
 * the trampoline in signals.c. */
    .globl sc_copy_user
    .hidden sc_copy_user
    .type sc_copy_user, @function
    .globl sc_copy_start, sc_copy_end, sc_copy_fixup
    .hidden sc_copy_start, sc_copy_end, sc_copy_fixup
sc_copy_user:
    .cfi_startproc
sc_copy_start:
    cmpq $256, %rdx
    ja 4f
1:  cmpq $8, %rdx
    jb 2f
    movq (%rsi), %rax
    movq %rax, (%rdi)
    addq $8, %rsi
    addq $8, %rdi
    subq $8, %rdx
    jmp 1b
2:  testq %rdx, %rdx
    jz 3f
    movb (%rsi), %al
    movb %al, (%rdi)
    incq %rsi
    incq %rdi
    decq %rdx
    jmp 2b
4:  movq %rdx, %rcx
    rep movsb
3:
sc_copy_end:
    xorl %eax, %eax
    ret
sc_copy_fixup:
    movq $-14, %rax
    ret
    .cfi_endproc
    .size sc_copy_user, .-sc_copy_user

/* The sa_restorer for signal actions installed with raw rt_sigaction. */
    .globl sc_restorer
    .hidden sc_restorer
    .type sc_restorer, @function
sc_restorer:
    movq $15, %rax          /* rt_sigreturn */
    syscall
    .size sc_restorer, .-sc_restorer

    .section .note.GNU-stack,"",@progbits
