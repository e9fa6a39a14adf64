/* nocfi: a raw system call in assembly without unwind information (no
 * FDE covers it), after a C function that has one — as all of Go's code in
 * a cgo program.  The runtime must find it. */
long nocfi_fn(long x)
{
    return x * 3 + 1;
}

__asm__(".text\n"
        ".balign 16\n"
        ".globl nocfi_getpid\n"
        "nocfi_getpid:\n"
        "  movl $39, %eax\n"
        "  syscall\n"
        "  ret\n");
