/* decoder: the runtime's x86-64 length decoder walks a binary's .text the
 * way objdump does.
 *   decoder FILE          prints the offset of every instruction start
 *   decoder FILE count    prints the number of syscall instructions
 * test/decoder.test.sh compares both with objdump on several binaries. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/x86len.c"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return 77;
    const uint8_t *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    const Elf64_Ehdr *eh = (const void *)m;
    const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
    const char *names = (const char *)m + sh[eh->e_shstrndx].sh_offset;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (strcmp(names + sh[i].sh_name, ".text") != 0)
            continue;
        const uint8_t *p = m + sh[i].sh_offset, *end = p + sh[i].sh_size;
        long syscalls = 0, bad = 0;
        while (p < end) {
            long op = 0, n = sc_x86_insn(p, end, &op);
            if (argc == 2)
                printf("%lx\n", (unsigned long)(sh[i].sh_addr + (uint64_t)(p - (m + sh[i].sh_offset))));
            if (n <= 0) {
                bad++;
                n = 1;
            } else if (p[op] == 0x0f && p[op + 1] == 0x05) {
                syscalls++;
            }
            p += n;
        }
        if (argc > 2)
            printf("%ld\n", syscalls);
        fprintf(stderr, "decoder: %s: %ld undecodable bytes\n", argv[1], bad);
        return 0;
    }
    return 77;
}
