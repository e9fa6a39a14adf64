/* datatext: a table in .text, outside every FDE, whose bytes include those
 * of `syscall` and `int $0x80` — as OpenSSL's libcrypto has (precomputed
 * curve points between its assembly functions).  Decoded like code from the
 * function before it, the bytes fall into step with the candidates; they
 * are data, and the runtime must not take them for raw system calls. */
long datatext_fn(long x)
{
    return x * 3 + 1; /* a function with an FDE just before the table */
}

__asm__(".text\n"
        ".balign 64\n"
        ".globl datatext_table\n"
        "datatext_table:\n"
        /* Length-decodable as instructions (the old walk reached 0f 05 and
         * cd 80 through them), but no user program can run 06, 60, d6, e4
         * or f4 in 64-bit mode. */
        ".byte 0x06, 0x60, 0x17, 0xd6, 0x27, 0x91, 0x0f, 0x05, 0x33, 0x10\n"
        ".byte 0xe4, 0x12, 0x48, 0x89, 0xc1, 0xf4, 0x2f, 0xcd, 0x80, 0x44\n"
        ".quad 0x050f3fce9a61d4a5, 0x80cd0f1e07a6ea37, 0x050f00000000e4f4\n");
