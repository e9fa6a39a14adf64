/* rawflip: a library whose one function holds a raw `syscall` (built with
 * -DRAW) or a two-byte nop in its place.  Built both ways without a
 * build-id (preload/Makefile), the two files are the same size and differ
 * in those two bytes only: test/scancache.c writes one over the other in
 * place, restores the modification time, and checks that the scan cache
 * does not take the new bytes for the old. */
long rawflip(long n)
{
#ifdef RAW
    __asm__ volatile("syscall" : "+a"(n) : : "rcx", "r11", "memory");
#else
    __asm__ volatile(".byte 0x66, 0x90" : "+a"(n) : : "rcx", "r11", "memory");
#endif
    return n;
}
